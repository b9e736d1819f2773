"""Where the builds are cached (${DRALAB_CACHE:-~/.cache/dralab}) and the lock that keeps two builds of one thing apart."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path


def cache_root() -> Path:
    return Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab")


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive flock(2) on `path` (created, with its folder, if missing), held for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
