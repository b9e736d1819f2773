"""Render a role's template the way Ansible does, with the role's defaults."""

from __future__ import annotations

import pathlib

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = pathlib.Path(__file__).resolve().parents[2]


def _trusted(value):
    """Mark strings as templates, as Ansible does for variables from role files."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {key: _trusted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


def role_defaults(role: str) -> dict:
    path = REPO / "roles" / role / "defaults" / "main.yml"
    return _trusted(DataLoader().load_from_file(str(path)) or {}) if path.exists() else {}


def render_role_template(role: str, template: str, extra_vars: dict | None = None) -> str:
    """Render roles/<role>/templates/<template> with the role defaults plus extra_vars.

    extra_vars override the defaults, as inventory variables would; they may
    also supply facts (ansible_facts, ansible_default_ipv4, inventory_hostname...).
    """
    variables = dict(role_defaults(role))
    variables.update(_trusted(extra_vars or {}))
    role_dir = REPO / "roles" / role
    loader = DataLoader()
    loader.set_basedir(str(role_dir))
    templar = Templar(loader=loader, variables=variables)
    source = (role_dir / "templates" / template).read_text()
    return templar.template(trust_as_template(source))
