# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One value per lab setting, from what every host of the lab sees (the preflight's first step)."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import DEFAULTS, NAMES, unknown_name_problem
from ansible_collections.dralab.workshop.plugins.module_utils.values import show


def _short(text, limit=60):
    return text if len(text) <= limit else text[:limit - 3] + '...'


def resolve_hosts(host_settings):
    """The one value of each lab setting, from the dralab_* variables every lab host sees.

    host_settings maps each host that runs a play of the lab (localhost
    included) to the dralab_* variables set for it (inventory, group_vars,
    host_vars, extra vars). A setting must mean the same on every host: set
    on a group other than "all" (or in host_vars), the Kubernetes half of a
    play would use one value and the Linux half another.

    Returns (settings, errors): settings maps each setting set somewhere to
    its value; errors name each setting whose value differs between hosts
    and each dralab_* variable that is no setting, with the closest known
    name (a misspelt name would otherwise be ignored and its default used).
    """
    errors = []
    settings = {}
    hosts = sorted(host_settings)
    unknown = set()
    for host in hosts:
        unknown.update(name for name in (host_settings[host] or {}) if name not in NAMES)
    for name in sorted(unknown):
        where = [host for host in hosts if name in (host_settings[host] or {})]
        errors.append('%s (set for %s)' % (unknown_name_problem(name), ', '.join(where)))
    for name in NAMES:
        default = DEFAULTS.get(name)
        seen = {}
        for host in hosts:
            variables = host_settings[host] or {}
            if name in variables:
                key = show(variables[name])
            else:
                # Unset means the default; a derived default (None) is its own value.
                key = show(default) if default is not None else None
            seen.setdefault(key, []).append(host)
        if len(seen) > 1:
            parts = []
            for key, members in seen.items():
                text = _short(key) if key is not None else 'not set'
                parts.append('%s on %s' % (text, ', '.join(members)))
            errors.append('%s: differs between the hosts of the lab: %s; set it once for the whole lab '
                          '(group_vars/all.yml, or -e)' % (name, '; '.join(parts)))
            continue
        for host in hosts:
            if name in (host_settings[host] or {}):
                settings[name] = host_settings[host][name]
                break
    return settings, errors
