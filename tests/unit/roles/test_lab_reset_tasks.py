# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/lab_reset: which claims the GPU check after a reset calls the seats', the other seats' or outside; the
cleanup's two steps reported as one result."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader

from render import REPO, evaluate


def verify_vars():
    [block] = DataLoader().load_from_file(str(REPO / 'roles' / 'lab_reset' / 'tasks' / 'verify_gpus.yml'))
    return block['vars']


def claim(namespace, name, state='allocated'):
    return {'namespace': namespace, 'name': name, 'state': state, 'devices': [{'device': 'gpu-0'}],
            'holder_pods_alive': []}


def claims_of(expression, cleared, every_seat):
    variables = dict(verify_vars(), lab_reset_cleanup={'namespaces': cleared, 'seat_namespaces': every_seat},
                     lab_reset_health={'claims': [claim('user01', 'mine'), claim('user07', 'gpu'),
                                                  claim('demo', 'shared'), claim('user02', 'waiting', 'pending')]})
    return ['%s/%s' % (c['namespace'], c['name']) for c in evaluate('lab_reset', expression, variables)]


def test_a_one_seat_reset_calls_no_other_seats_claim_outside_the_seat_namespaces():
    seats = ['user01', 'user02', 'user07']
    assert claims_of('lab_reset_holding_elsewhere', ['user07'], seats) == ['demo/shared']
    assert claims_of('lab_reset_holding_in_seats', ['user07'], seats) == ['user07/gpu']


def test_a_full_reset_checks_every_seat():
    seats = ['user01', 'user02', 'user07']
    assert claims_of('lab_reset_holding_elsewhere', seats, seats) == ['demo/shared']
    assert claims_of('lab_reset_holding_in_seats', seats, seats) == ['user01/mine', 'user07/gpu']


def cleanup_result(**registered):
    role_vars = DataLoader().load_from_file(str(REPO / 'roles' / 'lab_reset' / 'vars' / 'main.yml'))
    return evaluate('lab_reset', 'lab_reset_cleanup', dict(role_vars, **registered))


START = {'namespaces': ['user01'], 'seat_namespaces': ['user01', 'user02'], 'credential_generations': {'user01': 2},
         'deleted': {'pods': ['user01/job'], 'serviceaccounts': ['user01/backdoor']}, 'deleted_count': 2,
         'credentials_deleted': ['secrets user01/dralab-seat-token'], 'forced': [], 'remaining': [], 'failed_seats': [],
         'remaining_message': '', 'finalizers_removed': ['secrets user01/dralab-seat-token: example.com/x']}
FINISH = {'namespaces': ['user01'], 'seat_namespaces': ['user01', 'user02'],
          'deleted': {'pods': ['user01/job-2'], 'resourceclaims': ['user01/gpu']}, 'deleted_count': 2,
          'credentials_deleted': [], 'forced': ['pods user01/job'], 'remaining': ['resourceclaims user01/gpu'],
          'failed_seats': ['user01'], 'remaining_message': '1 object(s) are still present', 'finalizers_removed': []}


def test_the_two_cleanup_steps_report_as_one():
    result = cleanup_result(lab_reset_started=START, lab_reset_finishing={'ansible_job_id': 'j1', 'started': 1},
                            lab_reset_finished=dict(FINISH, finished=1))
    assert result['deleted'] == {'pods': ['user01/job', 'user01/job-2'], 'serviceaccounts': ['user01/backdoor'],
                                 'resourceclaims': ['user01/gpu']}
    assert result['deleted_count'] == 4 and result['credential_generations'] == {'user01': 2}
    assert result['credentials_deleted'] == ['secrets user01/dralab-seat-token']
    assert result['forced'] == ['pods user01/job'] and result['failed_seats'] == ['user01']
    assert result['remaining_message'] == '1 object(s) are still present'
    assert result['finalizers_removed'] == ['secrets user01/dralab-seat-token: example.com/x']


def test_in_check_mode_the_finish_ran_at_once():
    result = cleanup_result(lab_reset_started=START, lab_reset_finishing=FINISH,
                            lab_reset_finished={'skipped': True, 'changed': False})
    assert result['deleted_count'] == 4 and result['remaining'] == ['resourceclaims user01/gpu']
