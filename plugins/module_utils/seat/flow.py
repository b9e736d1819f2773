# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' share of the API server: API Priority and Fairness (APF) objects, built as plain dicts.

Every seat's requests (its ServiceAccounts authenticate as group system:serviceaccounts:NAME, which a seat cannot
change) go to one PriorityLevelConfiguration of their own, dralab-seats, through the FlowSchema dralab-seats. The
level has a nominal share of the API server's concurrency and neither lends nor borrows: all seats together never
execute more requests at once than its nominal limit, whatever the other levels leave free, so the instructor
(exempt), the controllers, the nodes, the lease reaper and the board (their own levels) keep the rest. Inside the
level, fair queuing by user: each ServiceAccount is one flow, so one seat's flood waits in its own queues (and is
refused with 429 once they are full) while another seat's request is dispatched before it. A seat has at most its
quota of ServiceAccounts (count/serviceaccounts), so at most that many flows.

Pure: module seat_objects applies the objects with the other seat objects; the preflight checks the values.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import MANAGED_BY, MANAGED_BY_LABEL, as_int, show

API_VERSION = 'flowcontrol.apiserver.k8s.io/v1'
PRIORITY_LEVEL_NAME = 'dralab-seats'
FLOW_SCHEMA_NAME = 'dralab-seats'
# After the built-in schemas of the cluster's own accounts (kube-system-service-accounts: 900), before the one of
# every other ServiceAccount (service-accounts: 9000, level workload-low).
MATCHING_PRECEDENCE = 1000
DEFAULT_SHARES = 2
DEFAULT_QUEUE_LENGTH = 50
QUEUES = 64
HAND_SIZE = 6
# Sanity bounds (the API takes any int32): a typo must not give the seats the whole server.
MAX_SHARES = 1000
MAX_QUEUE_LENGTH = 1000


def flow_problems(shares, queue_length):
    """[(option, sentence)] about the seats' APF values (option concurrency_shares or queue_length): whole numbers
    from 1 to 1000."""
    problems = []
    for option, value, top in (('concurrency_shares', shares, MAX_SHARES),
                               ('queue_length', queue_length, MAX_QUEUE_LENGTH)):
        try:
            number = as_int(value)
        except ValueError:
            problems.append((option, '%s is not a whole number' % show(value)))
            continue
        if not 1 <= number <= top:
            problems.append((option, '%d is outside 1..%d' % (number, top)))
    return problems


def nominal_seats(shares, other_shares=245, server_limit=600):
    """The concurrency the seats' level gets: ceil(server_limit * shares / all shares). The defaults are
    kube-apiserver 1.35's: --max-requests-inflight 400 + --max-mutating-requests-inflight 200, and the shares of
    its built-in levels (system 30, node-high 40, leader-election 10, workload-high 40, workload-low 100,
    global-default 20, catch-all 5)."""
    shares = as_int(shares)
    return -(-server_limit * shares // (other_shares + shares))


def seat_subjects(seats):
    """The FlowSchema subjects of the seats: the group of each seat namespace's ServiceAccounts."""
    return [{'kind': 'Group', 'group': {'name': 'system:serviceaccounts:%s' % seat}} for seat in seats]


def flow_objects(seats, shares=DEFAULT_SHARES, queue_length=DEFAULT_QUEUE_LENGTH):
    """[PriorityLevelConfiguration, FlowSchema] of the seats (none without seats). ValueError names a bad value."""
    problems = flow_problems(shares, queue_length)
    if problems:
        raise ValueError('; '.join('api_%s: %s' % problem for problem in problems))
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if not seats:
        return []
    level = {
        'apiVersion': API_VERSION, 'kind': 'PriorityLevelConfiguration',
        'metadata': {'name': PRIORITY_LEVEL_NAME, 'labels': dict(labels)},
        'spec': {'type': 'Limited', 'limited': {
            'nominalConcurrencyShares': as_int(shares),
            # Neither lends its seats nor borrows others': the seats' share is a ceiling and a floor.
            'lendablePercent': 0, 'borrowingLimitPercent': 0,
            'limitResponse': {'type': 'Queue', 'queuing': {
                'queues': QUEUES, 'handSize': HAND_SIZE, 'queueLengthLimit': as_int(queue_length)}}}},
    }
    schema = {
        'apiVersion': API_VERSION, 'kind': 'FlowSchema',
        'metadata': {'name': FLOW_SCHEMA_NAME, 'labels': dict(labels)},
        'spec': {
            'priorityLevelConfiguration': {'name': PRIORITY_LEVEL_NAME},
            'matchingPrecedence': MATCHING_PRECEDENCE,
            'distinguisherMethod': {'type': 'ByUser'},
            'rules': [{
                'subjects': seat_subjects(seats),
                'resourceRules': [{'verbs': ['*'], 'apiGroups': ['*'], 'resources': ['*'], 'namespaces': ['*'],
                                   'clusterScope': True}],
                'nonResourceRules': [{'verbs': ['*'], 'nonResourceURLs': ['*']}],
            }],
        },
    }
    return [level, schema]
