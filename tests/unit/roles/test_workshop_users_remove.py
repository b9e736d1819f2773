# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""teardown.yml's removal of the seat accounts (dralab_teardown_remove_seats, workshop_users tasks_from: remove)."""

from __future__ import annotations

import yaml

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.seat import host_facts

from render import REPO, template_value

TASKS = REPO / 'roles' / 'workshop_users' / 'tasks'
SEAT = 'dralab.workshop seat'


def account(uid, comment=SEAT):
    return ['x', str(uid), str(uid), comment, '/home/seats/u', '/bin/bash']


def removed(accounts, seats, artifacts):
    """What remove.yml removes: seat_host_facts' leaving accounts, given the names the task templates (the seats
    and the seats of the password store)."""
    remove = yaml.safe_load((TASKS / 'remove.yml').read_text())
    read = next(task for task in remove if 'dralab.workshop.seat_host_facts' in task)['dralab.workshop.seat_host_facts']
    members = [name for name, fields in accounts.items() if fields[3] == SEAT and name != 'user03']
    variables = {'workshop_users_seat_names': seats, 'workshop_users_artifacts_dir': str(artifacts)}
    leaving = template_value('workshop_users', read['leaving'], variables)
    assert read['group'] == '{{ workshop_users_group }}' and 'seats' not in read
    return host_facts.seat_accounts(accounts, members, [], leaving)[1]


def test_only_the_accounts_the_role_made_for_seats_are_removed(tmp_path):
    accounts = {'user01': account(1001), 'user02': account(1002),
                'user03': account(1003, 'Someone else'),   # same name, not made by the role
                'debian': account(1000, 'Debian'),          # the instructor's SSH user
                'other': account(1004)}                     # the comment, but no seat name of this lab
    assert removed(accounts, ['user01', 'user02', 'user03', 'user04'], tmp_path) == {
        'user01': '1001', 'user02': '1002'}


def test_seats_recorded_in_the_password_store_are_removed_too(tmp_path):
    """A seat the lab had before dralab_seats was lowered (user73) has its password file on the controller."""
    (tmp_path / 'passwords').mkdir()
    (tmp_path / 'passwords' / 'user73').write_text('secret salt=x\n')
    accounts = {'user01': account(1001), 'user73': account(1073), 'user74': account(1074)}
    assert removed(accounts, ['user01'], tmp_path) == {'user01': '1001', 'user73': '1073'}


def test_a_second_run_finds_nothing(tmp_path):
    assert removed({'debian': account(1000, 'Debian')}, ['user01'], tmp_path) == {}


def test_removal_reuses_the_moved_seats_tasks():
    remove = yaml.safe_load((TASKS / 'remove.yml').read_text())
    include = next(task for task in remove if task.get('ansible.builtin.include_tasks'))
    assert include['ansible.builtin.include_tasks'] == 'moved.yml'
    assert include['when'] == 'workshop_users_host_read.leaving_accounts | length > 0'
    assert include['vars'] == {'workshop_users_moved_accounts': '{{ workshop_users_host_read.leaving_accounts }}'}
    # The handover (moved.yml's first task) hands over and removes exactly the accounts found.
    moved = yaml.safe_load((TASKS / 'moved.yml').read_text())
    assert moved[0]['dralab.workshop.seat_handover']['seats'] == '{{ workshop_users_moved_accounts.keys() | list }}'
    # The deny files' seat block goes by the module that writes it (its marker is the module's), and only it.
    deny = next(task for task in remove if 'dralab.workshop.seat_login_host' in task)['dralab.workshop.seat_login_host']
    assert deny == {'group': '{{ workshop_users_group }}', 'seats': [],
                    'job_deny_files': '{{ workshop_users_job_deny_files }}', 'require_pam_systemd': False}
    linux = yaml.safe_load((TASKS / 'linux.yml').read_text())[0]['block']
    rules = next(task for task in linux if 'dralab.workshop.seat_login_host' in task)['dralab.workshop.seat_login_host']
    assert rules['job_deny_files'] == deny['job_deny_files']


def test_teardown_removes_the_seats_only_when_asked_and_confirmed():
    plays = yaml.safe_load((REPO / 'playbooks' / 'teardown.yml').read_text())
    assert lab_settings.BY_NAME['dralab_teardown_remove_seats'].default is False
    reset, seats = plays
    assert reset['hosts'] == 'control_plane:workers'
    handoff = next(task for task in reset['tasks'] if 'lab_teardown_confirmed' in str(task))
    assert handoff['when'] == 'dralab_teardown_remove_seats | default(false) | bool'
    assert seats['hosts'] == 'login' and seats['become'] is True
    [block] = seats['tasks']
    assert block['when'] == 'dralab_teardown_remove_seats | default(false) | bool'
    confirm, include = block['block']
    assert 'lab_teardown_confirmed' in confirm['ansible.builtin.assert']['that']
    assert "dralab_teardown_confirm | default('') | string | lower == 'yes'" in confirm['ansible.builtin.assert']['that']
    assert include['ansible.builtin.include_role'] == {'name': 'dralab.workshop.workshop_users', 'tasks_from': 'remove'}
