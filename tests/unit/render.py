"""Render a role's template the way Ansible does, with the role's defaults."""

from __future__ import annotations

import pathlib

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template

REPO = pathlib.Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / "collections"  # holds ansible_collections/dralab/workshop, a link to the repository
_LOADED = []


def use_this_checkout():
    """Import ansible_collections.dralab.workshop and look up its filters from this checkout (once per process)."""
    if _LOADED:
        return
    # What the ansible CLIs do before they run anything, with collections/ as the first collections path.
    init_plugin_loader([str(COLLECTIONS)])
    _LOADED.append(True)


def trusted(value):
    """Mark strings as templates, as Ansible does for variables from role files."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value


def role_defaults(role: str) -> dict:
    """The role's defaults over those of its dependencies (role dralab's lab-wide settings), as Ansible merges them."""
    defaults = {}
    meta = REPO / "roles" / role / "meta" / "main.yml"
    for dependency in (DataLoader().load_from_file(str(meta)) or {}).get("dependencies") or [] if meta.exists() else []:
        defaults.update(role_defaults(dependency["role"].rpartition(".")[2]))
    path = REPO / "roles" / role / "defaults" / "main.yml"
    defaults.update(trusted(DataLoader().load_from_file(str(path)) or {}) if path.exists() else {})
    return defaults


def with_hostvars(variables: dict) -> dict:
    """variables plus hostvars[inventory_hostname] holding them, as a play gives a host its own variables, unless
    the test gives hostvars itself (inventory_hostname defaults to "localhost")."""
    if "hostvars" in variables:
        return variables
    host = variables.get("inventory_hostname", "localhost")
    return {"inventory_hostname": host, **variables, "hostvars": {host: dict(variables)}}


def render_role_template(role: str, template: str, extra_vars: dict | None = None) -> str:
    """Render roles/<role>/templates/<template> with the role defaults plus extra_vars.

    extra_vars override the defaults, as inventory variables would; they may
    also supply facts (ansible_facts, ansible_default_ipv4, inventory_hostname...).
    """
    variables = dict(role_defaults(role))
    variables.update(trusted(with_hostvars(extra_vars or {})))
    role_dir = REPO / "roles" / role
    loader = DataLoader()
    loader.set_basedir(str(role_dir))
    templar = Templar(loader=loader, variables=variables)
    source = (role_dir / "templates" / template).read_text()
    return templar.template(trust_as_template(source))


def role_vars(role: str, var_files=("main.yml",), facts: dict | None = None, **overrides) -> dict:
    """The role's vars/ files (as the role loads them), then facts, then overrides."""
    variables = {}
    for name in var_files:
        path = REPO / "roles" / role / "vars" / name
        if path.exists():
            variables.update(DataLoader().load_from_file(str(path)) or {})
    variables.update(facts or {})
    variables.update(overrides)
    return variables


def evaluate(role: str, expression: str, variables: dict):
    """Template one expression with the role defaults plus variables (as a task would see it)."""
    merged = dict(role_defaults(role))
    merged.update(trusted(with_hostvars(variables)))
    loader = DataLoader()
    loader.set_basedir(str(REPO / "roles" / role))
    return Templar(loader=loader, variables=merged).template(trust_as_template("{{ %s }}" % expression))


def template_value(role: str, value: str, variables: dict | None = None):
    """Template one value as a task of the role would (role defaults plus variables)."""
    merged = dict(role_defaults(role))
    merged.update(trusted(with_hostvars(variables or {})))
    loader = DataLoader()
    loader.set_basedir(str(REPO / "roles" / role))
    return Templar(loader=loader, variables=merged).template(trust_as_template(value))


def participant_tool_settings(variables: dict | None = None) -> dict:
    """The can-has-gpu settings file as role participant_tool writes it (tasks/install.yml) with its defaults."""
    tasks = DataLoader().load_from_file(str(REPO / "roles" / "participant_tool" / "tasks" / "install.yml"))
    task = next(task for task in tasks if "dralab.workshop.node_program" in task)
    return {key: template_value("participant_tool", value, variables)
            for key, value in task["vars"]["participant_tool_settings"].items()}


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Parse a systemd unit: section name to its (key, value) lines, repeats kept in order."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, "key outside a section: %r" % line
        key, sep, value = line.partition("=")
        assert sep, "not a key=value line: %r" % line
        current.append((key.strip(), value.strip()))
    return sections


def unit_values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [value for name, value in section if name == key]
