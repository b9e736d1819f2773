"""Run a command and write its peak RSS (KiB, it and its descendants) and exit code as JSON to a file.

Usage: python benchmarks/rusage.py OUT.json COMMAND [ARG...]

benchmarks/bench.py starts every timed command through this small process: Linux gives a
process started by fork and exec the peak RSS of its parent at the fork, so a command started
straight from the benchmark (which holds thousands of objects) would report the benchmark's
memory instead of its own.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys


def main(argv: list[str]) -> int:
    out, command = argv[0], argv[1:]
    rc = subprocess.call(command)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"rc": rc, "maxrss_kib": usage.ru_maxrss}, handle)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
