# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DeviceClass "menu": validation, the objects to apply, and what to remove.

A menu entry is a mapping with ``name``, ``selectors`` (CEL expressions, as
strings or as ``{cel: {expression: ...}}``), and optionally ``description``,
``config`` (opaque driver configuration), ``labels``, ``annotations`` and
``extended_resource_name``. Classes this collection creates carry the label
app.kubernetes.io/managed-by=dralab.workshop; a class of the same name that
exists without it (the driver's chart creates ``gpu.example.com``) is left to
its owner unless it is explicitly adopted.

Pure Python on plain values: the device_class_menu module and the unit tests
use it. The API server still validates the CEL expressions themselves.
"""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import DESCRIPTION_ANNOTATION, is_managed
from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL, is_dns1123_subdomain

API_VERSION = 'resource.k8s.io/v1'
KIND = 'DeviceClass'
ENTRY_KEYS = ('name', 'description', 'selectors', 'config', 'labels', 'annotations',
              'extended_resource_name', 'extendedResourceName')


def _show(value):
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _string_map_problems(where, value):
    if not isinstance(value, dict):
        return ['%s must be a mapping of strings, got %s' % (where, _show(value))]
    return ['%s.%s must be a string, got %s' % (where, key, _show(item))
            for key, item in value.items() if not isinstance(item, str)]


def _selector_expression(selector):
    if isinstance(selector, str):
        return selector
    if isinstance(selector, dict) and list(selector) == ['cel'] and isinstance(selector['cel'], dict) \
            and set(selector['cel']) == {'expression'}:
        return selector['cel']['expression'] if isinstance(selector['cel']['expression'], str) else None
    return None


def _config_item(item):
    """Normalise {opaque: {driver, parameters}} or the short {driver, parameters}; None if malformed."""
    if isinstance(item, dict) and list(item) == ['opaque']:
        item = item['opaque']
    if not isinstance(item, dict) or set(item) != {'driver', 'parameters'}:
        return None
    return {'opaque': {'driver': item['driver'], 'parameters': item['parameters']}}


def validate_menu(menu, variable='menu', compile_problem=None):
    """Every problem of the menu, each message naming the entry and the field.

    compile_problem(expression) returns why a CEL selector does not compile in
    the DRA CEL environment (or None); without it only the form is checked and
    the API server judges the expressions.
    """
    if not isinstance(menu, (list, tuple)):
        return ['%s must be a list of DeviceClasses, got %s' % (variable, _show(menu))]
    problems = []
    seen = {}
    for index, entry in enumerate(menu):
        where = '%s[%d]' % (variable, index)
        if not isinstance(entry, dict):
            problems.append('%s must be a mapping with name and selectors, got %s' % (where, _show(entry)))
            continue
        name = entry.get('name')
        if not isinstance(name, str) or not name:
            problems.append('%s.name is missing or empty' % where)
        elif not is_dns1123_subdomain(name):
            problems.append('%s.name %s is not a DNS-1123 subdomain (lower case letters, digits, "-" and ".")'
                            % (where, _show(name)))
        else:
            if name in seen:
                problems.append('%s.name %s is a duplicate of %s[%d].name' % (where, _show(name), variable, seen[name]))
            else:
                seen[name] = index
            where = '%s (%s)' % (where, name)
        unknown = sorted(str(key) for key in entry if key not in ENTRY_KEYS)
        if unknown:
            problems.append('%s has unknown keys %s (known: %s)' % (where, ', '.join(unknown), ', '.join(ENTRY_KEYS)))
        selectors = entry.get('selectors')
        if not isinstance(selectors, (list, tuple)) or not selectors:
            problems.append('%s.selectors must list at least one CEL expression (a class without selectors '
                            'matches every device of every driver), got %s' % (where, _show(selectors)))
        else:
            for position, selector in enumerate(selectors):
                expression = _selector_expression(selector)
                if expression is None:
                    problems.append('%s.selectors[%d] must be a CEL expression string, got %s'
                                    % (where, position, _show(selector)))
                elif not expression.strip():
                    problems.append('%s.selectors[%d] is an empty CEL expression' % (where, position))
                elif compile_problem is not None:
                    problem = compile_problem(expression)
                    if problem:
                        problems.append('%s.selectors[%d] does not compile: %s' % (where, position, problem))
        description = entry.get('description')
        if description is not None and not isinstance(description, str):
            problems.append('%s.description must be a string, got %s' % (where, _show(description)))
        config = entry.get('config')
        if config is not None:
            if not isinstance(config, (list, tuple)):
                problems.append('%s.config must be a list of opaque driver configurations, got %s'
                                % (where, _show(config)))
            else:
                for position, item in enumerate(config):
                    normalised = _config_item(item)
                    at = '%s.config[%d]' % (where, position)
                    if normalised is None:
                        problems.append('%s must be {opaque: {driver: ..., parameters: {...}}}, got %s' % (at, _show(item)))
                        continue
                    driver = normalised['opaque']['driver']
                    if not is_dns1123_subdomain(driver) or len(driver) > 63:
                        problems.append('%s.driver %s is not a driver name (a DNS subdomain of at most 63 characters)'
                                        % (at, _show(driver)))
                    if not isinstance(normalised['opaque']['parameters'], dict):
                        problems.append('%s.parameters must be a mapping, got %s'
                                        % (at, _show(normalised['opaque']['parameters'])))
        for field in ('labels', 'annotations'):
            if entry.get(field) is not None:
                problems.extend(_string_map_problems('%s.%s' % (where, field), entry[field]))
        if isinstance(entry.get('labels'), dict) and MANAGED_BY_LABEL in entry['labels']:
            problems.append('%s.labels may not set %s: the role sets it' % (where, MANAGED_BY_LABEL))
        extended = entry.get('extended_resource_name', entry.get('extendedResourceName'))
        if extended is not None and (not isinstance(extended, str) or not extended):
            problems.append('%s.extended_resource_name must be a non-empty string, got %s' % (where, _show(extended)))
    return problems


def device_class_object(entry):
    """The DeviceClass for a (valid) menu entry, labelled as ours."""
    labels = dict(entry.get('labels') or {})
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    annotations = dict(entry.get('annotations') or {})
    if entry.get('description'):
        annotations[DESCRIPTION_ANNOTATION] = entry['description']
    metadata = {'name': entry['name'], 'labels': labels}
    if annotations:
        metadata['annotations'] = annotations
    spec = {'selectors': [{'cel': {'expression': _selector_expression(s)}} for s in entry['selectors']]}
    if entry.get('config'):
        spec['config'] = [_config_item(item) for item in entry['config']]
    extended = entry.get('extended_resource_name', entry.get('extendedResourceName'))
    if extended:
        spec['extendedResourceName'] = extended
    return {'apiVersion': API_VERSION, 'kind': KIND, 'metadata': metadata, 'spec': spec}


def _spec_matches(existing, wanted):
    have = existing.get('spec') or {}
    want = wanted['spec']
    return ((have.get('selectors') or []) == want['selectors']
            and (have.get('config') or []) == (want.get('config') or [])
            and have.get('extendedResourceName') == want.get('extendedResourceName'))


def _owner(obj):
    labels = (obj.get('metadata') or {}).get('labels') or {}
    annotations = (obj.get('metadata') or {}).get('annotations') or {}
    owner = labels.get(MANAGED_BY_LABEL)
    release = annotations.get('meta.helm.sh/release-name')
    if release:
        return '%s (Helm release %s)' % (owner or 'Helm', release)
    return owner or 'nobody (no %s label)' % MANAGED_BY_LABEL


def plan(menu, existing=None, adopt=None, prune=True, variable='menu'):
    """What to do for the menu against the DeviceClasses of the cluster.

    Returns a dict:
      apply: DeviceClass objects to apply (ours, new, or adopted);
      delete: minimal objects of our classes that are no longer in the menu (when prune);
      foreign: classes of the menu that exist without our label and are left alone,
               each {name, owner, matches} (matches: its spec equals the menu's);
      warnings: messages for the foreign classes whose spec differs, and unused adopt names.
    Raises ValueError listing every problem of the menu.
    """
    problems = validate_menu(menu, variable)
    adopt = list(adopt or [])
    if problems:
        raise ValueError('%d problem(s) in %s: %s' % (len(problems), variable, '; '.join(problems)))
    by_name = {}
    for obj in existing or []:
        name = (obj.get('metadata') or {}).get('name')
        if name:
            by_name[name] = obj
    result = {'apply': [], 'delete': [], 'foreign': [], 'warnings': []}
    names = []
    for entry in menu:
        wanted = device_class_object(entry)
        name = entry['name']
        names.append(name)
        current = by_name.get(name)
        if current is None or is_managed(current) or name in adopt:
            result['apply'].append(wanted)
            continue
        matches = _spec_matches(current, wanted)
        result['foreign'].append({'name': name, 'owner': _owner(current), 'matches': matches})
        if not matches:
            result['warnings'].append(
                'DeviceClass %s already exists, managed by %s, and its selectors/config differ from %s: it is left '
                'unchanged. Rename the menu entry, or list %s in device_classes_adopt to let this role take it over.'
                % (name, _owner(current), variable, name))
    for name in adopt:
        if name not in names:
            result['warnings'].append('device_classes_adopt names %s, which is not in %s: ignored.' % (name, variable))
    if prune:
        for name in sorted(by_name):
            if name not in names and is_managed(by_name[name]):
                result['delete'].append({'apiVersion': API_VERSION, 'kind': KIND, 'metadata': {'name': name}})
    result['names'] = names
    return result
