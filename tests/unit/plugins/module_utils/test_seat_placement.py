"""The placement and toleration policies of the seats: their shape and allow lists (the integration tier,
tests/integration/test_seat_placement.py and features/test_seat_device_taints.py, proves what they refuse)."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import features
from ansible_collections.dralab.workshop.plugins.module_utils.seat import placement
from ansible_collections.dralab.workshop.plugins.module_utils.seat import policies as seat_policies


def by_name(objects, kind='ValidatingAdmissionPolicy'):
    return {o['metadata']['name']: o for o in objects if o['kind'] == kind}


def test_every_placement_policy_has_a_binding_that_denies_in_the_seat_namespaces():
    objects = placement.placement_policies()
    policies, bindings = by_name(objects), by_name(objects, 'ValidatingAdmissionPolicyBinding')
    assert sorted(policies) == sorted(bindings) == sorted(placement.POLICY_NAMES)
    assert not set(placement.POLICY_NAMES) & set(seat_policies.POLICY_NAMES)
    for name, policy in policies.items():
        assert policy['spec']['failurePolicy'] == 'Fail'
        assert policy['spec']['matchConstraints']['namespaceSelector'] == seat_policies.seat_namespace_selector()
        assert bindings[name]['spec']['validationActions'] == ['Deny']


def test_pod_policies_cover_pods_every_pod_template_and_cronjobs():
    policies = by_name(placement.placement_policies())
    pods = policies[placement.POD_PLACEMENT_POLICY]['spec']['matchConstraints']['resourceRules']
    assert pods == [{'apiGroups': [''], 'apiVersions': ['*'], 'operations': ['CREATE', 'UPDATE'],
                     'resources': ['pods']}]
    templates = policies[placement.TEMPLATE_PLACEMENT_POLICY]['spec']['matchConstraints']['resourceRules']
    covered = {(group, resource) for rule in templates for group in rule['apiGroups'] for resource in rule['resources']}
    assert covered == set(seat_policies.POD_TEMPLATE_OWNERS)
    cron = policies[placement.CRONJOB_PLACEMENT_POLICY]
    assert cron['spec']['matchConstraints']['resourceRules'][0]['resources'] == ['cronjobs']
    assert 'object.spec.jobTemplate.spec.template.spec.tolerations' in cron['spec']['variables'][1]['expression']
    # nodeName: only a pod's creation (the scheduler's binding sets it later); DaemonSets: only the template policy.
    pod_checks = [v['expression'] for v in policies[placement.POD_PLACEMENT_POLICY]['spec']['validations']]
    assert pod_checks[0].startswith("!(has(object.spec)) || request.operation != 'CREATE' || ")
    assert not any('daemonsets' in check for check in pod_checks)
    assert any('daemonsets' in v['expression'] for v in policies[placement.TEMPLATE_PLACEMENT_POLICY]['spec']
               ['validations'])


def test_the_tolerations_kubernetes_adds_are_always_allowed_and_extra_ones_follow():
    policies = by_name(placement.placement_policies([{'key': 'example.com/gpu-node', 'effect': 'NoSchedule'},
                                                     {'key': 'node.kubernetes.io/not-ready', 'effect': 'NoExecute'}]))
    allowed = policies[placement.POD_PLACEMENT_POLICY]['spec']['variables'][0]
    assert allowed == {'name': 'allowed', 'expression': (
        "[{'key': 'node.kubernetes.io/not-ready', 'effect': 'NoExecute'}, "
        "{'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}, "
        "{'key': 'example.com/gpu-node', 'effect': 'NoSchedule'}]")}
    assert placement.CONTROL_PLANE_TAINT not in str(policies)


def test_device_tolerations_are_checked_in_exactly_and_first_available():
    policies = by_name(placement.placement_policies(device_tolerations=[{'key': 'dralab.workshop/maintenance'}]))
    claim = policies[placement.CLAIM_TOLERATIONS_POLICY]['spec']
    template = policies[placement.CLAIM_TEMPLATE_TOLERATIONS_POLICY]['spec']
    assert claim['variables'][0]['expression'] == "[{'key': 'dralab.workshop/maintenance', 'effect': ''}]"
    check = claim['validations'][0]['expression']
    assert 'r.exactly.tolerations.all(t, ' in check and 's.tolerations.all(t, ' in check
    assert 'object.spec.devices.requests' in claim['variables'][1]['expression']
    assert 'object.spec.spec.devices.requests' in template['variables'][1]['expression']
    assert claim['matchConstraints']['resourceRules'][0]['resources'] == ['resourceclaims']
    assert template['matchConstraints']['resourceRules'][0]['resources'] == ['resourceclaimtemplates']


def test_without_an_allow_list_no_device_taint_is_tolerated():
    claim = by_name(placement.placement_policies())[placement.CLAIM_TOLERATIONS_POLICY]
    assert claim['spec']['variables'][0]['expression'] == '[]'
    assert '(none)' in claim['spec']['validations'][0]['message']


def test_the_device_taints_demo_key_comes_with_its_feature():
    assert features.part(['device_taints'], 'device_tolerations') == [
        {'key': 'dralab.workshop/maintenance', 'effect': 'NoSchedule'}]
    assert features.part(['prioritized_list'], 'device_tolerations') == []


@pytest.mark.parametrize('entries,expected', [
    ([{'key': 'example.com/x'}], []),
    ([{'key': 'x', 'effect': 'NoExecute'}], []),
    ([{'effect': 'NoSchedule'}], [('f[0]', 'needs a key (a toleration without one tolerates every taint)')]),
    ([{'key': 'Bad Key'}], [('f[0]', "key 'Bad Key' is not a taint key such as example.com/maintenance")]),
    ([{'key': 'x', 'value': 'y'}], [('f[0]', 'has value; an entry has only key and effect')]),
    ([{'key': 'x', 'effect': 'None'}], [('f[0]', "effect 'None' is not one of NoSchedule, PreferNoSchedule, "
                                                 "NoExecute (or leave it out for any)")]),
    (['x'], [('f[0]', "must be a mapping with a key (and an effect), got 'x'")]),
    ({'key': 'x'}, [('f', 'must be a list of {key, effect} entries, got {"key": "x"}')]),
])
def test_allow_list_entries_are_checked_naming_them(entries, expected):
    assert placement.toleration_problems(entries, 'f') == expected


def test_a_bad_allow_list_fails_the_builder():
    with pytest.raises(ValueError, match=r'pod_tolerations\[0\]: needs a key'):
        placement.placement_policies([{'effect': 'NoSchedule'}])
    assert placement.toleration_problems([{'key': 'x', 'effect': 'None'}], 'f', placement.DEVICE_TAINT_EFFECTS) == []
