# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event window reaches the tasks that issue and judge seat tokens: workshop_users (users.yml, and reset.yml's
rotation through it) hands dralab_event_end to seat_tokens; lab_health (health.yml) hands it and the seat
kubeconfig folder to dra_health."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader

from render import REPO, template_value

END = '2026-10-28T17:00:00+02:00'


def task(role, tasks_file, module):
    """The (one) task of tasks_file that runs module, blocks included."""
    found = []

    def walk(tasks):
        for item in tasks or []:
            walk(item.get('block'))
            if module in item:
                found.append(item)
    walk(DataLoader().load_from_file(str(REPO / 'roles' / role / 'tasks' / tasks_file)))
    assert len(found) == 1, found
    return found[0]


def test_users_yml_issues_seat_tokens_until_the_event_end():
    args = task('workshop_users', 'kubernetes.yml', 'dralab.workshop.seat_tokens')['dralab.workshop.seat_tokens']
    assert template_value('workshop_users', args['event_end'], {'dralab_event_end': END}) == END
    assert template_value('workshop_users', args['event_end'], {}) == ''


def test_reset_yml_rotation_issues_tokens_with_the_same_settings():
    """lab_reset includes workshop_users (the whole role, with or without rotation) without overriding the token
    settings, so rotated seats get tokens until the event end too."""
    tasks = DataLoader().load_from_file(str(REPO / 'roles' / 'lab_reset' / 'tasks' / 'main.yml'))
    includes = [item for item in tasks if item.get('ansible.builtin.include_role', {}).get('name') ==
                'dralab.workshop.workshop_users']
    assert any('tasks_from' not in item['ansible.builtin.include_role'] for item in includes)  # kubernetes.yml in it
    for include in includes:
        assert not [name for name in include.get('vars') or {} if 'token' in name or 'event' in name], include


def test_health_yml_checks_the_seat_tokens_against_the_event_end():
    args = task('lab_health', 'main.yml', 'dralab.workshop.dra_health')['dralab.workshop.dra_health']
    variables = {'dralab_event_end': END, 'dralab_artifacts_dir': '/home/i/lab'}
    assert template_value('lab_health', args['event_end'], variables) == END
    assert template_value('lab_health', args['seat_kubeconfig_dir'], variables) == '/home/i/lab/seats'
