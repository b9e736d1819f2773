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
from ansible_collections.dralab.workshop.plugins.module_utils.seat import bounds as seat_bounds
from ansible_collections.dralab.workshop.plugins.module_utils.seat import host_facts as seat_host_facts

from render import REPO, evaluate, render_role_template, role_defaults, template_value, with_hostvars


def resolved(role, **extra):
    """The role's defaults, templated with extra (inventory) variables."""
    defaults = role_defaults(role)
    variables = dict(defaults)
    variables.update(with_hostvars(extra))
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
        ephemeral_storage_per_seat=values['workshop_users_quota_ephemeral_storage'],
        container_default_limits=values['workshop_users_container_default_limits'],
        container_default_requests=values['workshop_users_container_default_requests'])
    assert len(objects) == 72 * 6 + 2
    quotas = [o for o in objects if o['kind'] == 'ResourceQuota']
    assert len(quotas) == 72
    assert all(q['spec']['hard'] == {'gpu.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'gpu-40gi.example.com.deviceclass.resource.k8s.io/devices': '1',
                                     'count/resourceclaims.resource.k8s.io': '1',
                                     'pods': '10', 'requests.cpu': '4', 'limits.cpu': '4',
                                     'requests.memory': '8Gi', 'limits.memory': '8Gi',
                                     'requests.ephemeral-storage': '10Gi', 'limits.ephemeral-storage': '10Gi'}
               for q in quotas)
    limits = [o for o in objects if o['kind'] == 'LimitRange']
    assert [lr['metadata']['namespace'] for lr in limits] == values['workshop_users_seat_names']
    assert limits[0]['spec']['limits'] == [
        {'type': 'Container', 'default': {'cpu': '500m', 'memory': '512Mi', 'ephemeral-storage': '1Gi'},
         'defaultRequest': {'cpu': '100m', 'memory': '128Mi', 'ephemeral-storage': '64Mi'}}]
    # The preflight's fallback for an unset default limit is the role's default.
    assert values['workshop_users_container_default_limits']['ephemeral-storage'] == seat_bounds.DEFAULT_CONTAINER_EPHEMERAL
    namespaces = [o for o in objects if o['kind'] == 'Namespace']
    assert [n['metadata']['labels']['dralab.workshop/seat'] for n in namespaces] == values['workshop_users_seat_names']
    binding = [o for o in objects if o['kind'] == 'ClusterRoleBinding'][0]
    assert len(binding['subjects']) == 72


LOGIN_HOSTS = {
    'workshop_users_login_hosts': ['login2', 'login1'],
    'hostvars': {'login1': {'ansible_host': '192.0.2.10'}, 'login2': {}},
}


def with_role_vars(**variables):
    """variables plus the role's vars/main.yml (the seats' hosts and the login addresses), as a task sees them."""
    merged = dict(workshop_users_role_vars())
    merged.update(variables)
    return merged


def test_credential_sheet_names_each_seats_own_login_host():
    text = render_role_template('workshop_users', 'credentials.csv.j2', with_role_vars(
        workshop_users_seat_names=['user01', 'user02', 'user03', 'user04', 'user05'],
        workshop_users_seat_login_host_overrides={'user05': 'login2'},
        workshop_users_passwords={'user01': 'Secret1', 'user02': 'Secret2'},
        workshop_users_artifacts_dir='/home/i/.dralab', **LOGIN_HOSTS))
    rows = list(csv.DictReader(io.StringIO(text)))
    # The sorted hosts in turn, user05 by its override; an address is ansible_host, else the host's name.
    assert [(row['seat'], row['login_host'], row['login_address']) for row in rows] == [
        ('user01', 'login1', '192.0.2.10'), ('user02', 'login2', 'login2'), ('user03', 'login1', '192.0.2.10'),
        ('user04', 'login2', 'login2'), ('user05', 'login2', 'login2')]
    assert rows[0] == {'seat': 'user01', 'login_host': 'login1', 'login_address': '192.0.2.10', 'password': 'Secret1',
                       'namespace': 'user01', 'kubeconfig': '/home/i/.dralab/seats/user01.kubeconfig'}
    assert rows[2]['password'] == ''


def test_credential_sheet_without_login_hosts_has_no_passwords():
    text = render_role_template('workshop_users', 'credentials.csv.j2', with_role_vars(
        workshop_users_seat_names=['user01'], workshop_users_login_hosts=[], hostvars={},
        workshop_users_passwords={}, workshop_users_artifacts_dir='/a'))
    assert text.splitlines() == ['seat,login_host,login_address,password,namespace,kubeconfig',
                                 'user01,,,,user01,/a/seats/user01.kubeconfig']


def test_each_login_host_makes_the_accounts_of_its_own_seats_only():
    seats = ['user%02d' % number for number in range(1, 8)]
    by_host = {}
    for host in ('login1', 'login2'):
        by_host[host] = evaluate('workshop_users', 'workshop_users_host_seats', with_role_vars(
            workshop_users_seat_names=seats, inventory_hostname=host, **LOGIN_HOSTS))
    assert by_host == {'login1': ['user01', 'user03', 'user05', 'user07'], 'login2': ['user02', 'user04', 'user06']}
    moved = evaluate('workshop_users', 'workshop_users_host_seats', with_role_vars(
        workshop_users_seat_names=seats, inventory_hostname='login2',
        workshop_users_seat_login_host_overrides={'user01': 'login2'}, **LOGIN_HOSTS))
    assert moved == ['user01', 'user02', 'user04', 'user06']
    # A host that is no login host has no seat.
    assert evaluate('workshop_users', 'workshop_users_host_seats', with_role_vars(
        workshop_users_seat_names=seats, inventory_hostname='cp1', **LOGIN_HOSTS)) == []


def test_a_run_for_some_seats_converges_only_theirs_and_keeps_the_others_as_seats():
    """lab_reset's one-seat reset (workshop_users_only_seats): login1 repairs user03 alone, and still counts
    user01..user07 of its rotation as its seats (neither foreign nor moved away)."""
    seats = ['user%02d' % number for number in range(1, 8)]
    variables = with_role_vars(workshop_users_seat_names=seats, inventory_hostname='login1',
                               workshop_users_only_seats=['user03', 'user04'], **LOGIN_HOSTS)
    assert evaluate('workshop_users', 'workshop_users_host_seats', variables) == ['user03']
    assert evaluate('workshop_users', 'workshop_users_host_all_seats', variables) == [
        'user01', 'user03', 'user05', 'user07']
    linux = yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'tasks' / 'linux.yml').read_text())
    block = linux[0]['block']
    accounts = dict(('user%02d' % n, ['x', str(1000 + n), str(1000 + n), 'dralab.workshop seat', '/h', '/bin/bash'])
                    for n in (1, 3, 5, 7))
    variables.update(ansible_facts={'getent_passwd': accounts,
                                    'getent_group': {'workshop-seats': ['x', '999', 'user01,user03,user05,user07']}})
    read = next(task for task in block if 'dralab.workshop.seat_host_facts' in task)['dralab.workshop.seat_host_facts']
    # user02's comment is what its own chfn made of it: the role still knows it by its group.
    accounts = {'user01': ['x', '1001', '1001', 'dralab.workshop seat', '/home/seats/user01', '/bin/bash'],
                'user02': ['x', '1002', '1002', 'dralab.workshop seat,101,,', '/home/seats/user02', '/bin/bash'],
                'user03': ['x', '1003', '1003', 'dralab.workshop seat', '/home/user03', '/bin/bash'],
                'other': ['x', '1004', '1004', 'dralab.workshop seat', '/home/other', '/bin/bash']}
    groups = {'workshop-seats': ['x', '999', 'user01,user02,other']}
    variables = with_role_vars(workshop_users_seat_names=['user01', 'user02', 'user03', 'user04'],
                               inventory_hostname='login1', **LOGIN_HOSTS)
    here = template_value('workshop_users', read['seats'], variables)
    leaving = template_value('workshop_users', read['leaving'], variables)
    _foreign, found = seat_host_facts.seat_accounts(accounts, seat_host_facts.group_members(groups, 'workshop-seats'),
                                                    here, leaving)
    # user02 belongs to login2 and was made by the role; user03 was not (not in the seat group, whatever its comment
    # says); "other" is no seat.
    assert found == {'user02': '1002'}
    include = next(task for task in block if task.get('ansible.builtin.include_tasks') == 'moved.yml')
    assert include['when'] == 'workshop_users_host_read.leaving_accounts | length > 0'
    moved = yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'tasks' / 'moved.yml').read_text())
    handover = moved[0]['dralab.workshop.seat_handover']
    assert handover['seats'] == "{{ workshop_users_moved_accounts.keys() | list }}"
    assert handover['remove'] is True


def foreign_accounts(accounts, groups, seats):
    """What linux.yml refuses: seat_host_facts given this host's seats (the task's argument, as the role templates
    it for login1) on these accounts and group facts."""
    linux = yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'tasks' / 'linux.yml').read_text())
    read = next(task for task in linux[0]['block'] if 'dralab.workshop.seat_host_facts' in task)
    variables = with_role_vars(workshop_users_seat_names=seats, inventory_hostname='login1', **LOGIN_HOSTS)
    here = template_value('workshop_users', read['dralab.workshop.seat_host_facts']['seats'], variables)
    foreign, _leaving = seat_host_facts.seat_accounts(accounts, seat_host_facts.group_members(groups, 'workshop-seats'),
                                                      here, [])
    return foreign


def test_seats_are_known_by_their_group_never_by_the_comment_chfn_edits():
    """A seat that changed its comment (chfn -r 101: "dralab.workshop seat,101,,") is still a seat; an account that
    put the comment there itself but is not in the seat group is not; without the group nothing is a seat."""
    accounts = {'user01': ['x', '1001', '1001', 'dralab.workshop seat,101,,', '/home/seats/user01', '/bin/bash'],
                'user03': ['x', '1003', '1003', 'dralab.workshop seat', '/home/user03', '/bin/bash']}
    groups = {'workshop-seats': ['x', '999', 'user01']}
    assert foreign_accounts(accounts, groups, ['user01', 'user02', 'user03']) == ['user03']
    assert foreign_accounts(accounts, {}, ['user01', 'user02', 'user03']) == ['user01', 'user03']
    assert foreign_accounts(accounts, {'workshop-seats': None}, ['user01']) == ['user01']
    assert foreign_accounts(accounts, {'workshop-seats': ['x', '999', '']}, ['user01']) == ['user01']
    tasks = REPO / 'roles' / 'workshop_users' / 'tasks'
    for name in ('linux.yml', 'remove.yml'):
        text = (tasks / name).read_text()
        assert "'value.3'" not in text, name
        assert 'workshop_users_host_read.' in text, name
        # The group facts come from seat_host_facts, given the seat group (seat/host_facts.py group_facts).
        tasks_of = yaml.safe_load(text)
        found = [task for task in tasks_of + [t for task in tasks_of for t in task.get('block', [])]
                 if 'dralab.workshop.seat_host_facts' in task]
        assert [task['dralab.workshop.seat_host_facts']['group'] for task in found] == ['{{ workshop_users_group }}'], name
    # The handover's module finds the seats by the group too (seat/handover.py seat_accounts).
    [_refuse, hand] = yaml.safe_load((tasks / 'handover.yml').read_text())
    assert hand['dralab.workshop.seat_handover']['group'] == '{{ workshop_users_group }}'


def workshop_users_role_vars():
    return yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'vars' / 'main.yml').read_text())


def test_sshd_dropin_only_matches_the_seat_group():
    settings = workshop_users_role_vars()
    settings['workshop_users_sshd_global_settings'] = {'MaxStartups': '100:30:300', 'PerSourceMaxStartups': '40',
                                                       'PerSourceNetBlockSize': '32:128'}
    text = render_role_template('workshop_users', 'sshd-seats.conf.j2', settings)
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith('#')]
    # Only the pre-authentication slots hold for every login (the rush of a workshop's first minute, and one source
    # holding at most its share of them), before the Match block.
    assert lines[:4] == ['MaxStartups 100:30:300', 'PerSourceMaxStartups 40', 'PerSourceNetBlockSize 32:128',
                         'Match Group workshop-seats']
    lines = lines[3:]
    # Every other setting sits inside the Match block (indented), none applies to other accounts.
    assert all(line.startswith('    ') for line in lines[1:])
    stripped = [line.strip() for line in lines[1:]]
    assert [line.split()[0] for line in stripped] == list(settings['workshop_users_sshd_seat_settings'])
    assert 'MaxAuthTries 3' in stripped and 'MaxSessions 4' in stripped
    for needed in ('PasswordAuthentication yes', 'AuthorizedKeysFile none', 'DisableForwarding yes',
                   'AllowTcpForwarding no', 'PermitTunnel no', 'X11Forwarding no', 'AllowAgentForwarding no'):
        assert needed in stripped


def test_sshd_pre_authentication_slots_per_source_are_below_the_start_of_max_startups():
    """One source (a laptop opening hundreds of idle connections to port 22) may hold fewer unauthenticated
    connections than sshd starts dropping at: every other address keeps slots, the instructor's included."""
    defaults = yaml.safe_load((REPO / 'roles' / 'workshop_users' / 'defaults' / 'main.yml').read_text())
    global_settings = workshop_users_role_vars()['workshop_users_sshd_global_settings']
    assert global_settings['PerSourceMaxStartups'] == '{{ workshop_users_sshd_per_source_max_startups }}'
    assert global_settings['PerSourceNetBlockSize'] == '{{ workshop_users_sshd_per_source_net_block_size }}'
    start = int(defaults['workshop_users_sshd_max_startups'].split(':')[0])
    per_source = defaults['workshop_users_sshd_per_source_max_startups']
    assert 0 < per_source < start
    # The 72-seat rush logs in from one address with 36 logins at a time (tests/lab/test_rush.py).
    assert per_source >= 36
    assert defaults['workshop_users_sshd_per_source_net_block_size'] == '32:128'


def test_seat_slice_limits():
    text = render_role_template('workshop_users', 'seat-slice.conf.j2', {})
    lines = [line for line in text.splitlines() if line and not line.startswith('#')]
    assert lines == ['[Slice]', 'MemoryMax=1G', 'TasksMax=256', 'CPUWeight=20']
    unlimited = render_role_template('workshop_users', 'seat-slice.conf.j2', {
        'workshop_users_seat_memory_max': '', 'workshop_users_seat_tasks_max': '',
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
