"""The admission policies of the seats: their shape (the integration tier proves what they refuse)."""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model
from ansible_collections.dralab.workshop.plugins.module_utils.seat import policies as seat_policies


def by_kind_and_name(objects):
    return {(o['kind'], o['metadata']['name']): o for o in objects}


def test_every_policy_has_a_binding_that_denies():
    objects = by_kind_and_name(seat_policies.seat_policies())
    assert len(objects) == 2 * len(seat_policies.POLICY_NAMES) == 20
    for name in seat_policies.POLICY_NAMES:
        policy = objects[('ValidatingAdmissionPolicy', name)]
        binding = objects[('ValidatingAdmissionPolicyBinding', name)]
        assert policy['apiVersion'] == binding['apiVersion'] == 'admissionregistration.k8s.io/v1'
        assert policy['spec']['failurePolicy'] == 'Fail'
        assert binding['spec']['policyName'] == name and binding['spec']['validationActions'] == ['Deny']
        assert policy['metadata']['labels'] == seat_model.managed_labels()


def test_policies_select_seat_namespaces_by_the_namespace_labels():
    selector = {'matchLabels': {seat_model.MANAGED_BY_LABEL: seat_model.MANAGED_BY},
                'matchExpressions': [{'key': seat_model.SEAT_LABEL, 'operator': 'Exists'}]}
    for obj in seat_policies.seat_policies():
        if obj['kind'] == 'ValidatingAdmissionPolicy':
            assert obj['spec']['matchConstraints']['namespaceSelector'] == selector
            assert 'objectSelector' not in obj['spec']['matchConstraints']  # never labels a seat could set
        else:
            assert obj['spec']['matchResources']['namespaceSelector'] == selector


def test_claim_count_policy_reads_the_seats_own_quota():
    objects = by_kind_and_name(seat_policies.seat_policies())
    policy = objects[('ValidatingAdmissionPolicy', seat_policies.CLAIM_COUNT_POLICY)]
    binding = objects[('ValidatingAdmissionPolicyBinding', seat_policies.CLAIM_COUNT_POLICY)]
    assert policy['spec']['paramKind'] == {'apiVersion': 'v1', 'kind': 'ResourceQuota'}
    # No namespace: the quota of the request's namespace.
    assert binding['spec']['paramRef'] == {'name': seat_model.QUOTA_NAME, 'parameterNotFoundAction': 'Deny'}
    assert seat_model.CLAIM_COUNT_KEY in policy['spec']['variables'][0]['expression']


def test_size_policies_check_claims_and_templates_on_create():
    objects = by_kind_and_name(seat_policies.seat_policies())
    for name, resource, spec in ((seat_policies.CLAIM_SIZE_POLICY, 'resourceclaims', 'object.spec'),
                                 (seat_policies.TEMPLATE_SIZE_POLICY, 'resourceclaimtemplates', 'object.spec.spec')):
        policy = objects[('ValidatingAdmissionPolicy', name)]
        [rule] = policy['spec']['matchConstraints']['resourceRules']
        assert rule['resources'] == [resource] and rule['operations'] == ['CREATE']
        assert policy['spec']['variables'][0]['expression'].startswith('has(%s.devices)' % spec)
        assert policy['spec']['validations'][1]['expression'] == 'variables.devices <= 1'


def size_policies(companions=()):
    objects = by_kind_and_name(seat_policies.seat_policies(companion_classes=companions))
    return [objects[('ValidatingAdmissionPolicy', name)]
            for name in (seat_policies.CLAIM_SIZE_POLICY, seat_policies.TEMPLATE_SIZE_POLICY)]


def variables_of(policy):
    return dict((v['name'], v['expression']) for v in policy['spec']['variables'])


def test_without_companion_classes_every_device_counts_towards_the_one_device():
    for policy in size_policies():
        assert variables_of(policy)['companionClasses'] == '[]'
        assert [v['expression'] for v in policy['spec']['validations']] == ['!variables.asksAll',
                                                                            'variables.devices <= 1']


def test_a_companion_class_allows_one_device_of_it_beside_the_gpu():
    for policy in size_policies(['nic.example.com']):
        found = variables_of(policy)
        assert found['companionClasses'] == "['nic.example.com']"
        # A request is a companion by its own class; each firstAvailable alternative by its own class too.
        assert '!variables.companionClasses.exists(c, has(r.exactly.deviceClassName)' in found['perRequest']
        assert '!variables.companionClasses.exists(c, has(s.deviceClassName)' in found['perRequest']
        assert found['companionsPerRequest'].startswith('variables.requests.map(r, has(r.exactly) ? ((variables.'
                                                        'companionClasses.exists(')
        assert [v['expression'] for v in policy['spec']['validations']] == [
            '!variables.asksAll', 'variables.devices <= 1',
            'variables.companions <= %d' % seat_policies.COMPANIONS_PER_CLAIM]
        assert 'nic.example.com' in policy['metadata']['annotations']['dralab.workshop/description']


def test_grace_policies_cap_pods_and_every_pod_template_at_the_maximum():
    objects = by_kind_and_name(seat_policies.seat_policies(pod_grace_max=45))
    expected = {
        seat_policies.POD_GRACE_POLICY: ([('', ['pods'], ['CREATE'])], 'object.spec'),
        seat_policies.TEMPLATE_GRACE_POLICY: (
            [('apps', ['deployments', 'replicasets', 'statefulsets', 'daemonsets'], ['CREATE', 'UPDATE']),
             ('batch', ['jobs'], ['CREATE', 'UPDATE']), ('', ['replicationcontrollers'], ['CREATE', 'UPDATE'])],
            'object.spec.template.spec'),
        seat_policies.CRONJOB_GRACE_POLICY: ([('batch', ['cronjobs'], ['CREATE', 'UPDATE'])],
                                             'object.spec.jobTemplate.spec.template.spec'),
    }
    for name, (rules, spec) in expected.items():
        policy = objects[('ValidatingAdmissionPolicy', name)]
        assert [(r['apiGroups'][0], r['resources'], r['operations'])
                for r in policy['spec']['matchConstraints']['resourceRules']] == rules
        [validation] = policy['spec']['validations']
        field = spec + '.terminationGracePeriodSeconds'
        assert validation['expression'].endswith(') || %s <= 45' % field)
        assert 'has(%s)' % field in validation['expression']
        assert 'at most 45 s to stop' in validation['messageExpression']


def test_seats_may_not_write_events_which_no_quota_counts():
    objects = by_kind_and_name(seat_policies.seat_policies())
    policy = objects[('ValidatingAdmissionPolicy', seat_policies.EVENTS_POLICY)]
    assert [(r['apiGroups'], r['resources']) for r in policy['spec']['matchConstraints']['resourceRules']] == [
        ([''], ['events']), (['events.k8s.io'], ['events'])]
    # Any ServiceAccount of the seat's own namespace: the seat's, and any it made or impersonates.
    assert policy['spec']['validations'][0]['expression'] == (
        "!request.userInfo.username.startsWith('system:serviceaccount:' + request.namespace + ':')")
