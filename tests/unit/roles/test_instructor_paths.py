# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks that write files for the instructor say where: the seat cards after every change of passwords
(users.yml and reset.yml run lab_board's cards entry point), the credential sheet, the board's URLs, the snapshot."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader

from render import REPO, template_value


def load(*parts):
    return DataLoader().load_from_file(str(REPO.joinpath(*parts)))


def tasks_of(tasks):
    for item in tasks or []:
        yield item
        for key in ('block', 'always', 'rescue'):
            yield from tasks_of(item.get(key))


def named(tasks, name):
    [task] = [task for task in tasks_of(tasks) if task.get('name') == name]
    return task


def cards_plays(playbook):
    return [play for play in load('playbooks', playbook) if any(
        task.get('ansible.builtin.import_role') == {'name': 'dralab.workshop.lab_board', 'tasks_from': 'cards'}
        for task in play.get('tasks') or [])]


def test_users_and_reset_rewrite_the_seat_cards_after_the_seats():
    """A new seat (users.yml) or rotated passwords (reset.yml) are on the cards without board.yml."""
    for playbook, last_role_play in (('users.yml', 'Create the workshop seats'), ('reset.yml', 'Reset the workshop seats')):
        plays = load('playbooks', playbook)
        [cards] = cards_plays(playbook)
        assert cards['hosts'] == 'localhost'
        names = [play.get('name') for play in plays]
        assert names.index(cards['name']) > names.index(last_role_play), playbook


def test_the_cards_say_where_they_are_and_stay_private():
    tasks = load('roles', 'lab_board', 'tasks', 'cards.yml')
    write = named(tasks, 'Write the seat cards (HTML, ready to print)')
    assert write['dralab.workshop.controller_template']['mode'] == '0600'
    say = named(tasks, 'Say where the seat cards are')['ansible.builtin.debug']['msg']
    variables = {'lab_board_artifacts_dir': '/i/artifacts', 'lab_board_sheet': '/i/artifacts/credentials.csv',
                 'lab_board_sheet_found': True,
                 'lab_board_credentials': {'list': [{'seat': 'user01'}, {'seat': 'user02'}]},
                 'lab_board_cards': {'changed': True}}
    text = template_value('lab_board', say, variables)
    assert '2 seats, rewritten, mode 0600' in text and '/i/artifacts/seat-cards.html' in text
    variables['lab_board_sheet_found'] = False
    assert 'no seat cards' in template_value('lab_board', say, variables)


def test_board_yml_prints_its_urls_without_the_token():
    say = named(load('roles', 'lab_board', 'tasks', 'main.yml'), 'Say where the board answers')['ansible.builtin.debug']
    lines = template_value('lab_board', say['msg'], {'lab_board_url': 'http://192.0.2.10:8088/',
                                                     'lab_board_artifacts_dir': '/i/artifacts'})
    assert lines == ['Board for the projector and on the cards: http://192.0.2.10:8088/',
                     'The instructor view: xdg-open "http://192.0.2.10:8088/instructor?token=$(cat '
                     '/i/artifacts/board/instructor)"',
                     'Both URLs and the token file: /i/artifacts/board/board.json']


def test_users_yml_prints_the_credential_sheet():
    say = named(load('roles', 'workshop_users', 'tasks', 'credentials.yml'),
                "Say where the seats' credentials are")['ansible.builtin.debug']['msg']
    text = template_value('workshop_users', say, {'workshop_users_artifacts_dir': '/i/artifacts',
                                                  'workshop_users_login_hosts': ['login1']})
    assert '/i/artifacts/credentials.csv' in text and '/i/artifacts/seats/' in text and '/i/artifacts/passwords/' in text


def test_health_yml_prints_the_snapshot():
    say = named(load('roles', 'lab_health', 'tasks', 'main.yml'), 'Say where the board snapshot is')['ansible.builtin.debug']
    text = template_value('lab_health', say['msg'], {'lab_health_result': {
        'changed': True, 'snapshot': {'dest': '/i/artifacts/board-snapshot.html'}}})
    assert '/i/artifacts/board-snapshot.html' in text and '/i/artifacts/board-snapshot.json' in text


def plays(playbook, import_vars=None):
    """The plays a run of the playbook runs, imports expanded, each with its vars (an import's vars win, as in Ansible)."""
    for entry in load('playbooks', playbook):
        if 'ansible.builtin.import_playbook' in entry:
            yield from plays(entry['ansible.builtin.import_playbook'], {**(import_vars or {}), **entry.get('vars', {})})
        else:
            yield entry, {**entry.get('vars', {}), **(import_vars or {})}


def cards_writes(playbook):
    """The names of the plays of a run that write the seat cards: lab_board's cards entry point, or the whole role
    (its main.yml imports cards.yml), where the cards' condition holds with the play's vars."""
    main_imports_cards = any(task.get('ansible.builtin.import_tasks') == 'cards.yml'
                             for task in load('roles', 'lab_board', 'tasks', 'main.yml'))
    [cards_block] = load('roles', 'lab_board', 'tasks', 'cards.yml')
    writes = []
    for play, variables in plays(playbook):
        reached = [task for task in play.get('tasks') or []
                   if task.get('ansible.builtin.import_role') == {'name': 'dralab.workshop.lab_board', 'tasks_from': 'cards'}]
        reached += [role for role in play.get('roles') or []
                    if role.get('role') == 'dralab.workshop.lab_board' and main_imports_cards]
        if template_value('lab_board', '{{ %s }}' % cards_block['when'], variables):
            writes.extend([play['name']] * len(reached))
    return writes


def test_each_playbook_writes_the_seat_cards_once():
    """site.yml writes them in its users stage only (its board stage has no cards path); users.yml, reset.yml and
    board.yml, run alone, each write them once."""
    assert cards_writes('site.yml') == ['Write the seat cards']
    site = [entry[0]['name'] for entry in plays('site.yml')]
    assert site.index('Write the seat cards') > site.index('Create the workshop seats')
    assert cards_writes('users.yml') == ['Write the seat cards']
    assert cards_writes('reset.yml') == ['Write the seat cards']
    assert cards_writes('board.yml') == ['Run the GPU board']
