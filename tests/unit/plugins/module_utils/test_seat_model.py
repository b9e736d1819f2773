# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seat objects: names, labels, RBAC, quota keys per DeviceClass, and the bulk list for 72 seats."""

from __future__ import annotations

import collections

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model
from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import generate_seat_names

CLASSES = ['gpu.example.com', 'gpu-40gi.example.com']
MANAGED = {'app.kubernetes.io/managed-by': 'dralab.workshop'}


def by_kind(objects):
    grouped = collections.defaultdict(list)
    for obj in objects:
        grouped[obj['kind']].append(obj)
    return grouped


def test_72_seats_build_one_object_list_with_the_expected_counts():
    seats = generate_seat_names(72)
    objects = seat_model.build_seat_objects(seats, CLASSES)
    kinds = collections.Counter(obj['kind'] for obj in objects)
    assert kinds == {'Namespace': 72, 'ServiceAccount': 72, 'Secret': 72, 'RoleBinding': 72, 'ResourceQuota': 72,
                     'LimitRange': 72, 'ClusterRole': 1, 'ClusterRoleBinding': 1}
    assert len(objects) == 72 * 6 + 2
    # Namespaces first, so every namespaced object that follows has its namespace.
    assert [obj['kind'] for obj in objects[:72]] == ['Namespace'] * 72
    names = [obj['metadata']['name'] for obj in objects[:72]]
    assert names[0] == 'user01' and names[-1] == 'user72'
    # Unique (kind, namespace, name): applying the list never overwrites an object with another.
    keys = [(o['kind'], o['metadata'].get('namespace'), o['metadata']['name']) for o in objects]
    assert len(set(keys)) == len(keys)


def test_every_object_is_labelled_and_seat_objects_name_their_seat():
    objects = seat_model.build_seat_objects(['user01', 'user02'], CLASSES)
    for obj in objects:
        labels = obj['metadata']['labels']
        assert labels['app.kubernetes.io/managed-by'] == 'dralab.workshop'
        namespace = obj['metadata'].get('namespace') or (obj['metadata']['name'] if obj['kind'] == 'Namespace' else None)
        if namespace:
            assert labels['dralab.workshop/seat'] == namespace
        else:
            assert 'dralab.workshop/seat' not in labels


def test_namespace_gets_pod_security_and_never_admin_access():
    ns = seat_model.namespace_object('user07')
    assert ns['metadata']['name'] == 'user07'
    assert ns['metadata']['labels'] == {
        'app.kubernetes.io/managed-by': 'dralab.workshop', 'dralab.workshop/seat': 'user07',
        'pod-security.kubernetes.io/enforce': 'baseline'}
    assert 'resource.kubernetes.io/admin-access' not in seat_model.namespace_object('user07', '')['metadata']['labels']
    assert 'pod-security.kubernetes.io/enforce' not in seat_model.namespace_object('user07', '')['metadata']['labels']


def test_rbac_binds_edit_in_the_namespace_and_one_reader_for_all_seats():
    grouped = by_kind(seat_model.build_seat_objects(['user01', 'user02', 'user03'], CLASSES))
    binding = grouped['RoleBinding'][0]
    assert binding['metadata']['namespace'] == 'user01'
    assert binding['roleRef'] == {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole', 'name': 'edit'}
    assert binding['subjects'] == [{'kind': 'ServiceAccount', 'name': 'user01', 'namespace': 'user01'}]
    role = grouped['ClusterRole'][0]
    assert role['metadata']['name'] == 'dralab-seat-dra-reader'
    verbs = set()
    resources = set()
    for rule in role['rules']:
        verbs.update(rule['verbs'])
        resources.update(rule['resources'])
    # Read only: a seat can never create DeviceClasses.
    assert verbs == {'get', 'list', 'watch'}
    assert resources == {'deviceclasses', 'resourceslices', 'devicetaintrules', 'nodes'}
    crb = grouped['ClusterRoleBinding'][0]
    assert crb['roleRef']['name'] == 'dralab-seat-dra-reader'
    assert crb['subjects'] == [{'kind': 'ServiceAccount', 'name': s, 'namespace': s} for s in ('user01', 'user02', 'user03')]


def test_reader_extra_rules_are_appended():
    extra = {'apiGroups': ['resource.k8s.io'], 'resources': ['resourceclaims'], 'verbs': ['get', 'list']}
    role = seat_model.reader_cluster_role(extra_rules=[extra])
    assert role['rules'][-1] == extra and len(role['rules']) == 3


def test_token_secret_is_opaque_and_empty():
    secret = seat_model.token_secret_object('user05')
    assert secret['type'] == 'Opaque'
    assert 'data' not in secret and 'stringData' not in secret
    assert secret['metadata']['name'] == 'dralab-seat-token' and secret['metadata']['namespace'] == 'user05'


def test_quota_has_one_devices_key_per_class_and_the_claim_count():
    hard = seat_model.quota_hard(CLASSES, devices_per_seat=1, gpus_per_seat=3)
    assert hard == {
        'gpu.example.com.deviceclass.resource.k8s.io/devices': '1',
        'gpu-40gi.example.com.deviceclass.resource.k8s.io/devices': '1',
        'count/resourceclaims.resource.k8s.io': '3',
    }


def test_quota_per_class_overrides_and_extra_keys():
    hard = seat_model.quota_hard(CLASSES, devices_per_seat=2, devices_per_class={'gpu-40gi.example.com': 0},
                                 gpus_per_seat=4, extra={'pods': 10, 'requests.cpu': '2'})
    assert hard['gpu.example.com.deviceclass.resource.k8s.io/devices'] == '2'
    assert hard['gpu-40gi.example.com.deviceclass.resource.k8s.io/devices'] == '0'
    assert hard['pods'] == '10' and hard['requests.cpu'] == '2'


def test_quota_without_classes_only_counts_claims():
    assert seat_model.quota_hard([], gpus_per_seat=2) == {'count/resourceclaims.resource.k8s.io': '2'}


@pytest.mark.parametrize('kwargs, message', [
    ({'devices_per_class': {'tpu.example.com': 1}}, 'devices_per_class names DeviceClasses that get no quota: tpu.example.com'),
    ({'devices_per_seat': -1}, 'devices_per_seat must be a whole number of 0 or more'),
    ({'devices_per_seat': 'two'}, 'devices_per_seat must be a whole number'),
    ({'gpus_per_seat': True}, 'gpus_per_seat must be a whole number'),
    ({'compute': {'pods': '10'}, 'extra': {'pods': 5}}, 'quota_extra may not redefine pods'),
    ({'extra': {'count/resourceclaims.resource.k8s.io': 5}}, 'quota_extra may not redefine count/resourceclaims'),
    ({'extra': {'pods': ''}}, 'quota_extra[pods] must be a quantity'),
])
def test_quota_errors_name_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message.replace('[', r'\[').replace(']', r'\]')):
        seat_model.quota_hard(CLASSES, **kwargs)


def test_bad_class_name_is_refused():
    with pytest.raises(ValueError, match='not a DNS-1123 subdomain'):
        seat_model.quota_hard(['GPU'])


def test_classes_are_deduplicated_in_order():
    objects = seat_model.build_seat_objects(['user01'], ['b.example.com', 'a.example.com', 'b.example.com'])
    quota = by_kind(objects)['ResourceQuota'][0]['spec']['hard']
    assert list(quota) == ['b.example.com.deviceclass.resource.k8s.io/devices',
                           'a.example.com.deviceclass.resource.k8s.io/devices',
                           'count/resourceclaims.resource.k8s.io']


@pytest.mark.parametrize('seats, message', [
    (['user01', 'user01'], 'seat 2: user01 is listed twice'),
    (['User01'], 'seat 1: '),
    (['root'], 'reserved'),
    ('user01', 'seats must be a list'),
])
def test_bad_seats_are_refused(seats, message):
    with pytest.raises(ValueError, match=message):
        seat_model.build_seat_objects(seats, CLASSES)


def test_bad_pod_security_level_is_refused():
    with pytest.raises(ValueError, match='pod_security must be one of'):
        seat_model.build_seat_objects(['user01'], CLASSES, pod_security='strict')


def namespace(name, labels=None):
    return {'metadata': {'name': name, 'labels': labels or {}}}


def test_namespace_findings():
    existing = [
        namespace('user01', dict(MANAGED, **{'dralab.workshop/seat': 'user01'})),
        namespace('user02', {'team': 'someone-else'}),
        namespace('user03', dict(MANAGED, **{'dralab.workshop/seat': 'user03', 'resource.kubernetes.io/admin-access': 'true'})),
        namespace('user09', dict(MANAGED, **{'dralab.workshop/seat': 'user09'})),
        namespace('kube-system'),
        namespace('demo', {'dralab.workshop/seat': 'demo'}),  # not ours: no managed-by label
    ]
    findings = seat_model.namespace_findings(['user01', 'user02', 'user03', 'user04'], existing)
    assert findings == {'foreign': ['user02'], 'admin_access': ['user03'], 'stale': ['user09']}


def test_seat_of_and_is_managed():
    ours = namespace('user01', dict(MANAGED, **{'dralab.workshop/seat': 'user01'}))
    assert seat_model.is_managed(ours) and seat_model.seat_of(ours) == 'user01'
    assert seat_model.seat_of(namespace('user01', {'dralab.workshop/seat': 'user01'})) is None
    assert not seat_model.is_managed({})


def test_compute_quota_sets_requests_and_limits_and_skips_empty_values():
    assert seat_model.compute_hard(pods=10, cpu='4', memory='8Gi') == {
        'pods': '10', 'requests.cpu': '4', 'limits.cpu': '4', 'requests.memory': '8Gi', 'limits.memory': '8Gi'}
    assert seat_model.compute_hard(pods='', cpu=None, memory='2Gi') == {'requests.memory': '2Gi', 'limits.memory': '2Gi'}


def test_limit_range_gives_containers_defaults():
    limit_range = seat_model.limit_range_object('user03', {'cpu': '500m', 'memory': '512Mi'}, {'cpu': '100m'})
    assert limit_range['metadata'] == {'name': 'dralab-seat-limits', 'namespace': 'user03',
                                       'labels': seat_model.managed_labels('user03')}
    assert limit_range['spec']['limits'] == [{'type': 'Container', 'default': {'cpu': '500m', 'memory': '512Mi'},
                                              'defaultRequest': {'cpu': '100m'}}]
    with pytest.raises(ValueError, match='container default may only set cpu, memory, ephemeral-storage, not gpu'):
        seat_model.limit_range_object('user03', {'gpu': '1'})


def test_baseline_names_keep_credentials_unless_rotating():
    kept = seat_model.baseline_names('user07')
    assert kept['serviceaccounts'] == {'user07', 'default'} and kept['secrets'] == {'dralab-seat-token'}
    assert kept['resourcequotas'] == {'dralab-seat-quota'} and kept['limitranges'] == {'dralab-seat-limits'}
    rotating = seat_model.baseline_names('user07', with_credentials=False)
    assert 'serviceaccounts' not in rotating and 'secrets' not in rotating
    assert rotating['rolebindings'] == {'dralab-seat-edit', 'dralab-lease-reaper'}


def test_credential_generations_name_the_seats_accounts():
    assert seat_model.account_name('user07') == 'user07' and seat_model.account_name('user07', 3) == 'user07-g3'
    assert seat_model.baseline_names('user07', account='user07-g3-0a1b2c3d')['serviceaccounts'] == {
        'user07-g3-0a1b2c3d', 'default'}
    assert seat_model.baseline_names('user07')['serviceaccounts'] == {'user07', 'default'}
    annotated = seat_model.namespace_object('user07', generation=3, account='user07-g3-0a1b2c3d')
    assert annotated['metadata']['annotations'] == {'dralab.workshop/credential-generation': '3',
                                                    'dralab.workshop/credential-account': 'user07-g3-0a1b2c3d'}
    assert seat_model.credential_generation(annotated) == 3
    assert seat_model.recorded_account(annotated) == 'user07-g3-0a1b2c3d'
    # A Namespace made before accounts were recorded: the name of its generation.
    legacy = {'metadata': {'name': 'user07', 'annotations': {'dralab.workshop/credential-generation': '2'}}}
    assert seat_model.recorded_account(legacy) == 'user07-g2'
    legacy['metadata']['annotations']['dralab.workshop/credential-account'] = 'Not A Name'
    assert seat_model.recorded_account(legacy) == 'user07-g2'
    assert seat_model.namespace_object('user08')['metadata']['annotations'] == {
        'dralab.workshop/credential-generation': '0', 'dralab.workshop/credential-account': 'user08'}
    foreign = {'metadata': {'name': 'x', 'annotations': {'dralab.workshop/credential-generation': '5'}}}
    for value, generation in (('', 0), ('-2', 0), ('two', 0), (None, 0), ('7', 7)):
        ns = seat_model.namespace_object('user08')
        ns['metadata']['annotations'] = {seat_model.GENERATION_ANNOTATION: value}
        assert seat_model.credential_generation(ns) == generation, value
    assert seat_model.credential_generations([annotated, seat_model.namespace_object('user08'), foreign]) == {
        'user07': 3, 'user08': 0}
    assert seat_model.credential_accounts([annotated, seat_model.namespace_object('user08'), foreign]) == {
        'user07': 'user07-g3-0a1b2c3d', 'user08': 'user08'}


def test_a_rotated_account_name_is_the_generation_and_a_nonce():
    assert seat_model.rotated_account_name('user07', 4, '9f0e1d2c') == 'user07-g4-9f0e1d2c'
    with pytest.raises(ValueError, match='not a DNS-1123 subdomain'):
        seat_model.rotated_account_name('user07', 4, 'NOPE')


def test_objects_of_a_rotated_seat_bind_its_current_account():
    objects = seat_model.build_seat_objects(['user01', 'user02', 'user03'], ['gpu.example.com'],
                                            generations={'user02': 2, 'user03': 1},
                                            accounts={'user03': 'user03-g1-00c0ffee'})
    by_kind = {}
    for obj in objects:
        by_kind.setdefault(obj['kind'], []).append(obj)
    assert [sa['metadata']['name'] for sa in by_kind['ServiceAccount']] == ['user01', 'user02-g2', 'user03-g1-00c0ffee']
    assert [rb['subjects'] for rb in by_kind['RoleBinding']] == [
        [{'kind': 'ServiceAccount', 'name': 'user01', 'namespace': 'user01'}],
        [{'kind': 'ServiceAccount', 'name': 'user02-g2', 'namespace': 'user02'}],
        [{'kind': 'ServiceAccount', 'name': 'user03-g1-00c0ffee', 'namespace': 'user03'}]]
    assert by_kind['ClusterRoleBinding'][0]['subjects'] == [
        {'kind': 'ServiceAccount', 'name': 'user01', 'namespace': 'user01'},
        {'kind': 'ServiceAccount', 'name': 'user02-g2', 'namespace': 'user02'},
        {'kind': 'ServiceAccount', 'name': 'user03-g1-00c0ffee', 'namespace': 'user03'}]
    assert [ns['metadata']['annotations'][seat_model.GENERATION_ANNOTATION] for ns in by_kind['Namespace']] == [
        '0', '2', '1']
    assert [ns['metadata']['annotations'][seat_model.ACCOUNT_ANNOTATION] for ns in by_kind['Namespace']] == [
        'user01', 'user02-g2', 'user03-g1-00c0ffee']
