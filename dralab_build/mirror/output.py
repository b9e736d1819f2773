"""Writing the mirror's outputs: atomically (a temporary name, then a rename), hard links of cached binaries,
reproducible tarballs; running the tools that make them; MirrorError."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path


def log(msg: str) -> None:
    print(f"[mirror] {msg}", file=sys.stderr, flush=True)


class MirrorError(Exception):
    pass


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def write_atomic(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(path)
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def place(src: Path, dest: Path, mode: int = 0o755) -> None:
    """Put a copy of src at dest (a hard link when possible: the binaries are never modified)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(dest)
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, mode)
    os.replace(tmp, dest)
    tmp.unlink(missing_ok=True)  # rename() does nothing when both names are links to the same file


def write_tarball(dest: Path, members: list[tuple[str, Path]], dirs: list[str] = ()) -> None:
    """A .tar.gz of (name in archive, file) entries, root-owned, modes 0755/0644 as in the releases."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(dest)
    mtime = int(max(member[1].stat().st_mtime for member in members))
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name, src in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = src.stat().st_size, mtime
            info.mode = 0o755 if os.access(src, os.X_OK) else 0o644
            with open(src, "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, dest)


def copy_tree(src: Path, dest: Path) -> None:
    """A writable copy of a folder from the (read-only) Go module cache."""
    shutil.copytree(src, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def run(cmd: list, logf=None, **kwargs) -> subprocess.CompletedProcess:
    cmd = [str(c) for c in cmd]
    if logf:
        logf.write(f"$ {' '.join(cmd)}\n")
        logf.flush()
    proc = subprocess.run(cmd, stdout=logf or subprocess.PIPE, stderr=subprocess.STDOUT if logf else subprocess.PIPE,
                          text=True, check=False, **kwargs)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout or "").strip()[-2000:] if not logf else f"see {logf.name}"
        raise MirrorError(f"`{' '.join(cmd[:4])} ...` failed with exit code {proc.returncode}: {detail}")
    return proc
