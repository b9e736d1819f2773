# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/lab_reset: which claims the GPU check after a reset calls the seats', the other seats' or outside."""

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
