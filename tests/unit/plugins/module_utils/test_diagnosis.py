# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a pending claim is told (dra/diagnosis.py through the explainer), on recorded objects (healthy.json, 3 nodes
x 8 GPUs of 80Gi) and claims made here: a claim that can never fit as asked is told apart from one that waits for
devices in use, whatever the lab's occupancy; one that waits names the seats' claims holding the devices (not the
names of other namespaces) and when the first lease ends; the scheduler's message stays evidence."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import diagnosis
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import LEASE_EXPIRES
from test_dra_explain import (  # pylint: disable=unused-import  # noqa: F401  (lab_fixture: the fixture `lab`)
    DRIVER, INDEX, MEMORY, NOW, allocate, claim, fill_lab, lab_fixture, request)

# The words of the old report that sent the instructor to delete other people's work for any pending claim.
OLD_HINT = 'the pod starts when a GPU is freed'


def explain(lab, target, lease_max='8h', **changes):
    data = dict(lab, **changes)
    data.pop('claim_templates', None)
    claims = data.pop('claims') + ([target] if target not in lab['claims'] else [])
    return dra_explain.explain_claim(target, claims=claims, now=NOW, lease_max=lease_max, **data)


def pod_for(target, name='train-1'):
    """A pod that uses the claim (the scheduler only allocates a claim for a pod)."""
    meta = target['metadata']
    return {'metadata': {'name': name, 'namespace': meta['namespace'], 'uid': 'pod-%s' % meta['name']},
            'spec': {'resourceClaims': [{'name': 'gpu', 'resourceClaimName': meta['name']}]},
            'status': {'phase': 'Pending', 'conditions': [{
                'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                'message': '0/3 nodes are available: 3 cannot allocate all claims. still not schedulable, '
                           'preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.'}]}}


NEVER = [
    ('memory >= 100Gi on 80Gi cards', lambda: claim('big', requests=[request(selectors=[MEMORY % '100Gi'])]),
     'no_matching_device', 'no GPU has memory >= 100Gi (the largest has 80Gi).',
     'Change the request: ask for no more than the devices offer.'),
    ('more GPUs than one node has', lambda: claim('many', requests=[request(count=9)]),
     'too_few_per_node', 'the claim asks for 9 GPUs on one node, but at most 8 matching GPUs are on any node (24 '
     'match in the lab).', 'Change the request: ask for at most 8 GPUs in one claim (the most one node has).'),
    ('a constraint no set of devices meets', lambda: claim('two', requests=[request('a'), request('b')], constraints=[
        {'requests': ['a', 'b'], 'matchAttribute': 'gpu.example.com/index'}]),
     'constraint_unsatisfiable', None, 'Change the request: drop the matchAttribute constraint, or the selectors '
                                       'that keep the devices apart.'),
    ('a class that does not exist', lambda: claim('typo', requests=[request(device_class='gpu.exmaple.com')]),
     'no_such_class', None, 'Change the request: name one of those classes.'),
]


@pytest.mark.parametrize('what, make, reason, cause, advice', NEVER, ids=[n[0] for n in NEVER])
def test_a_claim_that_never_fits_is_told_so_in_an_empty_and_in_a_full_lab(lab, what, make, reason, cause, advice):
    target = make()
    answers = [explain(lab, target, claims=[], pods=[pod_for(target)]),
               explain(lab, target, claims=fill_lab(lab), pods=[pod_for(target)])]
    for answer in answers:
        assert (answer['reason'], answer['verdict'], answer['action']) == (reason, 'never_fits', 'change'), what
        assert answer['headline'] == 'never fits as asked'
        assert answer['advice'] == advice and answer['sentence'] == answer['cause'] + ' ' + advice
        assert cause is None or answer['cause'] == cause
        # Nobody is sent to wait, or to free other people's GPUs, for a claim that never fits.
        assert OLD_HINT not in answer['sentence'] and 'Wait' not in answer['sentence']
    assert answers[0]['sentence'] == answers[1]['sentence'], 'the occupancy does not change a never-fit verdict'


def test_a_class_no_device_matches_never_fits_and_a_lab_without_devices_is_the_instructors(lab):
    tpu = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass', 'metadata': {'name': 'tpu.example.com'},
           'spec': {'selectors': [{'cel': {'expression': "device.driver == 'tpu.example.com'"}}]}}
    target = claim('tpu', requests=[request(device_class='tpu.example.com')])
    answer = explain(lab, target, device_classes=lab['device_classes'] + [tpu])
    assert (answer['reason'], answer['verdict']) == ('no_matching_device', 'never_fits')
    assert answer['sentence'] == (
        'no published device belongs to DeviceClass tpu.example.com (24 devices published in the lab). Change the '
        'request: name a DeviceClass whose devices are published (kubectl get deviceclasses), or ask the instructor '
        'why tpu.example.com has none.')
    dark = explain(lab, claim('any'), slices=[])
    assert (dark['verdict'], dark['action']) == ('blocked', 'instructor')
    assert dark['advice'] == 'Ask the instructor: the lab publishes no device (is the DRA driver running?).'


def seats_and_others(lab):
    """gpu-0 of each node held: node1's by seat user01 (a 1h lease asked), node2's by team-x (no seat), node3's by
    seat user02 (no lease asked: creation + the 8h maximum)."""
    held = [allocate(claim('hold', namespace='user01', created='2026-10-28T09:30:00Z'), [('node1', 'gpu-0')]),
            allocate(claim('secret-experiment', namespace='team-x', created='2026-10-28T08:00:00Z'),
                     [('node2', 'gpu-0')]),
            allocate(claim('hold', namespace='user02', created='2026-10-28T02:15:00Z'), [('node3', 'gpu-0')])]
    held[0]['metadata']['annotations'] = {LEASE_EXPIRES: '2026-10-28T10:30:00Z'}
    return held


def test_a_claim_that_waits_names_the_seat_claims_holding_the_gpus_and_when_the_first_lease_ends(lab):
    target = claim('wants-gpu-0', requests=[request(selectors=[INDEX % '== 0'])])
    answer = explain(lab, target, claims=seats_and_others(lab), pods=[pod_for(target)])
    assert (answer['reason'], answer['verdict'], answer['action']) == ('all_matching_in_use', 'waits', 'wait')
    assert answer['headline'] == 'waits for a device in use'
    assert answer['cause'] == (
        '3 GPUs match; all are in use: gpu-0 on node1 by user01/hold for 30m (lease until 2026-10-28T10:30:00Z), '
        'gpu-0 on node2 in use outside the seats for 2h, gpu-0 on node3 by user02/hold for 7h45m (lease until '
        '2026-10-28T10:15:00Z).')
    # The first lease to end is user02's (creation + 8h), before user01's own 1h.
    assert answer['advice'] == ('Wait until one of them is released: the first of their leases ends at '
                                '2026-10-28T10:15:00Z (user02/hold).')
    assert (answer['first_lease_end'], answer['first_lease_claim']) == ('2026-10-28T10:15:00Z', 'user02/hold')
    # A namespace that is no seat's is never named to the room (a seat may not see it).
    assert 'team-x' not in answer['sentence'] and 'secret-experiment' not in answer['sentence']


def test_a_lease_that_ended_is_released_by_the_reaper_soon(lab):
    target = claim('wants-gpu-0', requests=[request(selectors=[INDEX % '== 0'])])
    data = dict(lab, claims=seats_and_others(lab) + [target], pods=[pod_for(target)])
    data.pop('claim_templates')
    answer = dra_explain.explain_claim(target, now='2026-10-28T10:20:00Z', lease_max='8h', **data)
    assert answer['advice'] == ('Wait until one of them is released: the lease of user02/hold ended at '
                                '2026-10-28T10:15:00Z, so the lease reaper releases it within seconds.')


def test_holders_without_any_lease_are_waited_for_without_a_time(lab):
    target = claim('wants-gpu-0', requests=[request(selectors=[INDEX % '== 0'])])
    held = [allocate(claim('hold-%d' % n, namespace='team-x'), [(node, 'gpu-0')])
            for n, node in enumerate(('node1', 'node2', 'node3'))]
    answer = explain(lab, target, claims=held, pods=[pod_for(target)])
    assert answer['verdict'] == 'waits' and answer['first_lease_end'] is None
    assert answer['advice'] == 'Wait until one of them is released (no lease ends theirs by itself).'


def stuck_on_node3(lab, held):
    """user02's holder pod on node3 being deleted while node3 is NotReady (kubelet gone): it stays Terminating."""
    ref = {'resource': 'pods', 'name': 'holder', 'uid': 'uid-holder'}
    held[2]['status']['reservedFor'] = [ref]
    pod = {'metadata': {'name': 'holder', 'namespace': 'user02', 'uid': 'uid-holder',
                        'deletionTimestamp': '2026-10-28T09:50:00Z'},
           'spec': {'nodeName': 'node3', 'resourceClaims': [{'name': 'gpu', 'resourceClaimName': 'hold'}]},
           'status': {'phase': 'Running'}}
    nodes = copy.deepcopy(lab['nodes'])
    node3 = next(n for n in nodes if n['metadata']['name'] == 'node3')
    node3['status']['conditions'] = [{'type': 'Ready', 'status': 'Unknown'}]
    return pod, nodes


def test_a_holder_whose_pod_is_stuck_terminating_on_a_dead_node_is_named_so_and_is_not_waited_for(lab):
    target = claim('wants-gpu-0', requests=[request(selectors=[INDEX % '== 0'])])
    held = seats_and_others(lab)
    stuck, nodes = stuck_on_node3(lab, held)
    answer = explain(lab, target, claims=held, pods=[pod_for(target), stuck], nodes=nodes)
    assert answer['verdict'] == 'waits', answer
    assert ('gpu-0 on node3 by user02/hold for 7h45m (lease until 2026-10-28T10:15:00Z), held while pod user02/holder '
            'is being deleted on node3, which is NotReady (only a forced deletion of the pod frees it: ask the '
            'instructor)') in answer['cause'], answer['cause']
    # Its lease end frees nothing: the first lease the claim waits for is user01's.
    assert answer['first_lease_claim'] == 'user01/hold' and '(user01/hold)' in answer['advice'], answer['advice']
    # The same pod on a node that is Ready is being deleted as usual: an ordinary holder.
    ordinary = explain(lab, target, claims=held, pods=[pod_for(target), stuck])
    assert 'being deleted' not in ordinary['cause'] and ordinary['first_lease_claim'] == 'user02/hold'


def test_without_a_pod_the_claim_is_told_it_needs_one(lab):
    target = claim('lonely')
    assert explain(lab, target)['advice'] == 'It gets its devices when a pod uses it; no pod does yet.'
    assert explain(lab, target, pods=[pod_for(target)])['advice'] == diagnosis.FITS_NOW
    waiting = explain(lab, target, claims=fill_lab(lab))
    assert waiting['verdict'] == 'waits' and waiting['advice'].endswith(' ' + diagnosis.NO_POD)


def test_constraints_met_once_gpus_are_free_wait_for_the_holders(lab):
    held = fill_lab(lab, keep_free={('node1', 'gpu-1'), ('node2', 'gpu-2'), ('node3', 'gpu-3')})
    target = claim('two', requests=[request('a'), request('b')],
                   constraints=[{'requests': ['a', 'b'], 'matchAttribute': 'gpu.example.com/model'}])
    answer = explain(lab, target, claims=held, pods=[pod_for(target)])
    assert (answer['reason'], answer['verdict']) == ('requests_do_not_fit', 'waits')
    assert 'some are in use: gpu-0 on node1 by user01/hold for ' in answer['cause']
    assert answer['advice'].startswith('Wait until one of them is released: the ')


@pytest.mark.parametrize('order', [('big', 'small'), ('small', 'big')])
def test_first_available_waits_when_one_alternative_would_fit_once_free(lab, order):
    alternatives = {'big': {'name': 'big', 'deviceClassName': DRIVER,
                            'selectors': [{'cel': {'expression': MEMORY % '100Gi'}}]},
                    'small': {'name': 'small', 'deviceClassName': DRIVER}}
    target = claim('fallback', requests=[{'name': 'gpu', 'firstAvailable': [alternatives[n] for n in order]}])
    answer = explain(lab, target, claims=fill_lab(lab), pods=[pod_for(target)])
    assert answer['verdict'] == 'waits', answer['sentence']
    assert answer['cause'].startswith('none of the 2 alternatives of request gpu can be served: ')
    assert answer['advice'].startswith('Wait until one of them is released')


def test_one_request_that_never_fits_makes_the_claim_never_fit(lab):
    target = claim('pair', requests=[request('a'), request('b', selectors=[MEMORY % '100Gi'])])
    answer = explain(lab, target, claims=fill_lab(lab), pods=[pod_for(target)])
    assert (answer['verdict'], answer['reason']) == ('never_fits', 'no_matching_device'), answer['sentence']


def test_tainted_and_quota_say_the_action_apart_from_the_cause(lab):
    rule = {'metadata': {'name': 'maint'}, 'spec': {'deviceSelector': {'driver': DRIVER},
                                                    'taint': {'key': 'maintenance', 'effect': 'NoSchedule'}}}
    tainted = explain(lab, claim('any'), device_taint_rules=[rule])
    assert (tainted['verdict'], tainted['action']) == ('blocked', 'instructor')
    assert tainted['cause'].endswith('which the claim does not tolerate.')
    assert tainted['advice'] == 'Ask the instructor when the taint is lifted, or whether the request may tolerate it.'
    over = explain(lab, claim('new', namespace='user04', uid=False))
    assert (over['reason'], over['verdict'], over['action']) == ('quota_exceeded', 'over_quota', 'change')
    assert over['cause'].endswith('so 1 more do not fit.')
    assert over['advice'].startswith('Release a claim of the namespace first')


def test_pending_claims_that_ask_alike_share_their_diagnosis(lab):
    held = fill_lab(lab)
    waiting = [claim('wait-%02d' % i, namespace='user%02d' % (30 + i)) for i in range(4)]
    data = dict(lab, claims=held + waiting)
    data.pop('claim_templates')
    answers = dra_explain.explain_pending(now=NOW, lease_max='8h', **data)
    assert len({(a['verdict'], a['sentence']) for a in answers}) == 1 and answers[0]['verdict'] == 'waits'


def test_a_claim_whose_pod_is_gated_or_for_another_scheduler_does_not_share_its_answer(lab):
    alike = [claim('gpu', namespace=seat) for seat in ('user31', 'user32', 'user33')]
    pods = [pod_for(c) for c in alike]
    pods[0]['spec']['schedulerName'] = 'my-scheduler'
    pods[1]['spec']['schedulingGates'] = [{'name': 'example.com/queue'}]
    data = dict(lab, claims=alike, pods=pods)
    data.pop('claim_templates')
    answers = dict((a['claim'], a) for a in dra_explain.explain_pending(now=NOW, lease_max='8h', **data))
    assert answers['user31/gpu']['verdict'] == 'other_scheduler' and 'pod user31/train-1' in answers['user31/gpu']['sentence']
    assert answers['user32/gpu']['verdict'] == 'gated' and 'pod user32/train-1' in answers['user32/gpu']['sentence']
    assert answers['user33/gpu']['verdict'] == 'fits_now'


def test_the_scheduler_message_is_read_apart():
    target = claim('c')
    pod = pod_for(target)
    assert diagnosis.scheduler_message(pod).startswith('0/3 nodes are available: 3 cannot allocate all claims.')
    pod['status']['conditions'][0]['status'] = 'True'
    assert diagnosis.scheduler_message(pod) is None and diagnosis.scheduler_message(None) is None


def test_holder_phrases_are_what_the_board_finds_its_ages_in():
    seat = {'device': 'gpu-3', 'node': 'node1', 'pool': 'node1', 'seat': 'user07', 'claim': 'user07/gpu-x',
            'age': '12m', 'lease_until': '2026-10-28T11:00:00Z'}
    other = dict(seat, seat=None, namespace='secret', claim='secret/c', lease_until=None, age=None)
    assert diagnosis.holder_phrase(seat) == ('gpu-3 on node1 by user07/gpu-x for ', '12m',
                                             ' (lease until 2026-10-28T11:00:00Z)')
    assert diagnosis.holder_phrase(other) == ('gpu-3 on node1 in use outside the seats for ', 'unknown time', '')
    many = [copy.deepcopy(seat) for _seat in range(5)]
    assert diagnosis.holders_text(many).endswith(', and 2 more')


def gated_pod(target, gates=('example.com/queue',)):
    """A pod the scheduler has not tried: it has scheduling gates (no PodScheduled condition)."""
    pod = pod_for(target)
    pod['spec']['schedulingGates'] = [{'name': g} for g in gates]
    pod['status'] = {'phase': 'Pending'}
    return pod


def test_a_gated_pod_waits_for_its_gates_whether_its_claim_fits_now_or_waits(lab):
    target = claim('gated')
    for claims in (lab['claims'], fill_lab(lab)):
        answer = explain(lab, target, claims=claims, pods=[gated_pod(target)])
        assert (answer['verdict'], answer['action'], answer['headline']) == ('gated', 'wait', 'waits for its scheduling gates')
        assert answer['advice'] == ('The scheduler does not try pod user05/train-1 while it has the scheduling gate '
                                    'example.com/queue: whoever added it (a queue such as Kueue, an operator) removes it '
                                    'when the pod may start; ask the instructor if it stays.'), answer['advice']
    two = explain(lab, target, pods=[gated_pod(target, ('a', 'b'))])
    assert 'the scheduling gates a, b: whoever added them' in two['advice'] and two['advice'].endswith('if they stay.')
    # Without the gate, the same claim fits now; a gated claim that never fits still never fits.
    assert explain(lab, target, pods=[pod_for(target)])['verdict'] == 'fits_now'
    big = claim('big', requests=[request(selectors=[MEMORY % '100Gi'])])
    assert explain(lab, big, pods=[gated_pod(big)])['verdict'] == 'never_fits'


def test_a_pod_naming_a_scheduler_that_does_not_run_is_told_to_change_it_not_that_it_fits(lab):
    target = claim('elsewhere')
    for claims in (lab['claims'], fill_lab(lab)):
        pod = pod_for(target)
        pod['spec']['schedulerName'] = 'my-scheduler'
        pod['status'] = {'phase': 'Pending'}
        answer = explain(lab, target, claims=claims, pods=[pod])
        assert (answer['verdict'], answer['action'], answer['headline']) == (
            'other_scheduler', 'change', 'waits for a scheduler that does not run')
        assert answer['advice'] == ("The lab's scheduler (default-scheduler) never tries pod user05/train-1: its "
                                    "schedulerName is my-scheduler, a scheduler that does not run in the lab. Change "
                                    "the pod: drop its schedulerName (or set it to default-scheduler); ask the "
                                    "instructor if my-scheduler should run."), answer['advice']
        assert answer['sentence'] == '%s %s' % (answer['cause'], answer['advice'])
        # Gates or not, the scheduler that does not run is what keeps it waiting.
        pod['spec']['schedulingGates'] = [{'name': 'example.com/queue'}]
        assert explain(lab, target, claims=claims, pods=[pod])['verdict'] == 'other_scheduler'
    # Nodes the lab blocks for now (cordoned) do not matter to a pod no scheduler tries.
    cordoned = [dict(n, spec={'unschedulable': True}) for n in lab['nodes']]
    assert explain(lab, target, pods=[pod], nodes=cordoned)['verdict'] == 'other_scheduler'
    assert explain(lab, target, pods=[pod_for(target)], nodes=cordoned)['verdict'] == 'blocked'
    # The lab's own scheduler, named or not, tries the pod; a claim that never fits still never fits.
    named = pod_for(target)
    named['spec']['schedulerName'] = 'default-scheduler'
    assert explain(lab, target, pods=[named])['verdict'] == 'fits_now'
    big = claim('big', requests=[request(selectors=[MEMORY % '100Gi'])])
    pod = pod_for(big)
    pod['spec']['schedulerName'] = 'my-scheduler'
    assert explain(lab, big, pods=[pod])['verdict'] == 'never_fits'


def test_a_pod_whose_node_affinity_matches_no_node_never_fits_and_is_told_to_change(lab):
    target = claim('nowhere')
    pod = pod_for(target)
    pod['spec']['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
        {'matchExpressions': [{'key': 'dralab.test/zone', 'operator': 'In', 'values': ['nowhere']}]}]}}}
    answer = explain(lab, target, pods=[pod])
    assert (answer['verdict'], answer['reason']) == ('never_fits', 'nodes_not_ready')
    assert "is not selected by the pod's node affinity" in answer['cause']
    assert answer['advice'] == ('Change the pod: its nodeName, nodeSelector or node affinity keeps it off the nodes '
                                'that have these devices.')
    assert 'preferred node affinity of the pod' not in answer['not_modeled']


def said_pod(target, message):
    pod = pod_for(target)
    pod['status']['conditions'][0]['message'] = message
    return pod


CPU = ('0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims '
       'found for incoming pod.')


def test_a_claim_that_fits_whose_pod_fits_no_node_is_told_to_change_the_pod(lab):
    """The explainer models the devices and where the pod may go, not its cpu, memory, ports or inter-pod affinity:
    when the scheduler says those keep the pod off every node, that is the answer, not "fits now"."""
    target = claim('hungry')
    answer = explain(lab, target, pods=[said_pod(target, CPU)])
    assert (answer['verdict'], answer['action'], answer['headline']) == (
        'pod_unschedulable', 'change', 'fits, but its pod fits no node')
    assert answer['sentence'] == (
        'can be allocated now (for example gpu-2 on node1), but the scheduler finds no node for pod user05/train-1 '
        'itself: 3 Insufficient cpu. Change the pod: ask for what a node has room for (its cpu, memory and ports) and '
        'relax its affinity and spread rules; ask the instructor if the nodes should have room.'), answer['sentence']
    mixed = '0/3 nodes are available: 1 Insufficient memory, 2 node(s) didn\'t match pod anti-affinity rules. preemption: x'
    assert diagnosis.pod_blockers(mixed) == ['1 Insufficient memory', "2 node(s) didn't match pod anti-affinity rules"]
    assert explain(lab, target, pods=[said_pod(target, mixed)])['verdict'] == 'pod_unschedulable'
    still = ("0/3 nodes are available: 3 node(s) didn't match pod affinity rules. still not schedulable, preemption: "
             "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    assert diagnosis.pod_blockers(still) == ["3 node(s) didn't match pod affinity rules"]
    # The claims' own refusal, or a message that still names them for some nodes (older than GPUs freed since), or
    # reasons for only some of the nodes: the devices decide, as before.
    for message in (pod_for(target)['status']['conditions'][0]['message'],
                    '0/3 nodes are available: 1 Insufficient cpu, 2 cannot allocate all claims. preemption: x',
                    '0/3 nodes are available: 2 Insufficient cpu. preemption: x'):
        assert explain(lab, target, pods=[said_pod(target, message)])['verdict'] == 'fits_now', message
    # A claim that waits, or never fits, is told so whatever else keeps its pod off the nodes.
    assert explain(lab, target, claims=fill_lab(lab), pods=[said_pod(target, CPU)])['verdict'] == 'waits'
    big = claim('big', requests=[request(selectors=[MEMORY % '100Gi'])])
    assert explain(lab, big, pods=[said_pod(big, CPU)])['verdict'] == 'never_fits'
