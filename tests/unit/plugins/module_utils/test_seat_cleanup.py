# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seat cleanup against a fake API: seat namespaces by their labels, every discovered kind, the baseline kept by
name, bulk deletes, no change on a clean lab, finalizers, per-seat resets, waiting."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import cleanup as sc

from seat_fakes import OURS, FakeCleanupApi as FakeApi, lab, ns, obj


def test_discovery_finds_namespaced_deletable_kinds_in_deletion_order():
    kinds = [kind.name for kind in sc.discovered_kinds(lab())]
    assert kinds[:10] == list(sc.FIRST_KINDS)
    assert kinds[10:] == ['configmaps', 'resourcequotas', 'rolebindings', 'secrets', 'serviceaccounts', 'services']
    # Events (core and events.k8s.io), subresources, create-only and cluster-scoped kinds are left out.


def test_only_labelled_namespaces_are_cleaned_in_bulk_and_in_order():
    api = lab()
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(wait=False)
    assert result['namespaces'] == ['user01', 'user02', 'user03']
    assert result['deleted'] == {
        'deployments': ['user01/web'],
        'replicasets': ['user01/web-1'],
        'pods': ['user01/web-1-a', 'user01/web-1-b', 'user02/solo'],
        'resourceclaimtemplates': ['user03/single-gpu'],
        'resourceclaims': ['user02/gpu'],
    }
    assert result['deleted_count'] == 7 and result['changed'] is True
    assert [call[0] for call in api.deletes()] == [
        '/apis/apps/v1/namespaces/user01/deployments',
        '/apis/apps/v1/namespaces/user01/replicasets',
        '/api/v1/namespaces/user01/pods',
        '/api/v1/namespaces/user02/pods',
        '/apis/resource.k8s.io/v1/namespaces/user03/resourceclaimtemplates',
        '/apis/resource.k8s.io/v1/namespaces/user02/resourceclaims',
    ]
    # Nothing outside the seats was touched, and no namespace was deleted.
    assert all('user99' not in call[0] and 'kube-system' not in call[0] and 'demo' not in call[0] for call in api.deletes())
    assert all(call[0].count('/') > 4 for call in api.deletes())
    # One cluster-wide list per kind (plus pages), following continue tokens.
    pod_lists = [c for c in api.calls if c[0] == 'GET' and c[1] == '/api/v1/pods']
    assert [c[2].get('continue') for c in pod_lists] == [None, '2', '4']


def seat_made(api):
    """What a seat makes besides workloads, unlabelled or relabelled, next to the instructor's baseline."""
    api.items.update({
        'services': [obj('user01', 'trap')],
        'configmaps': [obj('user01', 'kube-root-ca.crt'), obj('user01', 'notes')],
        'secrets': [obj('user01', 'dralab-seat-token'), obj('user01', 'stolen')],
        'serviceaccounts': [obj('user01', 'user01'), obj('user01', 'default'), obj('user01', 'backdoor')],
        'rolebindings': [obj('user01', 'dralab-seat-edit')],
        'resourcequotas': [obj('user01', 'dralab-seat-quota')],
    })
    return api


def test_everything_the_seat_made_goes_and_the_baseline_stays_whatever_the_labels():
    api = seat_made(lab())
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(only=['user01'], wait=True)
    assert result['deleted'] == {
        'deployments': ['user01/web'], 'replicasets': ['user01/web-1'], 'pods': ['user01/web-1-a', 'user01/web-1-b'],
        'configmaps': ['user01/notes'], 'secrets': ['user01/stolen'], 'serviceaccounts': ['user01/backdoor'],
        'services': ['user01/trap']}
    assert result['credentials_deleted'] == []
    left = {kind: sorted(i['metadata']['name'] for i in items if i['metadata']['namespace'] == 'user01')
            for kind, items in api.items.items()}
    assert left['secrets'] == ['dralab-seat-token'] and left['serviceaccounts'] == ['default', 'user01']
    assert left['configmaps'] == ['kube-root-ca.crt'] and left['rolebindings'] == ['dralab-seat-edit']
    assert left['resourcequotas'] == ['dralab-seat-quota'] and left['services'] == []
    # The baseline is kept by a field selector on its names, not by labels.
    secret_delete = [c for c in api.calls if c[0] == 'DELETE' and c[1].endswith('/secrets')]
    assert secret_delete[0][2] == {'fieldSelector': 'metadata.name!=dralab-seat-token'}


def test_rotation_deletes_every_service_account_and_secret_labels_or_not():
    api = seat_made(lab())
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(only=['user01'], wait=True, rotate_credentials=True)
    assert result['credentials_deleted'] == ['secrets user01/dralab-seat-token', 'serviceaccounts user01/default',
                                             'serviceaccounts user01/user01']
    assert result['deleted']['serviceaccounts'] == ['user01/backdoor']
    assert not [i for i in api.items['serviceaccounts'] + api.items['secrets'] if i['metadata']['namespace'] == 'user01']
    assert [i['metadata']['name'] for i in api.items['rolebindings']] == ['dralab-seat-edit']


def test_rotation_moves_the_seats_binding_to_an_unguessable_account_before_anything_is_deleted():
    """A token of the old account that kube-apiserver still accepts from its cache, or one the seat prepared for the
    account it expects next (user01-g1), must find no binding while the namespace is cleared: the edit binding names a
    new random account first, and only then does the Namespace (which the seat can read) record it."""
    api = seat_made(lab())
    api.items['rolebindings'][0]['subjects'] = [{'kind': 'ServiceAccount', 'name': 'user01', 'namespace': 'user01'}]
    nonces = iter(['5eed0001', '5eed0002', '5eed0003'])
    result = sc.SeatCleaner(api, sleep=lambda s: None, nonce=lambda: next(nonces)).run(
        only=['user01', 'user02'], wait=True, rotate_credentials=True)
    assert result['credential_generations'] == {'user01': 1, 'user02': 1} and result['changed'] is True
    namespace = [n for n in api.namespaces if n['metadata']['name'] == 'user01'][0]
    account = namespace['metadata']['annotations']['dralab.workshop/credential-account']
    assert account in ('user01-g1-5eed0001', 'user01-g1-5eed0002')  # the seats rotate in parallel
    assert namespace['metadata']['annotations']['dralab.workshop/credential-generation'] == '1'
    assert api.items['rolebindings'][0]['subjects'] == [{'kind': 'ServiceAccount', 'name': account,
                                                         'namespace': 'user01'}]
    writes = [call[:2] for call in api.calls if call[0] in ('PATCH', 'DELETE')]
    first_delete = [call[0] for call in writes].index('DELETE')
    binding = '/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/dralab-seat-edit'
    assert sorted(writes[:first_delete]) == [
        ('PATCH', '/api/v1/namespaces/user01'), ('PATCH', '/api/v1/namespaces/user02'),
        ('PATCH', binding % 'user01'), ('PATCH', binding % 'user02')]
    for seat in ('user01', 'user02'):  # the binding moves before the name is written where the seat can read it
        assert writes.index(('PATCH', binding % seat)) < writes.index(('PATCH', '/api/v1/namespaces/' + seat))
    # A reset that keeps the credentials keeps the recorded account (and nothing named like a generation).
    api.items['serviceaccounts'] = [obj('user01', account), obj('user01', 'user01-g1'), obj('user01', 'user01'),
                                    obj('user01', 'default')]
    kept = sc.SeatCleaner(api, sleep=lambda s: None).run(only=['user01'], wait=True)
    assert kept['deleted'] == {'serviceaccounts': ['user01/user01', 'user01/user01-g1']}
    assert 'credential_generations' not in kept
    again = sc.SeatCleaner(api, sleep=lambda s: None, nonce=lambda: 'abcdef12').run(
        only=['user01'], wait=True, rotate_credentials=True)
    assert again['credential_generations'] == {'user01': 2}
    assert again['credentials_deleted'] == ['serviceaccounts user01/default', 'serviceaccounts user01/%s' % account]
    assert namespace['metadata']['annotations']['dralab.workshop/credential-account'] == 'user01-g2-abcdef12'


def test_rotation_in_check_mode_moves_nothing():
    api = seat_made(lab())
    result = sc.SeatCleaner(api).run(only=['user01'], check_mode=True, rotate_credentials=True)
    assert result['credential_generations'] == {'user01': 1} and result['changed'] is True
    assert not [call for call in api.calls if call[0] in ('PATCH', 'DELETE')]


def test_clean_lab_reports_no_change():
    api = seat_made(lab())
    cleaner = sc.SeatCleaner(api, sleep=lambda s: None)
    cleaner.run(wait=True)
    deletes = len(api.deletes())
    again = cleaner.run(wait=True)
    assert again['changed'] is False and again['deleted'] == {} and again['deleted_count'] == 0
    assert len(api.deletes()) == deletes


def test_check_mode_lists_without_deleting():
    api = lab()
    result = sc.SeatCleaner(api).run(check_mode=True, wait=True)
    assert result['changed'] is True and result['deleted_count'] == 7
    assert api.deletes() == []


def test_terminating_objects_are_waited_for_not_deleted_again():
    api = lab()
    api.items['pods'][2]['metadata']['deletionTimestamp'] = 'earlier'
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(kinds=['pods'], wait=False)
    assert result['deleted'] == {'pods': ['user01/web-1-a', 'user01/web-1-b']}
    assert result['terminating'] == {'pods': ['user02/solo']}
    assert [call[0] for call in api.deletes()] == ['/api/v1/namespaces/user01/pods']


def waits(sleeps):
    """The pauses of each wait (a wait starts again at poll_interval / 10)."""
    found = []
    for pause in sleeps:
        if pause == 0.2:
            found.append([])
        found[-1].append(pause)
    return found


def test_wait_polls_until_gone():
    api = lab()
    api.deletions_take = 2
    sleeps = []
    result = sc.SeatCleaner(api, sleep=sleeps.append, clock=lambda: 0).run(wait=True, wait_timeout=60)
    assert result['remaining'] == [] and result['failed_seats'] == []
    # The first look again comes soon; the pauses grow, never beyond poll_interval (2 s). Two waits: the workloads,
    # then the rest.
    assert sleeps and sleeps[0] == 0.2 and max(sleeps) <= 2
    assert len(waits(sleeps)) == 2 and all(pauses == sorted(pauses) for pauses in waits(sleeps))


def test_wait_backs_off_to_the_poll_interval():
    api = lab()
    api.deletions_take = 12
    sleeps = []
    sc.SeatCleaner(api, sleep=sleeps.append, clock=lambda: 0).run(wait=True, wait_timeout=60)
    assert all(pauses[-1] == 2 and pauses == sorted(pauses) for pauses in waits(sleeps))


def stubborn_run(step, **options):
    """user02's pod carries a finalizer nobody removes; a run whose clock moves `step` seconds per look."""
    api = lab()
    api.items['pods'][2]['metadata']['finalizers'] = ['example.com/never']
    ticks = iter(range(0, 1000, step))
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks)).run(wait=True, wait_timeout=120,
                                                                                      **options)
    return api, result


def test_a_seats_finalizer_is_removed_after_the_grace():
    api, result = stubborn_run(5, finalizer_grace=10)
    assert result['finalizers_removed'] == ['pods user02/solo: example.com/never']
    assert result['remaining'] == [] and not [p for p in api.items['pods'] if p['metadata']['namespace'] == 'user02']
    put = [c for c in api.calls if c[0] == 'PUT']
    assert put[0][1] == '/api/v1/namespaces/user02/pods/solo' and put[0][3]['metadata']['finalizers'] == []


def test_wait_times_out_naming_what_is_left_and_its_seats():
    api = lab()
    api.deletions_take = 10 ** 6
    api.items['resourceclaims'][0]['status'] = {
        'allocation': {'devices': {'results': [{'pool': 'node-1', 'device': 'gpu-3'}]}},
        'reservedFor': [{'resource': 'pods', 'name': 'solo'}]}
    api.items['pods'][2]['spec'] = {'nodeName': 'node-1'}
    api.items['pods'][2]['status'] = {'phase': 'Running'}
    ticks = iter(range(0, 1000, 10))
    cleaner = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks))
    result = cleaner.run(wait=True, wait_timeout=30)
    assert result['failed_seats'] == ['user01', 'user02', 'user03']
    message = result['remaining_message']
    assert message.startswith('7 object(s) are still present in the seat namespace(s) user01, user02, user03 after '
                              'waiting: ')
    assert 'pods user02/solo (terminating since now) phase Running on node node-1' in message
    # The pods outlived the wait: their namespace keeps its claim (a pod may still use the device).
    assert 'resourceclaims user02/gpu allocated node-1/gpu-3 reserved for pods solo' in message
    assert 'claims of a namespace with pods left are not deleted' in message
    assert result['deleted_count'] == 6 and 'resourceclaims' not in result['deleted']
    assert not [c for c in api.deletes() if c[0].endswith('/resourceclaims')]


def test_a_per_seat_reset_touches_only_that_seat():
    api = lab()
    result = sc.SeatCleaner(api).run(only=['user02'], wait=False)
    assert result['namespaces'] == ['user02']
    # The reset's GPU check tells the other seats' claims from claims outside any seat namespace.
    assert result['seat_namespaces'] == ['user01', 'user02', 'user03']
    assert result['deleted'] == {'pods': ['user02/solo'], 'resourceclaims': ['user02/gpu']}
    assert all('/namespaces/user02/' in call[0] for call in api.deletes())


def test_an_unknown_seat_is_refused_before_any_change():
    api = lab()
    with pytest.raises(ValueError, match=r'seats: user100, user99 have no seat namespace \(seats: user01, user02, '
                                         r'user03\)'):
        sc.SeatCleaner(api).run(only=['user02', 'user99', 'user100'], wait=False)
    assert api.deletes() == []


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match='kinds: the API server serves no namespaced kind gadgets'):
        sc.SeatCleaner(lab()).run(kinds=['pods', 'gadgets'])


def test_no_seat_namespaces_means_nothing_to_do():
    api = FakeApi([ns('user01', {})], {'pods': [obj('user01', 'x')]})
    result = sc.SeatCleaner(api).run()
    assert result == {'namespaces': [], 'seat_namespaces': [], 'deleted': {}, 'deleted_count': 0, 'terminating': {},
                      'credentials_deleted': [], 'finalizers_removed': [], 'forced': [], 'changed': False,
                      'remaining': [], 'failed_seats': [], 'remaining_message': ''}
    assert OURS  # the fixture's labels are what makes a namespace a seat


def test_claims_are_deleted_only_once_no_pod_is_left():
    """A claim is never released while a pod that may use its device exists: the workloads go first, and the
    reset waits until no pod is left before it deletes any claim."""
    api = lab()
    api.deletions_take = 3
    pods_at_claim_delete = []
    request = api.request

    def watching(method, path, body=None, query=None, content_type=None):
        if method == 'DELETE' and path.endswith('/resourceclaims'):
            pods_at_claim_delete.extend(p['metadata']['name'] for p in api.items['pods']
                                        if p['metadata']['namespace'] == path.split('/')[-2])
        return request(method, path, body, query, content_type)
    api.request = watching
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: 0).run(wait=True, wait_timeout=60)
    assert result['remaining'] == [] and result['deleted']['resourceclaims'] == ['user02/gpu']
    assert pods_at_claim_delete == []
    deletes = [call[0] for call in api.deletes()]
    assert deletes.index('/apis/resource.k8s.io/v1/namespaces/user02/resourceclaims') > deletes.index(
        '/api/v1/namespaces/user02/pods')


def test_pods_get_the_resets_grace_and_then_grace_zero():
    """A pod that asked for a day to stop gets the reset's grace; still there 10 s after it, it is deleted with
    grace 0 (a node that does not answer never confirms)."""
    # The finalizer keeps the pod in the API as a node that does not answer would (the pod asked for a day).
    api, result = stubborn_run(4, grace_period_seconds=5, finalizer_grace=60)
    pod_deletes = [body for path, body in api.deletes() if path == '/api/v1/namespaces/user02/pods']
    assert [body['gracePeriodSeconds'] for body in pod_deletes] == [5, 0]
    assert result['forced'] == ['pods user02/solo'] and result['changed'] is True
    # The finalizers went after finalizer_grace; only then was the claim deleted.
    assert result['finalizers_removed'] == ['pods user02/solo: example.com/never']
    assert result['remaining'] == [] and result['deleted']['resourceclaims'] == ['user02/gpu']


def test_without_a_grace_period_no_pod_is_forced():
    api, result = stubborn_run(4, finalizer_grace=60)
    assert result['forced'] == []
    assert all('gracePeriodSeconds' not in body for _path, body in api.deletes())


def test_a_claim_a_living_pod_holds_keeps_its_finalizers():
    """Even when only the claims are cleared (kinds), a claim reserved for a pod that still exists is not stripped
    of its finalizers: Kubernetes' delete-protection keeps the device until the pod is gone."""
    api = lab()
    pod = api.items['pods'][2]
    claim = api.items['resourceclaims'][0]
    claim['metadata']['finalizers'] = ['resource.kubernetes.io/delete-protection']
    claim['status'] = {'reservedFor': [{'resource': 'pods', 'name': 'solo', 'uid': pod['metadata']['uid']}]}
    ticks = iter(range(0, 1000, 10))
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks)).run(
        kinds=['resourceclaims'], wait=True, wait_timeout=60, finalizer_grace=15)
    assert result['finalizers_removed'] == [] and not [c for c in api.calls if c[0] == 'PUT']
    assert result['failed_seats'] == ['user02']
    assert 'resourceclaims user02/gpu (terminating since now' in result['remaining'][0]
    # Once the pod is gone, the next reset strips them.
    api.items['pods'].remove(pod)
    again = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks)).run(
        kinds=['resourceclaims'], wait=True, wait_timeout=60, finalizer_grace=15)
    assert again['finalizers_removed'] == ['resourceclaims user02/gpu: resource.kubernetes.io/delete-protection']
    assert again['remaining'] == []


def test_pods_a_dying_controller_makes_meanwhile_are_deleted_too():
    api = lab()
    api.deletions_take = 2
    request = api.request
    made = []

    def controller(method, path, body=None, query=None, content_type=None):
        answer = request(method, path, body, query, content_type)
        if method == 'GET' and path == '/api/v1/pods' and not made and any(
                p['metadata'].get('deletionTimestamp') for p in api.items['pods']):
            made.append(obj('user01', 'web-1-c'))  # the ReplicaSet, not yet gone, replaced a pod
            api.items['pods'].append(made[0])
        return answer
    api.request = controller
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: 0).run(wait=True, wait_timeout=60)
    assert made and result['remaining'] == []
    assert not [p for p in api.items['pods'] if p['metadata']['namespace'] == 'user01']
    assert [path for path, _body in api.deletes()].count('/api/v1/namespaces/user01/pods') == 2


def test_a_claim_loses_its_finalizers_once_the_pod_holding_it_is_gone():
    api = lab()
    pod = api.items['pods'][2]
    claim = api.items['resourceclaims'][0]
    claim['metadata']['finalizers'] = ['example.com/keep-my-gpu']
    claim['status'] = {'reservedFor': [{'resource': 'pods', 'name': 'solo', 'uid': pod['metadata']['uid']}]}
    looks = []
    request = api.request

    def kubelet(method, path, body=None, query=None, content_type=None):
        if method == 'GET' and path == '/api/v1/pods':
            looks.append(path)
            if len(looks) == 4:  # the node finally confirms the pod's end
                api.items['pods'].remove(pod)
        return request(method, path, body, query, content_type)
    api.request = kubelet
    ticks = iter(range(0, 1000, 10))
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks)).run(
        kinds=['resourceclaims'], wait=True, wait_timeout=120, finalizer_grace=15)
    assert result['finalizers_removed'] == ['resourceclaims user02/gpu: example.com/keep-my-gpu']
    assert result['remaining'] == [] and len(looks) >= 4


def test_a_pod_the_seat_deleted_with_a_day_of_grace_gets_the_resets():
    """kubectl delete --grace-period=86400 before the reset: the reset's shorter grace period overrides it."""
    api = lab()
    api.items['pods'][2]['metadata'].update(deletionTimestamp='tomorrow', deletionGracePeriodSeconds=86400)
    result = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: 0).run(wait=True, wait_timeout=60,
                                                                            grace_period_seconds=5)
    assert result['terminating'] == {'pods': ['user02/solo']} and result['remaining'] == []
    assert [body['gracePeriodSeconds'] for path, body in api.deletes() if path == '/api/v1/namespaces/user02/pods'] \
        == [5]


def test_a_start_locks_the_seat_out_and_stops_its_workloads_and_credentials_without_waiting():
    api = seat_made(lab())
    api.deletions_take = 3
    api.items['secrets'][0]['metadata']['finalizers'] = ['example.com/keep-my-token']
    sleeps = []
    result = sc.SeatCleaner(api, sleep=sleeps.append, nonce=lambda: 'abcdef12').run(
        only=['user01'], rotate_credentials=True, stage='start')
    assert sleeps == []
    assert result['credential_generations'] == {'user01': 1}
    assert result['credentials_deleted'] == ['secrets user01/dralab-seat-token', 'serviceaccounts user01/default',
                                             'serviceaccounts user01/user01']
    assert result['deleted'] == {'deployments': ['user01/web'], 'replicasets': ['user01/web-1'],
                                 'pods': ['user01/web-1-a', 'user01/web-1-b'], 'secrets': ['user01/stolen'],
                                 'serviceaccounts': ['user01/backdoor']}
    # The claims, and whatever else the seat made, wait for the finish.
    assert not [path for path, _body in api.deletes() if path.endswith(('/resourceclaims', '/services', '/configmaps'))]
    # A seat's finalizer cannot keep the old token Secret beside the new one.
    assert result['finalizers_removed'] == ['secrets user01/dralab-seat-token: example.com/keep-my-token']
    assert not api.items['secrets'][0]['metadata'].get('finalizers')


def test_a_finish_waits_deletes_the_rest_and_keeps_the_credentials_issued_since_the_start():
    api = seat_made(lab())
    api.deletions_take = 2
    api.items['resourceclaims'].append(obj('user01', 'mine'))
    sc.SeatCleaner(api, sleep=lambda s: None, nonce=lambda: 'abcdef12').run(
        only=['user01'], rotate_credentials=True, stage='start')
    # Meanwhile the role issues the new generation's account and token Secret.
    for kind, name in (('serviceaccounts', 'user01-g1-abcdef12'), ('serviceaccounts', 'default'),
                       ('secrets', 'dralab-seat-token')):
        api.items[kind].append(obj('user01', name))
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(only=['user01'], rotate_credentials=True, stage='finish')
    assert result['remaining'] == [] and 'credential_generations' not in result
    assert result['credentials_deleted'] == []
    assert result['deleted'] == {'configmaps': ['user01/notes'], 'resourceclaims': ['user01/mine'],
                                 'services': ['user01/trap']}
    left = {kind: sorted(i['metadata']['name'] for i in api.items[kind] if i['metadata']['namespace'] == 'user01')
            for kind in ('serviceaccounts', 'secrets', 'pods', 'resourceclaims')}
    assert left == {'serviceaccounts': ['default', 'user01-g1-abcdef12'], 'secrets': ['dralab-seat-token'],
                    'pods': [], 'resourceclaims': []}
    # Nothing was rotated again: the account the start recorded stays.
    namespace = [n for n in api.namespaces if n['metadata']['name'] == 'user01'][0]
    assert namespace['metadata']['annotations']['dralab.workshop/credential-account'] == 'user01-g1-abcdef12'
    assert not [path for path, _body in api.deletes() if path.endswith(('/secrets', '/serviceaccounts'))][3:]


def test_a_finish_claims_nothing_before_the_pods_are_gone():
    api = lab()
    api.deletions_take = 2
    sc.SeatCleaner(api, sleep=lambda s: None).run(stage='start')
    order = []
    original = api.request

    def seat_pods():
        return len([pod for pod in api.items['pods'] if pod['metadata']['namespace'] in ('user01', 'user02', 'user03')])

    def watch(method, path, body=None, query=None, content_type=None):
        if method == 'GET' and path == '/api/v1/pods':
            order.append(('pods listed', seat_pods()))
        if method == 'DELETE' and path.endswith('/resourceclaims'):
            order.append(('claims deleted', seat_pods()))
        return original(method, path, body, query, content_type)
    api.request = watch
    result = sc.SeatCleaner(api, sleep=lambda s: None).run(stage='finish')
    assert result['deleted'] == {'resourceclaimtemplates': ['user03/single-gpu'], 'resourceclaims': ['user02/gpu']}
    assert order[0] == ('pods listed', 3) and order[-1] == ('claims deleted', 0)


def test_an_unknown_stage_is_refused():
    with pytest.raises(ValueError, match='stage'):
        sc.SeatCleaner(lab()).run(stage='later')
