# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pods that wait for a ResourceClaim or ResourceClaimTemplate that does not exist (dra/pod_claims.py): a typo, a
template never made, a claim of another namespace; reported by dra_health (pod_claim_missing), in its report lines
and on the board. The kube-scheduler says nothing about such a pod (its DRA plugin keeps it out of the queue: no
PodScheduled condition, no event), so nothing else would."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import report as dra_report
from ansible_collections.dralab.workshop.plugins.module_utils.dra.pod_claims import missing_claims, pods_waiting
from test_dra_model import NOW, healthy_fixture  # pylint: disable=unused-import  # noqa: F401


def pod(namespace, name, node=None, phase='Pending', **entry):
    spec = {'resourceClaims': [dict(name='gpu', **entry)], 'containers': [{'name': 'main'}]}
    if node:
        spec['nodeName'] = node
    return {'metadata': {'name': name, 'namespace': namespace, 'uid': 'uid-%s-%s' % (namespace, name)},
            'spec': spec, 'status': {'phase': phase}}


def obj(kind, namespace, name):
    return {'kind': kind, 'metadata': {'name': name, 'namespace': namespace}}


CLAIMS = [obj('ResourceClaim', 'user05', 'gpu-claim'), obj('ResourceClaim', 'user05', 'other'),
          obj('ResourceClaim', 'user06', 'shared-gpu')]
TEMPLATES = [obj('ResourceClaimTemplate', 'user05', 'single-gpu')]


def test_a_typo_in_the_claim_name_names_the_claims_there_are():
    [found] = missing_claims([pod('user05', 'train', resourceClaimName='gpu-claimm')], CLAIMS, TEMPLATES)
    assert (found['namespace'], found['pod'], found['kind'], found['missing']) == \
        ('user05', 'train', 'ResourceClaim', 'gpu-claimm')
    assert (found['verdict'], found['action'], found['elsewhere']) == ('claim_missing', 'change', [])
    assert found['sentence'] == (
        'pod user05/train waits for ResourceClaim gpu-claimm (its resourceClaims entry gpu), which does not exist in '
        'namespace user05, so the pod stays Pending. Create ResourceClaim gpu-claimm in user05, or delete the pod '
        'and create it again with the right resourceClaimName (the claims of user05: gpu-claim, other; kubectl -n '
        'user05 get resourceclaims).')


def test_a_claim_of_another_namespace_is_said_to_be_there_but_out_of_reach():
    [found] = missing_claims([pod('user05', 'borrow', resourceClaimName='shared-gpu')], CLAIMS, TEMPLATES)
    assert found['elsewhere'] == ['user06']
    assert ('which does not exist in namespace user05; namespace user06 has one, but a pod can only use a '
            'ResourceClaim of its own namespace, so the pod stays Pending.') in found['sentence']


def test_a_missing_template_and_a_namespace_without_any():
    pods = [pod('user05', 'a', resourceClaimTemplateName='single-gpuu'),
            pod('user07', 'b', resourceClaimTemplateName='single-gpu')]
    first, second = missing_claims(pods, CLAIMS, TEMPLATES)
    assert first['kind'] == 'ResourceClaimTemplate' and first['missing'] == 'single-gpuu'
    assert 'right resourceClaimTemplateName (the templates of user05: single-gpu; kubectl -n user05 get ' \
        'resourceclaimtemplates)' in first['sentence']
    assert second['elsewhere'] == ['user05'] and 'user07 has no templates' in second['sentence']


def test_pods_that_are_fine_or_past_waiting_are_not_reported():
    made = pod('user05', 'made', resourceClaimTemplateName='gone-template')
    made['status']['resourceClaimStatuses'] = [{'name': 'gpu', 'resourceClaimName': 'gpu-claim'}]
    pods = [pod('user05', 'ok', resourceClaimName='gpu-claim'),
            pod('user05', 'ok-template', resourceClaimTemplateName='single-gpu'),  # its claim comes in a moment
            made,  # its claim was made: the template is no longer needed
            pod('user05', 'running', node='node1', phase='Running', resourceClaimName='deleted-since'),
            pod('user05', 'done', phase='Succeeded', resourceClaimName='deleted-since')]
    assert missing_claims(pods, CLAIMS, TEMPLATES) == []


def test_templates_not_read_are_not_judged():
    pods = [pod('user05', 'a', resourceClaimTemplateName='anything'), pod('user05', 'b', resourceClaimName='typo')]
    assert [f['pod'] for f in missing_claims(pods, CLAIMS, None)] == ['b']


def test_dra_health_the_report_and_the_board_report_them(healthy):
    healthy['pods'].append(pod('user05', 'train-typo', resourceClaimName='gpu-claimm'))
    healthy['pods'].append(pod('user05', 'train-template', resourceClaimTemplateName='no-such-template'))
    report = dra_health.analyze(now=NOW, **healthy)
    found = [p for p in report['problems'] if p['type'] == 'pod_claim_missing']
    assert [(p['object'], p['severity'], p['missing_kind'], p['missing'], p['verdict']) for p in found] == [
        ('Pod user05/train-template', 'warning', 'ResourceClaimTemplate', 'no-such-template', 'claim_missing'),
        ('Pod user05/train-typo', 'warning', 'ResourceClaim', 'gpu-claimm', 'claim_missing')]
    assert report['healthy'] is True  # a participant's typo is no breakage of the lab
    lines = dra_report.report_lines(report)
    assert '  WARNING Pod user05/train-typo: ' + found[1]['reason'] in lines
    board = board_build.build(healthy, now=NOW, board={})['board']
    shown = dict((p['object'], p) for p in board['problems'])
    assert shown['Pod user05/train-typo']['reason'] == [found[1]['reason']]
    assert shown['Pod user05/train-typo']['verdict'] == 'claim_missing'
    # Without the templates (not read), only the claim by name is judged.
    del healthy['claim_templates']
    assert [p['object'] for p in dra_health.analyze(now=NOW, **healthy)['problems']
            if p['type'] == 'pod_claim_missing'] == ['Pod user05/train-typo']
    assert [p['object'] for p in board_build.build(healthy, now=NOW)['report']['problems']
            if p['type'] == 'pod_claim_missing'] == ['Pod user05/train-typo']


# -- claims on a node the pod cannot go to; claims the API refused to make (pods_waiting) ----------------------------

def node(name, **spec):
    return {'metadata': {'name': name, 'labels': {'kubernetes.io/hostname': name}}, 'spec': spec,
            'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}


def allocated_on(namespace, name, node_name, *holders):
    claim = obj('ResourceClaim', namespace, name)
    claim['status'] = {
        'allocation': {'devices': {'results': [{'request': 'gpu', 'driver': 'gpu.example.com', 'pool': node_name,
                                                'device': 'gpu-0'}]},
                       'nodeSelector': {'nodeSelectorTerms': [{'matchFields': [
                           {'key': 'metadata.name', 'operator': 'In', 'values': [node_name]}]}]}},
        'reservedFor': [{'resource': 'pods', 'name': h, 'uid': 'uid-%s-%s' % (namespace, h)} for h in holders]}
    return claim


NODES = [node('node1'), node('node2')]
SHARED = allocated_on('user05', 'shared', 'node1', 'first')


def test_a_pod_kept_off_the_node_of_its_shared_claim_is_told_to_change():
    second = pod('user05', 'second', resourceClaimName='shared')
    second['spec']['nodeSelector'] = {'kubernetes.io/hostname': 'node2'}
    [found] = pods_waiting([second], [SHARED], [], NODES)
    assert (found['problem'], found['verdict'], found['action'], found['nodes']) == \
        ('pod_claim_unreachable', 'claim_elsewhere', 'change', ['node1'])
    assert found['sentence'] == (
        "pod user05/second uses claim shared, whose devices are on node1 (it got them for pod user05/first, which "
        "shares it), and the pod cannot go there: node1 is not selected by the pod's nodeSelector "
        "kubernetes.io/hostname=node2. Change the pod: let it run on node1 (its nodeName, nodeSelector or node "
        "affinity), or give it a claim of its own (a resourceClaimTemplateName) if it needs devices of its own.")
    # A pod that may go there, a pod bound already, a claim not allocated: nothing to say.
    free = pod('user05', 'third', resourceClaimName='shared')
    bound = dict(second, spec=dict(second['spec'], nodeName='node2'))
    assert pods_waiting([free, bound], [SHARED], [], NODES) == []
    assert pods_waiting([second], [obj('ResourceClaim', 'user05', 'shared')], [], NODES) == []


def test_a_pod_whose_claim_is_on_a_cordoned_node_is_the_instructors():
    nodes = [node('node1', unschedulable=True), node('node2')]
    [found] = pods_waiting([pod('user05', 'second', resourceClaimName='shared')], [SHARED], [], nodes)
    assert (found['verdict'], found['action']) == ('blocked', 'instructor')
    assert 'node1 is cordoned (unschedulable). Ask the instructor: the claim keeps its devices on node1' in found['sentence']


def event(namespace, pod_name, message, when='2026-10-28T09:59:00Z'):
    return {'kind': 'Event', 'metadata': {'name': '%s.1' % pod_name, 'namespace': namespace}, 'reason':
            'FailedResourceClaimCreation', 'type': 'Warning', 'message': message, 'lastTimestamp': when,
            'involvedObject': {'kind': 'Pod', 'namespace': namespace, 'name': pod_name}}


def test_a_claim_the_api_refused_to_make_from_a_template_says_the_refusal():
    old = pod('user05', 'two', resourceClaimTemplateName='single-gpu')
    old['metadata']['creationTimestamp'] = '2026-10-28T09:50:00Z'
    said = ('PodResourceClaim gpu: create ResourceClaim two-gpu-x: resourceclaims "two-gpu-x" is forbidden: '
            'ValidatingAdmissionPolicy ... denied request: a workshop seat asks for at most 1 device(s) per claim')
    [found] = pods_waiting([old], CLAIMS, TEMPLATES, NODES, [event('user05', 'two', said)], NOW)
    assert (found['problem'], found['verdict'], found['action'], found['refusal']) == \
        ('pod_claim_refused', 'refused', 'change', said)
    assert found['sentence'] == (
        'pod user05/two waits for its claim from ResourceClaimTemplate single-gpu (entry gpu), which the API refused '
        'to make: %s. Change the template to what the namespace may hold, or release a claim first if its quota is '
        'full; the controller tries again by itself, with a growing delay (delete the pod to retry at once).' % said)
    # Without the event (a seat that cannot read events, or the controller down) the pod is still reported.
    [quiet] = pods_waiting([old], CLAIMS, TEMPLATES, NODES, [], NOW)
    assert 'which was not made: the API refused it or the resource claim controller is not running' in quiet['sentence']
    # A pod just created (the controller makes its claim within a second) and a pod whose claim was made: nothing.
    young = dict(old, metadata=dict(old['metadata'], creationTimestamp='2026-10-28T09:59:55Z'))
    made = dict(old, status={'phase': 'Pending', 'resourceClaimStatuses': [{'name': 'gpu', 'resourceClaimName': 'other'}]})
    assert pods_waiting([young, made], CLAIMS, TEMPLATES, NODES, [event('user05', 'two', said)], NOW) == []


def test_dra_health_and_the_board_report_the_pods_waiting(healthy):
    second = pod('user05', 'second', resourceClaimName='shared')
    second['spec']['nodeName'] = None
    second['spec']['affinity'] = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {
        'nodeSelectorTerms': [{'matchFields': [{'key': 'metadata.name', 'operator': 'NotIn', 'values': ['node1']}]}]}}}
    data = dict(healthy, pods=healthy['pods'] + [second], claims=healthy['claims'] + [SHARED])
    report = dra_health.analyze(now=NOW, **data)
    [found] = [p for p in report['problems'] if p['object'] == 'Pod user05/second']
    assert (found['type'], found['verdict'], found['claim'], found['nodes']) == \
        ('pod_claim_unreachable', 'claim_elsewhere', 'shared', ['node1'])
    assert "node1 is not selected by the pod's node affinity" in found['reason']
    board = board_build.build(data, now=NOW, board={})['board']
    assert [p['verdict'] for p in board['problems'] if p['object'] == 'Pod user05/second'] == ['claim_elsewhere']
