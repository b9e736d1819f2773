# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sentences about CEL selectors: what a selector asks for, in words, and a hint when no device matches it
(the largest published capacity, the attribute values devices have)."""

from __future__ import annotations

import re

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import natural_key, plural
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_quantity, parse_quantity


_CAPACITY_CMP = re.compile(
    r"^\s*device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)\.compareTo\(\s*quantity\(['\"]([^'\"]+)['\"]\)\s*\)"
    r"\s*(>=|>|<=|<|==|!=)\s*(-?\d+)\s*$")


_CAPACITY_METHOD = re.compile(
    r"^\s*(!?)\s*device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)\.(isGreaterThan|isLessThan)\(\s*quantity\(['\"]([^'\"]+)"
    r"['\"]\)\s*\)\s*$")


_LOWER_BOUND = re.compile(r'>=?|isGreaterThan')


_ATTRIBUTE_REF = re.compile(r"device\.attributes\[['\"]([^'\"]+)['\"]\]\.(\w+)")


_CAPACITY_REF = re.compile(r"device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)")


def describe_selector(expression):
    """'has memory >= 100Gi' for the common capacity comparisons, else 'matches `expression`'."""
    match = _CAPACITY_CMP.match(expression)
    if match:
        _domain, name, value, op, number = match.groups()
        number = int(number)
        ops = {(0, '>='): '>=', (0, '<='): '<=', (0, '=='): '=', (0, '>'): '>', (0, '<'): '<', (-1, '>'): '>=',
               (1, '<'): '<=', (1, '=='): '>', (-1, '=='): '<', (0, '!='): '!=', (1, '>='): '>', (-1, '<='): '<'}
        if (number, op) in ops:
            return 'has %s %s %s' % (name, ops[(number, op)], value)
    match = _CAPACITY_METHOD.match(expression)
    if match:
        negate, _domain, name, method, value = match.groups()
        op = {'isGreaterThan': ('>', '<='), 'isLessThan': ('<', '>=')}[method][1 if negate else 0]
        return 'has %s %s %s' % (name, op, value)
    return 'matches %s' % expression


def selector_hint(expression, devices):
    """What the devices offer for the capacities/attributes the expression reads: 'the largest has 80Gi'."""
    parts = []
    for domain, name in sorted(set(_CAPACITY_REF.findall(expression))):
        values = []
        for device in devices:
            for key, entry in (device.spec.get('capacity') or {}).items():
                if dra_cel.qualified_name(key, device.driver) == (domain, name):
                    try:
                        values.append(parse_quantity(str((entry or {}).get('value'))))
                    except ValueError:
                        pass
        if values:
            parts.append('the largest has %s, the smallest %s' % (
                format_quantity(max(values)), format_quantity(min(values)))
                if min(values) != max(values) and _LOWER_BOUND.search(expression) is None
                else 'the largest has %s' % format_quantity(max(values)))
    for domain, name in sorted(set(_ATTRIBUTE_REF.findall(expression))):
        values = set()
        for device in devices:
            value = device_attribute(device, '%s/%s' % (domain, name))
            if value is not None:
                values.add(str(value[1]))
        if values:
            shown = sorted(values, key=natural_key)
            text = ', '.join(shown[:6]) + (' ...' if len(shown) > 6 else '')
            parts.append('%s offered: %s' % (name, text))
        else:
            parts.append('no device has attribute %s/%s' % (domain, name))
    if not parts:
        parts.append('%s checked' % plural(len(devices), 'device'))
    return '; '.join(parts)


def device_attribute(device, qualified):
    """The plain value of a device attribute by qualified name (domain/id), or None."""
    domain, ident = dra_cel.qualified_name(qualified, device.driver)
    for key, attribute in (device.spec.get('attributes') or {}).items():
        if dra_cel.qualified_name(key, device.driver) == (domain, ident) and isinstance(attribute, dict):
            for kind in ('int', 'bool', 'string', 'version'):
                if attribute.get(kind) is not None:
                    return (kind, attribute[kind])
    return None


def int_quantity(value):
    try:
        return int(parse_quantity(str(value)))
    except ValueError:
        return 0
