"""Build the wheel of the lab's node programs (can-has-gpu, dralab-lease-reaper, dralab-board) and its dependencies.

The wheel is built from a staged copy of exactly what pyproject.toml packages
(pyproject.toml, tools/can_has_gpu, tools/dralab_board, plugins/module_utils), so the checkout
stays clean. `make mirror` (dralab_build/mirror) puts the wheel, its dependencies
(binary wheels for the nodes' Python), its build backend (a node that installs it from
source with a package index builds it) and pip into the mirror's files/wheels/;
the integration tests install the same wheel to run the real entry points.

Examples:
    python -m dralab_build.wheels build OUT_DIR          # the tool's wheel only
    python -m dralab_build.wheels mirror OUT_DIR         # + dependencies + pip, for the nodes' Pythons (x86_64)
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGED = ("pyproject.toml", "tools/can_has_gpu", "tools/dralab_board", "plugins/module_utils")
DIST_NAME = "dralab_can_has_gpu"
# Python of the lab nodes: Debian 12 (3.11) and Debian 13 (3.13). The mirror carries wheels for both.
NODE_PYTHONS = ("3.11", "3.13")
# Wheel tags the nodes accept (Debian 12 and 13, Ubuntu 22.04/24.04: glibc >= 2.35, x86_64).
PLATFORMS = ("manylinux_2_35_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "linux_x86_64")


def source_digest() -> str:
    """sha256 over the packaged files (what a rebuild depends on)."""
    digest = hashlib.sha256()
    for top in PACKAGED:
        path = REPO / top
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
        for file in files:
            digest.update(file.relative_to(REPO).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def build_requires() -> list[str]:
    """What pyproject.toml's [build-system] requires, the one place it is written."""
    with (REPO / "pyproject.toml").open("rb") as source:
        return list(tomllib.load(source)["build-system"]["requires"])


def stage(dest: Path) -> Path:
    for top in PACKAGED:
        src = REPO / top
        if src.is_file():
            shutil.copy2(src, dest / top)
        else:
            shutil.copytree(src, dest / top, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def build_tool_wheel(out_dir: Path, python: str = sys.executable) -> Path:
    """Build dralab_can_has_gpu-<version>-py3-none-any.whl into out_dir; returns its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{DIST_NAME}-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="dralab-wheel-") as tmp:
        src = stage(Path(tmp))
        # setuptools of this venv (requirements-dev.txt): no download to build.
        subprocess.run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                        "--wheel-dir", str(out_dir), str(src)], check=True)
    wheels = sorted(out_dir.glob(f"{DIST_NAME}-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one {DIST_NAME} wheel in {out_dir}, found {wheels}")
    return wheels[0]


def download_dependencies(wheel: Path, out_dir: Path, python_versions: tuple[str, ...] = NODE_PYTHONS,
                          python: str = sys.executable, extra: tuple[str, ...] = ("pip",)) -> None:
    """Binary wheels of the wheel's dependencies (and `extra`) for each of the nodes' Pythons, into out_dir."""
    for version in python_versions:
        cmd = [python, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(out_dir),
               "--python-version", version, "--implementation", "cp"]
        for platform in PLATFORMS:
            cmd += ["--platform", platform]
        subprocess.run(cmd + [str(wheel), *extra], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m dralab_build.wheels", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("what", choices=("build", "mirror"))
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    wheel = build_tool_wheel(args.out_dir)
    if args.what == "mirror":
        download_dependencies(wheel, args.out_dir)
    for path in sorted(args.out_dir.glob("*.whl")):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
