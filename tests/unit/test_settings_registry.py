# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every place that states a lab-wide dralab_* setting agrees with lab_settings.SETTINGS.

The registry (plugins/module_utils/lab_settings.py) is the one definition;
role dralab's defaults (generated), the roles that read a setting (through
role dralab, without a fallback), argument specs, the sample inventories'
group_vars, the tables of README.md and docs/conventions.md and the preflight
must agree with it, and nothing else may keep defaults of its own
(tests/unit/test_default_literals.py finds a default written twice).
"""

from __future__ import annotations

import importlib
import os
import pathlib
import re

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.preflight import report as preflight_report
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate
from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import BY_NAME, SETTINGS

REPO = pathlib.Path(__file__).resolve().parents[2]
ROLES = sorted(path.parent.parent for path in REPO.glob('roles/*/defaults/main.yml'))
LAB_ROLE = 'dralab'
SETTING_USE = re.compile(r'\b(dralab_[a-z0-9_]+)\s*\|\s*default\(')
SETTING_NAME = re.compile(r'\b(dralab_[a-z0-9_]+)\b')
BEGIN = '<!-- dralab-settings: generated from plugins/module_utils/lab_settings.py'
END = '<!-- dralab-settings: end -->'
ARGSPEC_TYPES = {'int': 'int', 'bool': 'bool', 'list': 'list', 'dict': 'dict', 'menu': 'list'}


def role_reads():
    """(role, variable, setting, whole expression) for every dralab_X a role default reads."""
    found = []
    for role in ROLES:
        if role.name == LAB_ROLE:
            continue
        defaults = yaml.safe_load((role / 'defaults' / 'main.yml').read_text()) or {}
        for variable, value in defaults.items():
            if not isinstance(value, str):
                continue
            for name in sorted(set(SETTING_NAME.findall(value))):
                found.append((role.name, variable, name, value.strip()))
    return found


def normalise(text):
    return ' '.join(text.split())


READS = role_reads()


def test_the_roles_read_settings():
    # The parser finds what it checks (a broken regular expression would pass every test below).
    assert len(READS) > 25
    assert ('workshop_users', 'workshop_users_seats', 'dralab_seats', "{{ dralab_seats }}") in READS


def test_role_dralab_is_generated_from_the_registry():
    path = REPO / lab_settings.ROLE_DEFAULTS_PATH
    assert path.read_text() == lab_settings.role_defaults_yaml(), \
        '%s differs from lab_settings.py: run make settings-docs' % lab_settings.ROLE_DEFAULTS_PATH
    defaults = yaml.safe_load(path.read_text())
    for setting in SETTINGS:
        if not setting.in_role:
            assert setting.name not in defaults, setting.name
        elif setting.default is not None:
            assert defaults[setting.name] == setting.default, setting.name
        else:
            assert normalise(defaults[setting.name]) == normalise('{{ %s }}' % setting.fallback), setting.name


def test_role_dralab_defaults_evaluate_to_the_registry():
    # The derived defaults, rendered as a task sees them.
    from render import role_defaults, use_this_checkout, evaluate

    use_this_checkout()
    home = os.path.expanduser('~')
    assert evaluate(LAB_ROLE, 'dralab_kubeconfig', {}) == lab_settings.admin_kubeconfig()
    assert evaluate(LAB_ROLE, 'dralab_artifacts_dir', {}) == os.path.join(home, lab_settings.ARTIFACTS_DIR)
    assert evaluate(LAB_ROLE, 'dralab_login_hosts', {'groups': {'login': ['login1']}}) == ['login1']
    assert evaluate(LAB_ROLE, 'dralab_login_hosts', {'groups': {}}) == []
    assert set(role_defaults('workshop_users')) >= set(role_defaults(LAB_ROLE))


@pytest.mark.parametrize('role, variable, name, expression', READS, ids=['%s-%s' % (item[1], item[2]) for item in READS])
def test_role_reads_a_setting_role_dralab_defines(role, variable, name, expression):
    assert name in BY_NAME, '%s (role %s) reads %s, which is not a lab setting; define it in lab_settings.py' \
        % (variable, role, name)
    setting = BY_NAME[name]
    if setting.in_role:
        assert not SETTING_USE.search(expression), \
            '%s (roles/%s/defaults/main.yml) gives %s a fallback; role dralab gives its default' % (variable, role, name)
    meta = yaml.safe_load((REPO / 'roles' / role / 'meta' / 'main.yml').read_text())
    dependencies = [dependency['role'] for dependency in meta.get('dependencies') or []]
    assert 'dralab.workshop.' + LAB_ROLE in dependencies, \
        'roles/%s/meta/main.yml: a role that reads %s depends on dralab.workshop.%s' % (role, name, LAB_ROLE)


def test_a_derived_setting_falls_back_to_its_derivation():
    derived = [item for item in READS if not BY_NAME[item[2]].in_role and item[2] != 'dralab_teardown_confirm']
    assert derived
    for role, variable, name, expression in derived:
        match = SETTING_USE.search(expression)
        assert match, '%s reads %s, which role dralab does not define, without a fallback' % (variable, name)
        assert normalise(BY_NAME[name].fallback) in normalise(expression), (variable, expression)


def plain_passthroughs():
    """(role, variable, setting) whose default is exactly "{{ dralab_X }}"."""
    return [(role, variable, name) for role, variable, name, expression in READS
            if normalise(expression) == '{{ %s }}' % name]


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
    # The default is role dralab's; an argument spec that states one writes it a second time.
    assert 'default' not in option, '%s: roles/%s/meta/argument_specs.yml repeats the default of %s' % (variable, role, name)


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
    for path in sorted(REPO.glob('roles/*/*/*.yml')) + sorted(REPO.glob('roles/*/templates/*.j2')):
        uses = [name for name in SETTING_USE.findall(path.read_text()) if BY_NAME.get(name) and BY_NAME[name].in_role]
        assert not uses, '%s gives %s a default of its own; role dralab gives it' % (path.relative_to(REPO), uses)


def test_every_setting_has_a_description_and_a_kind():
    for setting in SETTINGS:
        assert setting.name.startswith('dralab_') and setting.description, setting
        assert setting.kind in ('str', 'bool', 'int', 'list', 'dict', 'network', 'duration', 'semver', 'url',
                                'host_port', 'time', 'menu'), setting
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
