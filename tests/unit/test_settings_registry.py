# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every place that states a lab-wide dralab_* setting agrees with lab_settings.SETTINGS.

The registry (plugins/module_utils/lab_settings.py) is the one definition;
role defaults' fallbacks, argument specs, the sample inventories' group_vars,
the tables of README.md and docs/conventions.md and the preflight must agree
with it, and nothing else may keep defaults of its own.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import re

import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from ansible_collections.dralab.workshop.plugins.module_utils.preflight import report as preflight_report
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate
from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import BY_NAME, SETTINGS

REPO = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(path.parent.parent for path in REPO.glob('roles/*/defaults/main.yml'))
SETTING_USE = re.compile(r'\b(dralab_[a-z0-9_]+)\s*\|\s*default\(')
BEGIN = '<!-- dralab-settings: generated from plugins/module_utils/lab_settings.py'
END = '<!-- dralab-settings: end -->'
ARGSPEC_TYPES = {'int': 'int', 'bool': 'bool', 'list': 'list', 'menu': 'list'}


def fallback_text(expression, start):
    """The text inside default( ... ) that starts at start (just after the parenthesis)."""
    depth = 1
    quote = None
    for index in range(start, len(expression)):
        char = expression[index]
        if quote:
            if char == quote:
                quote = None
        elif char in '\'"':
            quote = char
        elif char in '([{':
            depth += 1
        elif char in ')]}':
            depth -= 1
            if depth == 0:
                return expression[start:index]
    raise AssertionError('unbalanced default( in %r' % expression)


def role_fallbacks():
    """(role, variable, setting, fallback text, whole expression) for every dralab_X | default(...) in role defaults."""
    found = []
    for role in ROLES:
        defaults = yaml.safe_load((role / 'defaults' / 'main.yml').read_text()) or {}
        for variable, value in defaults.items():
            if not isinstance(value, str):
                continue
            for match in SETTING_USE.finditer(value):
                found.append((role.name, variable, match.group(1), fallback_text(value, match.end()), value.strip()))
    return found


def evaluate(expression):
    """A Jinja fallback expression's value; lookup('env', NAME) reads the environment."""
    environment = NativeEnvironment()
    return environment.compile_expression(expression)(
        lookup=lambda kind, name: os.environ.get(name, ''), groups={'login': ['login1']})


def normalise(text):
    return ' '.join(text.split())


FALLBACKS = role_fallbacks()


def test_the_roles_read_settings():
    # The parser finds what it checks (a broken regular expression would pass every test below).
    assert len(FALLBACKS) > 25
    assert ('workshop_users', 'workshop_users_seats', 'dralab_seats', '72',
            "{{ dralab_seats | default(72) }}") in FALLBACKS


@pytest.mark.parametrize('role, variable, name, fallback, expression', FALLBACKS,
                         ids=['%s-%s' % (item[1], item[2]) for item in FALLBACKS])
def test_role_fallback_is_the_registry_default(role, variable, name, fallback, expression):
    assert name in BY_NAME, '%s (role %s) reads %s, which is not a lab setting; define it in lab_settings.py' \
        % (variable, role, name)
    setting = BY_NAME[name]
    if variable in setting.role_fallbacks:
        expected = setting.role_fallbacks[variable]
        assert normalise(fallback) == normalise(expected), (variable, fallback)
    elif setting.default is None:
        assert normalise(fallback) == normalise(setting.fallback), \
            '%s: %s falls back to %s; lab_settings says %s' % (variable, name, fallback, setting.fallback)
    else:
        assert evaluate(fallback) == setting.default, \
            '%s: %s falls back to %s; lab_settings says %r' % (variable, name, fallback, setting.default)


def plain_passthroughs():
    """(role, variable, setting) whose default is exactly "{{ dralab_X | default(...) }}"."""
    found = []
    for role, variable, name, fallback, expression in FALLBACKS:
        if normalise(expression) == normalise('{{ %s | default(%s) }}' % (name, fallback)):
            found.append((role, variable, name))
    return found


PASSTHROUGHS = plain_passthroughs()


def argument_spec_options(role):
    """The options of every entry point of a role (a variable is documented where its tasks use it)."""
    specs = yaml.safe_load((REPO / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())['argument_specs']
    options = {}
    for entry in specs.values():
        options.update(entry.get('options') or {})
    return options


@pytest.mark.parametrize('role, variable, name', PASSTHROUGHS, ids=[item[1] for item in PASSTHROUGHS])
def test_argument_spec_states_the_registry_default(role, variable, name):
    setting = BY_NAME[name]
    option = argument_spec_options(role).get(variable)
    assert option is not None, '%s is not in roles/%s/meta/argument_specs.yml' % (variable, role)
    description = option['description']
    text = normalise(' '.join(description) if isinstance(description, list) else description)
    spec_default = setting.role_spec_defaults.get(variable, setting.spec_default)
    # A literal may be marked up as a value, as code, or not at all: V(8h), C(8h), 8h.
    plain = re.sub(r'^[VC]\((.*)\)$', r'\1', spec_default)
    accepted = set([spec_default, plain, 'V(%s)' % plain, 'C(%s)' % plain])
    assert any('C(%s), else %s' % (name, form) in text for form in accepted), \
        '%s: the argument spec should say "... C(%s), else %s"; it says: %s' % (variable, name, spec_default, text)
    if setting.kind in ARGSPEC_TYPES:
        assert option.get('type') == ARGSPEC_TYPES[setting.kind], variable
    if 'default' in option:
        assert option['default'] == setting.default, variable


def test_every_passthrough_is_found():
    assert len(PASSTHROUGHS) > 20


@pytest.mark.parametrize('inventory', ['workshop', 'local'])
def test_sample_group_vars_name_only_settings(inventory):
    variables = yaml.safe_load((REPO / 'inventories' / inventory / 'group_vars' / 'all.yml').read_text())
    names = [name for name in variables if name.startswith('dralab_')]
    assert names
    for name in names:
        assert name in BY_NAME, '%s in inventories/%s/group_vars/all.yml is not a lab setting' % (name, inventory)


def test_workshop_sample_shows_the_defaults():
    variables = yaml.safe_load((REPO / 'inventories' / 'workshop' / 'group_vars' / 'all.yml').read_text())
    checked = 0
    for name, value in variables.items():
        setting = BY_NAME.get(name)
        if setting is None or setting.default is None or (isinstance(value, str) and '{{' in value):
            continue
        assert value == setting.default, \
            'inventories/workshop/group_vars/all.yml sets %s to %r; lab_settings says %r' % (name, value, setting.default)
        checked += 1
    assert checked >= 10


def test_local_sample_is_valid():
    variables = yaml.safe_load((REPO / 'inventories' / 'local' / 'group_vars' / 'all.yml').read_text())
    config = dict((name, value) for name, value in variables.items()
                  if name.startswith('dralab_') and not (isinstance(value, str) and '{{' in value))
    config['groups'] = {'control_plane': ['cp1'], 'workers': ['worker1'], 'login': ['cp1']}
    config['dralab_login_hosts'] = ['cp1']
    errors, dummy = validate(config)
    assert errors == []


@pytest.mark.parametrize('document', ['README.md', 'docs/conventions.md'])
def test_documented_table_is_the_registry(document):
    text = (REPO / document).read_text()
    assert BEGIN in text and END in text, '%s has no generated settings table' % document
    start = text.index('\n', text.index(BEGIN)) + 1
    table = text[start:text.index(END)]
    assert table == lab_settings.markdown_table(), \
        '%s: the settings table differs from lab_settings.py; replace it with:\n%s' % (
            document, lab_settings.markdown_table())


def test_no_other_defaults():
    # The preflight validates against the registry: a setting it is not given is read with report.given(),
    # from lab_settings.DEFAULTS; no file of preflight/ keeps defaults of its own.
    assert preflight_report.DEFAULTS is lab_settings.DEFAULTS
    assert preflight_report.given({}, 'dralab_seats') == BY_NAME['dralab_seats'].default
    files = sorted((REPO / 'plugins' / 'module_utils' / 'preflight').glob('*.py'))
    assert len(files) > 2, files
    for path in files:
        assert 'DEFAULTS = ' not in path.read_text(), path.name
        module = importlib.import_module('ansible_collections.dralab.workshop.plugins.module_utils.preflight.' + path.stem)
        assert getattr(module, 'DEFAULTS', lab_settings.DEFAULTS) is lab_settings.DEFAULTS, path.name
    preflight = (REPO / 'playbooks' / 'preflight.yml').read_text()
    assert not SETTING_USE.search(preflight), 'playbooks/preflight.yml writes a default of its own'


def test_every_setting_has_a_description_and_a_kind():
    for setting in SETTINGS:
        assert setting.name.startswith('dralab_') and setting.description, setting
        assert setting.kind in ('str', 'bool', 'int', 'list', 'network', 'duration', 'semver', 'url', 'host_port',
                                'menu'), setting
        if setting.kind == 'int':
            assert setting.bounds and setting.bounds[0] <= setting.default <= setting.bounds[1], setting


def test_preflight_module_docs_repeat_no_bound_or_default():
    # lab_preflight documents its options by pointing at the registry; a bound or default written there
    # would go stale when lab_settings.py changes.
    from ansible_collections.dralab.workshop.plugins.modules import lab_preflight

    docs = lab_preflight.DOCUMENTATION + lab_preflight.EXAMPLES + lab_preflight.RETURN
    bounded = [setting for setting in SETTINGS if setting.bounds]
    assert bounded
    for setting in bounded:
        assert '%d..%d' % setting.bounds not in docs, '%s: lab_preflight repeats its bounds' % setting.name
    assert not SETTING_USE.search(docs), 'lab_preflight writes a default of its own: %s' % SETTING_USE.search(docs)
    options = yaml.safe_load(lab_preflight.DOCUMENTATION)['options']
    for option in lab_preflight.LAB_OPTIONS:
        assert 'default' not in options[option], option
        assert 'dralab_' + option in BY_NAME, option
