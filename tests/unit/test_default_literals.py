# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A default is written once: its literal lives in plugins/module_utils/lab_settings.py (or, for the
example driver's name, in dra/model.py's DEFAULT_DRIVER) and nowhere else as a default.

Scanned as defaults: the roles' defaults/main.yml (role dralab's is generated from lab_settings.py and
checked by test_settings_registry.py), the `default:` of the roles' argument specs, the argument specs of
plugins/modules, and the defaults in tools/ (argparse `default=`, parameter and dataclass defaults). A
literal counts as a copy when it is one of the settings' distinctive values (a non-empty string, a
duration in seconds, the admin kubeconfig's folder, the driver's name in Python), or when the variable,
option or parameter is named after a setting (`*_lease_max`, `*_devices_per_node`) and states its default.
Documentation (DOCUMENTATION, descriptions, the README tables) may show a default; test_settings_registry.py
and the test below keep it equal.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import re

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import DEFAULT_DRIVER
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration

REPO = pathlib.Path(__file__).resolve().parents[2]
HOME = 'plugins/module_utils/lab_settings.py'
DRIVER_HOME = 'plugins/module_utils/dra/model.py (DEFAULT_DRIVER)'
SETTINGS = [setting for setting in lab_settings.SETTINGS if setting.default is not None]
# The admin kubeconfig's folder in a path: '/.dralab' or '~/.dralab' (dralab_artifacts_dir, dralab_kubeconfig).
ARTIFACTS_PATH = re.compile(r'/%s\b' % re.escape(lab_settings.ARTIFACTS_DIR))
DISTINCTIVE_SECONDS = 600
# A role default's own fallback for a setting role dralab defines: "{{ dralab_seats | default(72) }}".
FALLBACK = re.compile(r'\b(dralab_[a-z0-9_]+)\s*\|\s*default\(')


def distinctive(python):
    """literal -> where it is defined: the values that are a setting's default wherever they appear as a default."""
    known = {}
    for setting in SETTINGS:
        if isinstance(setting.default, str) and setting.default:
            known[setting.default] = setting.name
            # A few seconds are an ordinary number (60 retries, a 60 s timeout); hours in seconds are not.
            if setting.kind == 'duration' and parse_duration(setting.default) >= DISTINCTIVE_SECONDS:
                known[parse_duration(setting.default)] = setting.name
    if python:
        # Roles name the driver of their own concern (role variables, documented in their argument specs).
        known[DEFAULT_DRIVER] = 'DEFAULT_DRIVER'
    return known


def named_setting(name):
    """The setting a variable, option or parameter is named after (lease_max, lab_board_lease_max), or None."""
    name = name.lstrip('-').replace('-', '_')
    for setting in SETTINGS:
        stem = setting.name[len(lab_settings.PREFIX):]
        if name == stem or name.endswith('_' + stem):
            return setting
    return None


def copy_of(name, value, python):
    """The definition a default named `name` with the literal `value` copies, or None."""
    if isinstance(value, str) and ARTIFACTS_PATH.search(value):
        return 'dralab_artifacts_dir'
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        known = distinctive(python)
        if value in known:
            return known[value]
    setting = named_setting(name)
    if setting is not None and type(value) is type(setting.default) and value == setting.default:
        return setting.name
    return None


def problem(path, line, name, value, home):
    where = DRIVER_HOME if home == 'DEFAULT_DRIVER' else '%s (%s)' % (HOME, home)
    read = ('import DEFAULT_DRIVER' if home == 'DEFAULT_DRIVER'
            else 'read lab_settings.default(%r) or, in a role, "{{ %s }}"' % (home, home))
    return '%s:%d: %s defaults to %r, a second copy of the default defined once in %s; %s' % (
        path, line, name, value, where, read)


def line_of(text, pattern, start=0):
    lines = text.splitlines()
    for index in range(start, len(lines)):
        if re.search(pattern, lines[index]):
            return index + 1
    return start + 1


def scan_role_defaults(path, text):
    """Copies among a role's defaults: literal values (templates read their setting instead)."""
    found = []
    for name, value in (yaml.safe_load(text) or {}).items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            fallbacks = FALLBACK.findall(item) if isinstance(item, str) else []
            for setting in fallbacks:
                if setting in lab_settings.BY_NAME and lab_settings.BY_NAME[setting].in_role:
                    found.append(problem(path, line_of(text, r'^%s:' % re.escape(name)), name, item, setting))
            if isinstance(item, str) and '{{' in item and (fallbacks or not ARTIFACTS_PATH.search(item)):
                continue
            home = copy_of(name, item, python=False)
            if home:
                found.append(problem(path, line_of(text, r'^%s:' % re.escape(name)), name, item, home))
    return found


def scan_argument_specs(path, text):
    """Copies among the `default:` of a role's argument specs."""
    found = []
    specs = (yaml.safe_load(text) or {}).get('argument_specs') or {}
    for entry in specs.values():
        for name, option in (entry.get('options') or {}).items():
            if isinstance(option, dict) and 'default' in option:
                home = copy_of(name, option['default'], python=False)
                if home:
                    found.append(problem(path, line_of(text, r'^\s+%s:' % re.escape(name)), name, option['default'], home))
    return found


def constant(node):
    return node.value if isinstance(node, ast.Constant) else None


def python_defaults(text):
    """(line, name, literal) for every default written in Python source: `name=dict(..., default=X)` of an
    argument spec, add_argument('--name', default=X), `def f(name=X)` and `name: type = X` in a class."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                inner = keyword.value
                if keyword.arg and isinstance(inner, ast.Call) and getattr(inner.func, 'id', None) == 'dict':
                    for option in inner.keywords:
                        if option.arg == 'default' and isinstance(option.value, ast.Constant):
                            found.append((option.value.lineno, keyword.arg, option.value.value))
            if getattr(node.func, 'attr', None) == 'add_argument' and node.args:
                for keyword in node.keywords:
                    if keyword.arg == 'default' and isinstance(keyword.value, ast.Constant):
                        found.append((keyword.value.lineno, constant(node.args[-1]) or '', keyword.value.value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.posonlyargs + node.args.args
            for argument, value in zip(arguments[len(arguments) - len(node.args.defaults):], node.args.defaults):
                if isinstance(value, ast.Constant):
                    found.append((value.lineno, argument.arg, value.value))
            for argument, value in zip(node.args.kwonlyargs, node.args.kw_defaults):
                if isinstance(value, ast.Constant):
                    found.append((value.lineno, argument.arg, value.value))
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.value, ast.Constant):
                    found.append((statement.lineno, getattr(statement.target, 'id', ''), statement.value.value))
    return found


def scan_python(path, text):
    found = []
    for line, name, value in python_defaults(text):
        home = copy_of(str(name), value, python=True)
        if home:
            found.append(problem(path, line, name, value, home))
    return found


def scanned_files():
    files = [(path, scan_role_defaults) for path in sorted(REPO.glob('roles/*/defaults/main.yml'))
             if path.parts[-3] != 'dralab']  # generated from lab_settings.py, checked by test_settings_registry.py
    files += [(path, scan_argument_specs) for path in sorted(REPO.glob('roles/*/meta/argument_specs.yml'))]
    files += [(path, scan_python) for path in sorted(REPO.glob('plugins/modules/*.py'))]
    files += [(path, scan_python) for path in sorted(REPO.glob('tools/**/*.py'))]
    return files


def test_every_default_is_written_once():
    files = scanned_files()
    assert len(files) > 40
    found = []
    for path, scan in files:
        found += scan(str(path.relative_to(REPO)), path.read_text())
    assert not found, 'a default written a second time:\n' + '\n'.join(found)


def test_a_planted_copy_is_found():
    # The test of the test: each kind of file with one copy planted, named with its file, line and one home.
    role = scan_role_defaults('roles/x/defaults/main.yml',
                              '---\nx_kubeconfig: "{{ dralab_kubeconfig }}"\nx_lease: "8h"\nx_devices_per_node: 8\n'
                              "x_path: \"{{ lookup('env', 'HOME') ~ '/.dralab/admin.conf' }}\"\n"
                              "x_seats: \"{{ dralab_seats | default(72) }}\"\n"
                              "x_names: \"{{ dralab_seat_names | default(x_seats | dralab.workshop.seat_names('u', 2)) }}\"\n")
    assert role == [problem('roles/x/defaults/main.yml', 3, 'x_lease', '8h', 'dralab_lease_max'),
                    problem('roles/x/defaults/main.yml', 4, 'x_devices_per_node', 8, 'dralab_devices_per_node'),
                    problem('roles/x/defaults/main.yml', 5, 'x_path',
                            "{{ lookup('env', 'HOME') ~ '/.dralab/admin.conf' }}", 'dralab_artifacts_dir'),
                    problem('roles/x/defaults/main.yml', 6, 'x_seats', '{{ dralab_seats | default(72) }}', 'dralab_seats')]
    assert 'roles/x/defaults/main.yml:3:' in role[0] and HOME in role[0] and 'dralab_lease_max' in role[0]
    options = {'x_seats': {'type': 'int', 'default': 72}, 'x_title': {'type': 'str', 'default': 'DRA lab'}}
    specs = scan_argument_specs('roles/x/meta/argument_specs.yml',
                                yaml.safe_dump({'argument_specs': {'main': {'options': options}}}))
    assert len(specs) == 1 and 'x_seats defaults to 72' in specs[0] and 'dralab_seats' in specs[0]
    module = scan_python('plugins/modules/x.py', ('spec.update(\n    lease_max=dict(type="raw", default="8h"),\n'
                                                  '    expiration_seconds=dict(type="int", default=28800),\n'
                                                  '    seats=dict(type="int", default=lab_settings.default("dralab_seats")),\n)\n'))
    assert [text.split(': ')[0] for text in module] == ['plugins/modules/x.py:2', 'plugins/modules/x.py:3']
    tool = scan_python('tools/x.py', ('import argparse\n'
                                      'def f(driver="gpu.example.com", *, gpus_per_seat=1):\n    pass\n'
                                      'class S:\n    lease_default: str = "2h"\n'
                                      'parser.add_argument("--devices-per-node", type=int, default=8)\n'))
    assert [text.split(' defaults')[0] for text in tool] == [
        'tools/x.py:2: driver', 'tools/x.py:2: gpus_per_seat', 'tools/x.py:5: lease_default',
        'tools/x.py:6: --devices-per-node']
    assert DRIVER_HOME in tool[0]


def test_what_is_not_a_copy():
    # Reading the setting, another value, or a literal that is no setting's default under another name.
    assert scan_role_defaults('r', '---\nx_lease_max: "{{ dralab_lease_max }}"\nx_lease_max_extra: 4h\nx_port: 8\n'
                                   'x_driver: gpu.example.com\n') == []
    assert scan_python('p', 'def f(lease_max=None, count=8, title="DRA lab"):\n    pass\n') == []


def module_argspecs():
    found = []
    for path in sorted(REPO.glob('plugins/modules/*.py')):
        module = importlib.import_module('ansible_collections.dralab.workshop.plugins.modules.' + path.stem)
        if hasattr(module, 'argspec'):
            found.append((path.stem, module))
    return found


@pytest.mark.parametrize('name, module', module_argspecs(), ids=[item[0] for item in module_argspecs()])
def test_documented_default_is_the_argspec_default(name, module):
    # Argument specs take their defaults from lab_settings; DOCUMENTATION states them, and must agree.
    documented = yaml.safe_load(module.DOCUMENTATION).get('options') or {}
    for option, spec in module.argspec().items():
        if option in documented and spec.get('default') not in (None, [], {}):
            assert documented[option].get('default') == spec['default'], \
                'plugins/modules/%s.py: DOCUMENTATION says %s defaults to %r; the argument spec (lab_settings) says %r' \
                % (name, option, documented[option].get('default'), spec['default'])


def test_the_lab_settings_modules_read_are_lab_settings():
    from ansible_collections.dralab.workshop.plugins.modules import board_snapshot, dra_health, seat_objects, seat_tokens

    assert dra_health.argspec()['snapshot_lease_max']['default'] == lab_settings.default('dralab_lease_max')
    assert board_snapshot.argspec()['expected_devices_per_node']['default'] == lab_settings.default('dralab_devices_per_node')
    assert seat_objects.argspec()['gpus_per_seat']['default'] == lab_settings.default('dralab_gpus_per_seat')
    assert seat_tokens.argspec()['expiration_seconds']['default'] == parse_duration(lab_settings.default('dralab_event_duration'))
