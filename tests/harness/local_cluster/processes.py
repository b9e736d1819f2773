"""The local control plane's processes: free ports, whether a recorded process still runs, its log; ClusterError."""

from __future__ import annotations

import signal
import socket
import sys
from pathlib import Path


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


class ClusterError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_start_time(pid: int) -> str | None:
    """Kernel start time of `pid` (to tell our process from a later one with the same pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":  # exited, waiting for its parent to reap it
        return None
    return fields[19]


def alive(entry: dict) -> bool:
    return proc_start_time(entry["pid"]) == entry["start_time"]


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def die_with_parent() -> None:
    """In the child before exec: ask Linux to kill it when the parent dies (the data
    is throw-away; a graceful stop of the API server hangs once etcd is gone)."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
