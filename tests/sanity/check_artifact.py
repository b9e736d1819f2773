"""Check the built collection artifact: what is in it, what is not, and its size.

Fails when the tarball holds the test suite, the harness, the build tooling, caches or a fetched lab
inventory (galaxy.yml's build_ignore keeps them out), or lacks what the roles read from the collection
itself (docs/demos, tools/ and pyproject.toml for can-has-gpu's source install, requirements files).
Prints the size, the number of files and the share of each top-level folder.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys
import tarfile

KEPT_OUT = ("tests/", "benchmarks/", "molecule/", "dralab_build/", "collections/", "dist/", "inventories/local/",
            ".cache/", ".venv/", ".git/", ".ci/", "changelogs/fragments/", "Makefile", "requirements-dev.txt")
NEEDED = ("MANIFEST.json", "FILES.json", "meta/runtime.yml", "playbooks/site.yml", "docs/demos/",
          "tools/can_has_gpu/", "pyproject.toml", "requirements.txt", "requirements.yml", "README.md")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tarball")
    args = parser.parse_args()
    path = pathlib.Path(args.tarball)
    with tarfile.open(path) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    names = [m.name for m in members]
    problems = [f"{name} is in the artifact" for name in names
                if any(name == out or name.startswith(out) for out in KEPT_OUT) or "__pycache__" in name]
    problems += [f"{need} is missing from the artifact" for need in NEEDED
                 if not any(name == need or name.startswith(need) for name in names)]
    by_top = collections.Counter()
    for member in members:
        by_top[member.name.split("/", 1)[0]] += member.size
    info = manifest["collection_info"]
    print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB compressed, {sum(by_top.values()) / 1024:.0f} KiB "
          f"in {len(members)} files; depends on {', '.join(f'{k} {v}' for k, v in info['dependencies'].items())}")
    for top, size in by_top.most_common():
        print(f"  {top:<24} {size / 1024:8.0f} KiB")
    for problem in problems[:40]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
