"""Run `ansible-test sanity` on a copy of this collection.

ansible-test needs the collection under ansible_collections/NAMESPACE/NAME and
keeps its output (tests/output) inside that tree, so the checkout is copied to
a scratch tree outside the repository first. Sanity tests build virtualenvs
and bootstrap pip with a get-pip script from Ansible's CI file host, which is
not reachable here; a stand-in that uses ensurepip + the package index is
written to ansible-test's cache path instead.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
EXCLUDED_TOP = {"collections", "tests/output", ".ci"}

GET_PIP_STANDIN = '''\
"""Stand-in for get-pip.py written by dralab.workshop tests/sanity/run_sanity.py.

Installs pip with ensurepip, then the requested packages from the package index.
"""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True,
               stdout=subprocess.DEVNULL)
if args:
    subprocess.run([sys.executable, "-m", "pip", "install"] + args, check=True)
'''


def pip_bootstrap_version() -> str:
    from ansible_test._internal.python_requirements import get_venv_packages  # noqa: PLC0415

    class _Python:
        version = "%d.%d" % sys.version_info[:2]

    return get_venv_packages(_Python())["pip"]


def write_get_pip_standin() -> None:
    version = pip_bootstrap_version().replace(".", "_")
    path = pathlib.Path.home() / ".ansible" / "test" / "cache" / f"get_pip_{version}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != GET_PIP_STANDIN:
        path.write_text(GET_PIP_STANDIN)


def collection_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                         cwd=REPO, check=True, capture_output=True).stdout.decode()
    files = []
    for name in filter(None, out.split("\0")):
        if any(name == top or name.startswith(top + "/") for top in EXCLUDED_TOP):
            continue
        if (REPO / name).is_file():
            files.append(name)
    return files


def copy_tree(root: pathlib.Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for name in collection_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="scratch path ending in ansible_collections/dralab/workshop")
    parser.add_argument("--python-bin", default=sys.executable, help="Python whose ansible-test runs")
    parser.add_argument("tests", nargs="*", help="only these sanity tests (default: all)")
    args = parser.parse_args()

    root = pathlib.Path(args.root).expanduser()
    if root.parts[-3:-2] != ("ansible_collections",):
        parser.error("--root must end in ansible_collections/NAMESPACE/NAME")
    write_get_pip_standin()
    copy_tree(root)
    python_version = "%d.%d" % sys.version_info[:2]
    command = [str(pathlib.Path(args.python_bin).parent / "ansible-test"), "sanity", "--color", "no",
               "--python", python_version]
    for test in args.tests:
        command += ["--test", test]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(root.parents[2]))
    return subprocess.run(command, cwd=root, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
