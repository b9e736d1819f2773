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

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model

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
    # The names of the default menu (role dralab), which the device_classes role creates.
    assert values['workshop_users_device_classes'] == [menu['name'] for menu in lab_settings.DEFAULT_DEVICE_CLASSES]
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
        gpus_per_seat=values['workshop_users_gpus_per_seat'], pod_security=values['workshop_users_pod_security'],
        reader_name=values['workshop_users_reader_cluster_role'], pods_per_seat=values['workshop_users_quota_pods'],
        cpu_per_seat=values['workshop_users_quota_cpu'], memory_per_seat=values['workshop_users_quota_memory'],
        container_default_limits=values['workshop_users_container_default_limits'],
        container_default_requests=values['workshop_users_container_default_requests'])
    assert len(objects) == 72 * 6 + 2
    quotas = [o for o in objects if o['kind'] == 'ResourceQuota']
    assert len(quotas) == 72
    assert all(q['spec']['hard'] == {'gpu.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'gpu-40gi.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'count/resourceclaims.resource.k8s.io': '1',
                                     'pods': '10', 'requests.cpu': '4', 'limits.cpu': '4',
                                     'requests.memory': '8Gi', 'limits.memory': '8Gi'} for q in quotas)
    limits = [o for o in objects if o['kind'] == 'LimitRange']
    assert [lr['metadata']['namespace'] for lr in limits] == values['workshop_users_seat_names']
    assert limits[0]['spec']['limits'] == [{'type': 'Container', 'default': {'cpu': '500m', 'memory': '512Mi'},
                                            'defaultRequest': {'cpu': '100m', 'memory': '128Mi'}}]
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


def workshop_users_role_vars():
    return yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'vars' / 'main.yml').read_text())


def test_sshd_dropin_only_matches_the_seat_group():
    settings = workshop_users_role_vars()
    settings['workshop_users_sshd_global_settings'] = {'MaxStartups': '100:30:300'}
    text = render_role_template('workshop_users', 'sshd-seats.conf.j2', settings)
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith('#')]
    # Only MaxStartups holds for every login (the rush of a workshop's first minute), before the Match block.
    assert lines[:2] == ['MaxStartups 100:30:300', 'Match Group workshop-seats']
    lines = lines[1:]
    # Every other setting sits inside the Match block (indented), none applies to other accounts.
    assert all(line.startswith('    ') for line in lines[1:])
    stripped = [line.strip() for line in lines[1:]]
    assert stripped == ['%s %s' % item for item in settings['workshop_users_sshd_seat_settings'].items()]
    for needed in ('PasswordAuthentication yes', 'AuthorizedKeysFile none', 'DisableForwarding yes',
                   'AllowTcpForwarding no', 'PermitTunnel no', 'X11Forwarding no', 'AllowAgentForwarding no'):
        assert needed in stripped


def test_seat_slice_limits():
    text = render_role_template('workshop_users', 'seat-slice.conf.j2', {'item': 'user01'})
    lines = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert lines == ['[Slice]', 'MemoryMax=1G', 'TasksMax=256', 'CPUWeight=20']
    unlimited = render_role_template('workshop_users', 'seat-slice.conf.j2', {
        'item': 'user01', 'workshop_users_seat_memory_max': '', 'workshop_users_seat_tasks_max': '',
        'workshop_users_seat_cpu_weight': ''})
    assert [line for line in unlimited.splitlines() if line and not line.startswith('#')] == ['[Slice]']


def test_lab_reset_clears_every_kind_by_default():
    assert role_defaults('lab_reset')['lab_reset_kinds'] == []


def test_every_role_variable_is_declared_in_the_argument_specs():
    for role in ('device_classes', 'workshop_users', 'lab_reset'):
        specs = yaml.safe_load((REPO / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
        declared = set(specs['argument_specs']['main']['options'])
        # The role's own defaults (role dralab's, its dependency's, are the lab-wide settings).
        own = yaml.safe_load((REPO / 'roles' / role / 'defaults' / 'main.yml').read_text())
        assert set(own) == declared, role
        assert set(role_defaults(role)) - set(own) == set(role_defaults('dralab')), role
