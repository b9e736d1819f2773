"""Read version pins and image names from the roles' defaults, with the Python standard library.

The roles' defaults/main.yml are the single source of truth for what the lab
downloads; the harness reads them instead of keeping a second copy. Only the
simple forms those files use for such values are understood:

    containerd_version: "2.1.5"                                    # a scalar
    kubernetes_version: "{{ dralab_kubernetes_version }}"            # role dralab's default
    cni_flannel_image: "ghcr.io/flannel-io/flannel:v{{ cni_flannel_version }}"
    kubernetes_binaries:                                           # a list of scalars
      - kubeadm

Anything else (folded `>-` blocks, filters other than default) is reported as
not understood when it is asked for. Overrides play the part of inventory
variables: `--set NAME=VALUE`, and files like inventories/local/group_vars/all.yml
(top-level scalars and lists, the same forms).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The role that gives the lab-wide dralab_* settings their defaults (generated from lab_settings.py).
LAB_DEFAULTS_ROLE = "dralab"

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):(?:\s+(.*?))?\s*$")
_ITEM = re.compile(r"^\s+-\s+(.*?)\s*$")
_EXPR = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_DEFAULT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*\|\s*default\(\s*(.*?)\s*(?:,\s*true\s*)?\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class VarError(Exception):
    pass


class _Unsupported:
    """A value in a form this reader does not understand (kept so a lookup can say so)."""

    def __init__(self, where: str):
        self.where = where


def _scalar(text: str):
    text = re.sub(r"\s+#.*$", "", text) if not text.startswith(("'", '"')) else text
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def parse_vars_file(path: Path) -> dict:
    """Top-level scalars and lists of scalars of a YAML variables file."""
    result: dict = {}
    key = None
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#") or line.startswith("---"):
            continue
        m = _KEY.match(line)
        if m:
            key, value = m.group(1), m.group(2)
            if value is None or value == "":
                result[key] = []  # a list (or mapping) follows
            elif value.startswith((">", "|", "{", "[")) and not value.startswith(("{{",)):
                result[key] = _Unsupported(f"{path}:{lineno}")
            else:
                result[key] = _scalar(value)
            continue
        item = _ITEM.match(line)
        if item and key is not None and isinstance(result.get(key), list):
            result[key].append(_scalar(item.group(1)))
        elif key is not None and line.startswith((" ", "\t")) and not isinstance(result.get(key), list):
            result[key] = _Unsupported(f"{path}:{lineno}")
        elif key is not None and isinstance(result.get(key), list):
            result[key] = _Unsupported(f"{path}:{lineno}")  # a mapping or nested structure
    return result


class RoleVars:
    """Role defaults plus overrides, resolved like Ansible would for these simple forms."""

    def __init__(self, overrides: dict | None = None, repo: Path = REPO):
        self.repo = repo
        self.overrides = dict(overrides or {})
        self.used: set[str] = set()  # the override names a lookup consulted
        self._defaults: dict[str, dict] = {}

    def defaults(self, role: str) -> dict:
        if role not in self._defaults:
            path = self.repo / "roles" / role / "defaults" / "main.yml"
            self._defaults[role] = parse_vars_file(path) if path.exists() else {}
        return self._defaults[role]

    def get(self, role: str, name: str, _depth: int = 0):
        """The value of variable `name` as role `role` sees it (overrides first, then its defaults)."""
        if _depth > 20:
            raise VarError(f"{name}: variables refer to each other in a loop")
        if name in self.overrides:
            self.used.add(name)
            value, where = self.overrides[name], "an override"
        elif name in self.defaults(role):
            value, where = self.defaults(role)[name], f"roles/{role}/defaults/main.yml"
        elif name in self.defaults(LAB_DEFAULTS_ROLE):  # every role that reads a dralab_* setting depends on it
            value, where = self.defaults(LAB_DEFAULTS_ROLE)[name], f"roles/{LAB_DEFAULTS_ROLE}/defaults/main.yml"
        else:
            raise KeyError(name)
        if isinstance(value, _Unsupported):
            raise VarError(f"{name} ({value.where}) is not in a form the harness can read; "
                           f"pass it with --set {name}=VALUE")
        if isinstance(value, list):
            return [self._render(role, v, name, where, _depth) for v in value]
        return self._render(role, value, name, where, _depth)

    def _render(self, role: str, value, name: str, where: str, depth: int):
        if not isinstance(value, str) or "{{" not in value:
            return value

        def expr(m: re.Match) -> str:
            text = m.group(1)
            d = _DEFAULT.match(text)
            if d:
                try:
                    return str(self.get(role, d.group(1), depth + 1))
                except KeyError:
                    return str(_scalar(d.group(2)))
            if _NAME.match(text):
                try:
                    return str(self.get(role, text, depth + 1))
                except KeyError:
                    raise VarError(f"{name} ({where}) uses {text}, which is not defined") from None
            raise VarError(f"{name} ({where}): the expression {{{{ {text} }}}} is not one the harness can "
                           f"evaluate; pass the value with --set {name}=VALUE")

        return _EXPR.sub(expr, value)

    def str(self, role: str, name: str) -> str:
        value = self.get(role, name)
        if isinstance(value, list):
            raise VarError(f"{name}: expected a single value, got a list")
        return str(value)


def parse_assignments(items: list[str]) -> dict:
    """NAME=VALUE strings (from --set) as a dict."""
    result = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not _NAME.match(name):
            raise VarError(f"--set {item!r}: expected NAME=VALUE")
        result[name] = value
    return result


def load_overrides(vars_files: list[Path], assignments: list[str]) -> dict:
    """Overrides from variables files (in order) and then --set NAME=VALUE."""
    overrides: dict = {}
    for path in vars_files:
        overrides.update(parse_vars_file(path))
    overrides.update(parse_assignments(assignments))
    return overrides


def default_vars_files() -> list[Path]:
    """The podman lab's inventory variables, when the inventory has them."""
    base = REPO / "inventories" / "local" / "group_vars"
    files = [base / "all.yml"] if (base / "all.yml").is_file() else []
    files += sorted((base / "all").glob("*.yml")) if (base / "all").is_dir() else []
    return files
