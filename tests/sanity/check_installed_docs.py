"""Install the built collection tarball into a scratch path and render every doc.

Fails when ansible-doc cannot render a module, a filter, a lookup, a strategy or a role's argument
spec from the installed collection (not from the checkout), or prints a warning.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
# Warnings ansible-core prints about itself, whatever collection is documented: ansible-core 2.21's role docs list
# the collections, and its own internal one (ansible._protomatter) has no MANIFEST.json.
CORE_WARNINGS = ("/ansible/_internal/ansible_collections/ansible/_protomatter' does not have a MANIFEST.json",)


def names(kind: str) -> list[str]:
    if kind == "role":
        return sorted(p.parent.parent.name for p in REPO.glob("roles/*/meta/argument_specs.yml"))
    folder = {"module": "plugins/modules", "filter": "plugins/filter", "lookup": "plugins/lookup",
              "strategy": "plugins/strategy"}[kind]
    return sorted(p.stem for p in (REPO / folder).glob("*.py") if not p.stem.startswith("_"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tarball", help="dralab-workshop-X.Y.Z.tar.gz from ansible-galaxy collection build")
    args = parser.parse_args()
    bindir = pathlib.Path(sys.executable).parent
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        # Only the installed copy: no ansible.cfg from the checkout, no collections/ link.
        empty_cfg = pathlib.Path(scratch, "ansible.cfg")
        empty_cfg.write_text("[defaults]\n")
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=scratch, ANSIBLE_CONFIG=str(empty_cfg),
                   ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
        subprocess.run([str(bindir / "ansible-galaxy"), "collection", "install", "--offline", "--no-deps", "--force",
                        "-p", scratch, args.tarball], check=True, stdout=subprocess.DEVNULL, env=env, cwd=scratch)
        checked = 0
        for kind in ("module", "filter", "lookup", "strategy", "role"):
            for name in names(kind):
                fqcn = "dralab.workshop." + name
                result = subprocess.run([str(bindir / "ansible-doc"), "-t", kind, fqcn], env=env, cwd=scratch,
                                        capture_output=True, text=True, check=False)
                lines = result.stderr.splitlines()
                stderr = "\n".join(line for line in lines if not any(known in line for known in CORE_WARNINGS))
                problem = result.returncode != 0 or "WARNING" in stderr or "ERROR" in stderr
                if kind == "role":
                    problem = problem or "ENTRY POINT: *main*" not in result.stdout.replace("ENTRY POINT: main", "ENTRY POINT: *main*")
                if problem:
                    failures.append("%s %s: rc=%s %s" % (kind, fqcn, result.returncode, result.stderr.strip()[:500]))
                checked += 1
    for failure in failures:
        print("FAIL", failure)
    print("%d passed, %d failed" % (checked - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
