# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""workshop_users and lab_reset: defaults, templates and the bulk object list, rendered as Ansible would."""

from __future__ import annotations

import csv
import io

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.dralab.workshop.plugins.module_utils import seat_model

from render import REPO, render_role_template, role_defaults


def resolved(role, **extra):
    """The role's defaults, templated with extra (inventory) variables."""
    defaults = role_defaults(role)
    variables = dict(defaults)
    variables.update(extra)
    templar = Templar(loader=DataLoader(), variables=variables)
    return {key: templar.template(value) for key, value in defaults.items()}


def test_default_seats_are_user01_to_user72():
    values = resolved('workshop_users', groups={}, ansible_facts={})
    assert values['workshop_users_seat_names'] == ['user%02d' % n for n in range(1, 73)]
    assert values['workshop_users_login_hosts'] == []
    assert values['workshop_users_device_classes'] == []
    assert values['workshop_users_sshd_service'] == 'ssh'


def test_lab_wide_settings_drive_the_seats():
    values = resolved('workshop_users', dralab_seats=3, dralab_seat_prefix='team', dralab_seat_width=3,
                      dralab_device_classes=[{'name': 'a.example.com', 'selectors': ['true']}],
                      groups={'login': ['login1']}, ansible_facts={'os_family': 'RedHat'})
    assert values['workshop_users_seat_names'] == ['team001', 'team002', 'team003']
    assert values['workshop_users_device_classes'] == ['a.example.com']
    assert values['workshop_users_login_hosts'] == ['login1']
    assert values['workshop_users_sshd_service'] == 'sshd'
    explicit = resolved('workshop_users', dralab_seat_names=['ana', 'bo'], groups={}, ansible_facts={})
    assert explicit['workshop_users_seat_names'] == ['ana', 'bo']


def test_bulk_object_list_for_the_default_72_seats_and_menu():
    values = resolved('workshop_users', groups={}, ansible_facts={})
    objects = seat_model.build_seat_objects(
        values['workshop_users_seat_names'], ['gpu.example.com', 'gpu-40gi.example.com'],
        devices_per_seat=values['workshop_users_devices_per_seat'],
        claims_per_seat=values['workshop_users_claims_per_seat'], pod_security=values['workshop_users_pod_security'],
        reader_name=values['workshop_users_reader_cluster_role'])
    assert len(objects) == 72 * 5 + 2
    quotas = [o for o in objects if o['kind'] == 'ResourceQuota']
    assert len(quotas) == 72
    assert all(q['spec']['hard'] == {'gpu.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'gpu-40gi.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'count/resourceclaims.resource.k8s.io': '2'} for q in quotas)
    namespaces = [o for o in objects if o['kind'] == 'Namespace']
    assert [n['metadata']['labels']['dralab.workshop/seat'] for n in namespaces] == values['workshop_users_seat_names']
    binding = [o for o in objects if o['kind'] == 'ClusterRoleBinding'][0]
    assert len(binding['subjects']) == 72


def test_credential_sheet_lists_every_seat():
    text = render_role_template('workshop_users', 'credentials.csv.j2', {
        'workshop_users_seat_names': ['user01', 'user02'],
        'workshop_users_login_hosts': ['login1', 'login2'],
        'hostvars': {'login1': {'ansible_host': '192.0.2.10'}, 'login2': {}},
        'workshop_users_passwords': {'user01': 'Secret1', 'user02': 'Secret2'},
        'workshop_users_artifacts_dir': '/home/i/.dralab',
    })
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows == [
        {'seat': 'user01', 'login_hosts': '192.0.2.10 login2', 'password': 'Secret1', 'namespace': 'user01',
         'kubeconfig': '/home/i/.dralab/seats/user01.kubeconfig'},
        {'seat': 'user02', 'login_hosts': '192.0.2.10 login2', 'password': 'Secret2', 'namespace': 'user02',
         'kubeconfig': '/home/i/.dralab/seats/user02.kubeconfig'},
    ]


def test_credential_sheet_without_login_hosts_has_no_passwords():
    text = render_role_template('workshop_users', 'credentials.csv.j2', {
        'workshop_users_seat_names': ['user01'], 'workshop_users_login_hosts': [], 'hostvars': {},
        'workshop_users_passwords': {}, 'workshop_users_artifacts_dir': '/a'})
    assert text.splitlines() == ['seat,login_hosts,password,namespace,kubeconfig', 'user01,,,user01,/a/seats/user01.kubeconfig']


def test_sshd_dropin_only_matches_the_seat_group():
    text = render_role_template('workshop_users', 'sshd-seats.conf.j2', {})
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith('#')]
    assert lines == ['Match Group workshop-seats', 'PasswordAuthentication yes']


def test_lab_reset_kinds_are_the_cleanup_kinds():
    from ansible_collections.dralab.workshop.plugins.module_utils.seat_cleanup import KIND_NAMES
    assert tuple(role_defaults('lab_reset')['lab_reset_kinds']) == KIND_NAMES
    specs = yaml.safe_load((REPO / 'roles' / 'lab_reset' / 'meta' / 'argument_specs.yml').read_text())
    assert tuple(specs['argument_specs']['main']['options']['lab_reset_kinds']['choices']) == KIND_NAMES


def test_every_role_variable_is_declared_in_the_argument_specs():
    for role in ('device_classes', 'workshop_users', 'lab_reset'):
        specs = yaml.safe_load((REPO / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
        declared = set(specs['argument_specs']['main']['options'])
        assert set(role_defaults(role)) == declared, role
