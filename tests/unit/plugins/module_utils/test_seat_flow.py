# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' share of the API server: one priority level that neither lends nor borrows, one FlowSchema that
matches every seat namespace's ServiceAccounts by their group, one flow per user."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.apply import object_path
from ansible_collections.dralab.workshop.plugins.module_utils.seat import flow


def test_the_level_is_limited_and_neither_lends_nor_borrows():
    level, schema = flow.flow_objects(['user01', 'user02'], 3, 20)
    assert level['kind'] == 'PriorityLevelConfiguration'
    limited = level['spec']['limited']
    assert level['spec']['type'] == 'Limited'
    assert limited['nominalConcurrencyShares'] == 3
    assert (limited['lendablePercent'], limited['borrowingLimitPercent']) == (0, 0)
    assert limited['limitResponse'] == {'type': 'Queue', 'queuing': {'queues': 64, 'handSize': 6,
                                                                     'queueLengthLimit': 20}}
    assert object_path(level) == '/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/dralab-seats'
    assert object_path(schema) == '/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/dralab-seats'


def test_the_schema_matches_each_seat_namespace_by_group_one_flow_per_user():
    dummy, schema = flow.flow_objects(['user01', 'user02'])
    spec = schema['spec']
    assert spec['priorityLevelConfiguration'] == {'name': 'dralab-seats'}
    assert spec['distinguisherMethod'] == {'type': 'ByUser'}
    # Before service-accounts (9000, workload-low), after the cluster's own kube-system accounts (900).
    assert 900 < spec['matchingPrecedence'] < 9000
    rule, = spec['rules']
    assert rule['subjects'] == [{'kind': 'Group', 'group': {'name': 'system:serviceaccounts:user01'}},
                                {'kind': 'Group', 'group': {'name': 'system:serviceaccounts:user02'}}]
    assert rule['resourceRules'] == [{'verbs': ['*'], 'apiGroups': ['*'], 'resources': ['*'], 'namespaces': ['*'],
                                      'clusterScope': True}]
    assert rule['nonResourceRules'] == [{'verbs': ['*'], 'nonResourceURLs': ['*']}]
    assert all(obj['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'dralab.workshop'}
               for obj in flow.flow_objects(['user01']))


def test_no_seats_no_objects():
    assert flow.flow_objects([]) == []


@pytest.mark.parametrize('shares, length, message', [
    (0, 50, 'api_concurrency_shares: 0 is outside 1..1000'),
    ('x', 50, "api_concurrency_shares: 'x' is not a whole number"),
    (2, 0, 'api_queue_length: 0 is outside 1..1000'),
    (True, 50, 'api_concurrency_shares: true is not a whole number'),
])
def test_bad_values_are_refused_naming_them(shares, length, message):
    with pytest.raises(ValueError) as err:
        flow.flow_objects(['user01'], shares, length)
    assert str(err.value) == message


def test_nominal_seats_follow_the_api_servers_formula():
    assert flow.nominal_seats(2) == 5  # measured on kube-apiserver 1.35.4: apiserver_flowcontrol_nominal_limit_seats
    assert flow.nominal_seats(5) == 12
