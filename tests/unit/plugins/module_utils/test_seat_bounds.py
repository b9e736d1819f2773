# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one seat may keep: the kinds derived from the RBAC rules, their counts, the bytes, the lab's own needs."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import bounds
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import baseline_names

# The rules with create of the ClusterRole edit as kube-apiserver 1.35.4 aggregates it (read from the harness).
EDIT_RULES = [
    {'apiGroups': [''], 'resources': ['pods', 'pods/attach', 'pods/exec', 'pods/portforward', 'pods/proxy'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': [''], 'resources': ['pods/eviction'], 'verbs': ['create']},
    {'apiGroups': [''], 'resources': ['configmaps', 'persistentvolumeclaims', 'replicationcontrollers',
                                      'replicationcontrollers/scale', 'secrets', 'serviceaccounts', 'services',
                                      'services/proxy'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': [''], 'resources': ['serviceaccounts/token'], 'verbs': ['create']},
    {'apiGroups': ['', 'events.k8s.io'], 'resources': ['events'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['apps'], 'resources': ['daemonsets', 'deployments', 'deployments/rollback', 'deployments/scale',
                                          'replicasets', 'replicasets/scale', 'statefulsets', 'statefulsets/scale'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['autoscaling'], 'resources': ['horizontalpodautoscalers'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['batch'], 'resources': ['cronjobs', 'jobs'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['extensions'], 'resources': ['daemonsets', 'deployments', 'ingresses', 'networkpolicies'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['policy'], 'resources': ['poddisruptionbudgets'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['networking.k8s.io'], 'resources': ['ingresses', 'networkpolicies'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': ['coordination.k8s.io'], 'resources': ['leases'],
     'verbs': ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']},
    {'apiGroups': ['resource.k8s.io'], 'resources': ['resourceclaims', 'resourceclaimtemplates'],
     'verbs': ['create', 'delete', 'deletecollection', 'patch', 'update']},
    {'apiGroups': [''], 'resources': ['namespaces', 'limitranges', 'resourcequotas'], 'verbs': ['get', 'list']},
]
# What a 1.35 API server serves with create, namespaced (no extensions group; roles are served, edit may not).
SERVED = [('', r) for r in ('pods', 'configmaps', 'persistentvolumeclaims', 'replicationcontrollers', 'secrets',
                            'serviceaccounts', 'services', 'events', 'limitranges', 'resourcequotas', 'podtemplates',
                            'pods/eviction', 'serviceaccounts/token')]
SERVED += [('apps', r) for r in ('daemonsets', 'deployments', 'replicasets', 'statefulsets', 'controllerrevisions')]
SERVED += [('autoscaling', 'horizontalpodautoscalers'), ('batch', 'cronjobs'), ('batch', 'jobs'),
           ('events.k8s.io', 'events'), ('policy', 'poddisruptionbudgets'), ('networking.k8s.io', 'ingresses'),
           ('networking.k8s.io', 'networkpolicies'), ('coordination.k8s.io', 'leases'),
           ('resource.k8s.io', 'resourceclaims'), ('resource.k8s.io', 'resourceclaimtemplates'),
           ('rbac.authorization.k8s.io', 'roles'), ('rbac.authorization.k8s.io', 'rolebindings')]
SEAT_KINDS = ['configmaps', 'cronjobs.batch', 'daemonsets.apps', 'deployments.apps', 'events', 'events.events.k8s.io',
              'horizontalpodautoscalers.autoscaling', 'ingresses.networking.k8s.io', 'jobs.batch',
              'leases.coordination.k8s.io', 'networkpolicies.networking.k8s.io', 'persistentvolumeclaims',
              'poddisruptionbudgets.policy', 'pods', 'replicasets.apps', 'replicationcontrollers',
              'resourceclaims.resource.k8s.io', 'resourceclaimtemplates.resource.k8s.io', 'secrets',
              'serviceaccounts', 'services', 'statefulsets.apps']


def test_the_kinds_come_from_the_rules_and_what_the_api_serves():
    kinds = bounds.creatable_kinds(EDIT_RULES, SERVED)
    assert kinds == SEAT_KINDS
    # Read-only rules, unserved groups (extensions), subresources and kinds no rule creates are not kinds to count.
    assert not {'limitranges', 'roles.rbac.authorization.k8s.io', 'podtemplates', 'pods/eviction'} & set(kinds)


def test_a_kind_aggregated_into_edit_later_is_counted_too():
    rules = EDIT_RULES + [{'apiGroups': ['example.com'], 'resources': ['widgets'], 'verbs': ['*']}]
    kinds = bounds.creatable_kinds(rules, SERVED + [('example.com', 'widgets')])
    assert 'widgets.example.com' in kinds


def test_wildcards_grant_and_resource_names_do_not():
    served = [('', 'configmaps'), ('apps', 'deployments')]
    assert bounds.creatable_kinds([{'apiGroups': ['*'], 'resources': ['*'], 'verbs': ['create']}], served) == [
        'configmaps', 'deployments.apps']
    # A create limited by name never allows a create (the new object's name is not known to RBAC).
    named = [{'apiGroups': [''], 'resources': ['configmaps'], 'verbs': ['create'], 'resourceNames': ['mine']}]
    assert bounds.creatable_kinds(named, served) == []


def test_counts_leave_out_events_and_the_claims():
    counts = bounds.object_counts(SEAT_KINDS, 5, {'pods': 10})
    assert 'events' not in counts and 'events.events.k8s.io' not in counts
    assert bounds.CLAIMS_KIND not in counts  # dralab_gpus_per_seat
    assert counts['pods'] == 10 and counts['configmaps'] == 5 and len(counts) == 19
    hard = bounds.count_hard(counts)
    assert hard['count/deployments.apps'] == '5' and hard['count/configmaps'] == '5'
    # The lab's defaults: every object at 1.5 MiB, the claim too.
    hard['count/resourceclaims.resource.k8s.io'] = '1'
    assert bounds.byte_ceiling(dict(hard, pods='10', **{'requests.cpu': '4'})) == 101 * 1536 * 1024


@pytest.mark.parametrize('by_kind, message', [
    ({'deployments': 3}, 'quota_objects_by_kind names deployments, which the seats cannot create or the quota '
                         'cannot count (the kinds their RBAC lets them create: configmaps, cronjobs.batch'),
    ({'events': 3}, 'quota_objects_by_kind names events'),
    ({bounds.CLAIMS_KIND: 3}, "a seat's claims are its GPUs (dralab_gpus_per_seat)"),
    ({'pods': -1}, 'quota_objects_by_kind[pods] must be 0 or more, got -1'),
    ({'pods': 'many'}, "quota_objects_by_kind[pods] must be a whole number, got 'many'"),
])
def test_bad_counts_are_refused_naming_them(by_kind, message):
    with pytest.raises(ValueError) as info:
        bounds.object_counts(SEAT_KINDS, 5, by_kind)
    assert message in str(info.value)


def test_the_lab_needs_its_own_objects_and_the_pods_of_can_has_gpu_and_the_demos():
    wanted = bounds.needs(baseline_names('user01'), gpus_per_seat=1, demo_pods=2)
    assert wanted['configmaps'] == 2 and wanted['secrets'] == 1 and wanted['serviceaccounts'] == 2
    assert wanted['rolebindings.rbac.authorization.k8s.io'] == 2  # counted only when the seats may create them
    assert wanted['pods'] == 2
    assert bounds.needs(baseline_names('user01'), gpus_per_seat=3)['pods'] == 6
    assert bounds.count_problems(5, {'pods': 10}, wanted) == []
    problems = bounds.count_problems(1, {'pods': 1, 'configmaps': 4}, wanted)
    assert problems == [
        ('workshop_users_quota_objects_by_kind[pods]', '1 pods per seat is fewer than the workshop itself needs in '
         "every seat namespace (2: what the lab keeps there, and the pods of can-has-gpu and the demos); the lab's own "
         'objects would be refused'),
        ('workshop_users_quota_objects', '1 of each kind is fewer than the workshop itself needs in every seat '
         'namespace (what the lab keeps there, and the pods of can-has-gpu and the demos: '
         "rolebindings.rbac.authorization.k8s.io 2, serviceaccounts 2); the lab's own objects would be refused")]
    assert bounds.count_problems('x', {}, wanted) == [('workshop_users_quota_objects', "must be a whole number, got 'x'")]
    assert bounds.count_problems(5, [], wanted)[0][0] == 'workshop_users_quota_objects_by_kind'
    assert bounds.count_problems(5, {'Deploy ments': 5}, wanted)[0][1].startswith('is not a kind name')


def test_a_grace_period_below_the_kubernetes_default_is_refused():
    assert bounds.grace_problem(30) is None and bounds.grace_problem('600') is None
    assert bounds.grace_problem(29) == ('29 s is less than the 30 s Kubernetes gives every pod that names no '
                                        "terminationGracePeriodSeconds: the demos' pods would be refused")
    assert bounds.grace_problem('soon') == "must be a whole number of seconds, got 'soon'"
