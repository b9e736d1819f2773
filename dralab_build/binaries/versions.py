"""Which version each group of components builds, and where its binaries are cached (the cache keys).

    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/<name>

<version> is the wrapper module's version (a role's default for the groups of ROLE_VERSIONS, with the
inventory-like overrides of set_role_overrides), plus +dralab.<edits_hash> for a group with SOURCE_EDITS.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from dralab_build import role_vars
from dralab_build.binaries.components import ROLE_VERSIONS, Component
from dralab_build.binaries.source_edits import edits_hash
from dralab_build.cache import cache_root

GOMOD_DIR = Path(__file__).resolve().parent / "gomod"


# Role variables as an inventory would set them (set_role_overrides, --set, --vars).
_role_vars = role_vars.RoleVars()


def set_role_overrides(overrides: dict) -> None:
    """Read role variables with these inventory-like overrides (NAME -> value)."""
    global _role_vars
    _role_vars = role_vars.RoleVars(overrides)


def group_module(group: str) -> tuple[str, str]:
    """(module path, version) that the wrapper module of `group` requires."""
    if group in ROLE_VERSIONS:
        module, role, var = ROLE_VERSIONS[group]
        try:
            return module, "v" + _role_vars.str(role, var).lstrip("v")
        except (KeyError, role_vars.VarError) as exc:
            raise SystemExit(f"{group}: cannot read {var} from roles/{role}/defaults/main.yml: {exc}") from None
    text = (GOMOD_DIR / group / "go.mod").read_text()
    m = re.search(r"^require\s+(\S+)\s+(v\S+)", text, re.M)
    if not m:
        raise SystemExit(f"{GOMOD_DIR / group / 'go.mod'}: no single-line `require MODULE VERSION`")
    return m.group(1), m.group(2)


def build_version(group: str) -> str:
    """The cache key of a group's builds: the module version, plus the hash of its SOURCE_EDITS when patched."""
    version = group_module(group)[1]
    patch = edits_hash(group)
    return f"{version}+dralab.{patch}" if patch else version


def component_version(comp: Component) -> str:
    return build_version(comp.group)


def binary_path(comp: Component, root: Path | None = None) -> Path:
    """The binary, or for a bundle the folder of binaries."""
    root = root or cache_root()
    folder = root / "bin" / f"{comp.name}-{component_version(comp)}"
    return folder if comp.bundle else folder / comp.name


# kwok needs Stage objects (what to do with nodes and pods); kwokctl normally
# writes its defaults. We take the same upstream defaults from the module
# (the "fast" stages and the lease heartbeat) and write them next to the binary.
KWOK_STAGES = [
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
]


def extra_files(comp: Component) -> list[Path]:
    return [binary_path(comp).parent / "stages.yaml"] if comp.name == "kwok" else []


def is_complete(comp: Component) -> bool:
    """The binary (renamed into place only after a successful build) and its extra files."""
    target = binary_path(comp)
    if comp.bundle:
        return (target / ".complete").is_file()
    return (target.is_file() and os.access(target, os.X_OK)
            and all(p.is_file() for p in extra_files(comp)))
