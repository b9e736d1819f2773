# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A feature gate list as an instructor writes it (dralab_feature_gates), read against dra/gates.py.

The filters feature_gates and feature_gate_map and the preflight read gates
through here; the table of the gates Kubernetes 1.35 knows stays generated
data in dra/gates.py.
"""

from __future__ import annotations

import difflib
import re

from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import FEATURE_GATES, FEATURE_GATES_VERSION
from ansible_collections.dralab.workshop.plugins.module_utils.values import as_bool, show

_GATE_NAME = re.compile(r'^[A-Za-z][A-Za-z0-9]*$')


def parse_feature_gates(gates):
    """Normalise feature gates to ({name: bool}, [problems]).

    gates is None, a dict name -> bool, a comma-separated string
    "A=true,B", or a list whose items are "Name", "Name=true|false" or dicts
    name -> bool. A bare name means true. A later setting of the same gate
    overrides an earlier one. Names are not checked against a release here.
    """
    result = {}
    problems = []

    def add(name, value, where):
        if not isinstance(name, str) or not _GATE_NAME.match(name.strip()):
            problems.append('%s: %s is not a feature gate name' % (where, show(name)))
            return
        try:
            result[name.strip()] = as_bool(value)
        except ValueError:
            problems.append('%s: %s must be true or false, not %s' % (where, name.strip(), show(value)))

    def add_item(item, where):
        if isinstance(item, dict):
            for name, value in item.items():
                add(name, value, where)
        elif isinstance(item, str):
            name, sep, value = item.partition('=')
            add(name, value if sep else True, where)
        else:
            problems.append('%s: %s is not "Name", "Name=true|false" or a mapping' % (where, show(item)))

    if gates is None or gates == '':
        return result, problems
    if isinstance(gates, str):
        for index, item in enumerate(part for part in gates.split(',') if part.strip()):
            add_item(item.strip(), 'item %d' % index)
    elif isinstance(gates, dict):
        add_item(gates, 'mapping')
    elif isinstance(gates, (list, tuple)):
        for index, item in enumerate(gates):
            add_item(item, 'item %d' % index)
    else:
        problems.append('%s is not a list, a mapping or a comma-separated string' % show(gates))
    return result, problems


def feature_gate_string(gates):
    """"A=true,B=false" from a {name: bool} map, sorted by name."""
    return ','.join('%s=%s' % (name, 'true' if gates[name] else 'false') for name in sorted(gates))


def merge_feature_gates(gates, extra=None, strict=False):
    """Merge gates, then extra, into one {name: bool} map sorted by name; raise ValueError on bad input.

    With strict, also refuse names Kubernetes 1.35 does not know and locked
    gates set to a value other than their default.
    """
    merged = {}
    for label, value in (('input', gates), ('extra', extra)):
        parsed, problems = parse_feature_gates(value)
        if problems:
            raise ValueError('%s: %s' % (label, '; '.join(problems)))
        merged.update(parsed)
    if strict:
        for name in sorted(merged):
            spec = FEATURE_GATES.get(name)
            if spec is None:
                raise ValueError('unknown feature gate %s for Kubernetes %s%s'
                                 % (show(name), FEATURE_GATES_VERSION, unknown_gate_hint(name)))
            stage, default, locked = spec
            if locked and merged[name] != default:
                raise ValueError('%s is %s and locked to %s in Kubernetes %s'
                                 % (name, stage, str(default).lower(), FEATURE_GATES_VERSION))
    return dict((name, merged[name]) for name in sorted(merged))


def unknown_gate_hint(name):
    """A "did you mean" suffix for an unknown gate name, or ''."""
    by_lower = dict((known.lower(), known) for known in FEATURE_GATES)
    if name.lower() in by_lower:
        return ' (did you mean %s?)' % by_lower[name.lower()]
    close = difflib.get_close_matches(name, list(FEATURE_GATES), n=1, cutoff=0.8)
    return ' (did you mean %s?)' % close[0] if close else ''
