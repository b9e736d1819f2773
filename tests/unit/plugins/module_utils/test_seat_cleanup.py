# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seat cleanup against a fake API: only labelled namespaces, bulk deletes, no change on a clean lab, waiting."""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils import seat_cleanup as sc

from seat_fakes import OURS, FakeCleanupApi as FakeApi, lab, ns, obj


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


def test_clean_lab_reports_no_change():
    api = lab()
    cleaner = sc.SeatCleaner(api, sleep=lambda s: None)
    cleaner.run(wait=True)
    again = cleaner.run(wait=True)
    assert again['changed'] is False and again['deleted'] == {} and again['deleted_count'] == 0
    assert api.deletes()[-1][0] == '/apis/resource.k8s.io/v1/namespaces/user02/resourceclaims'  # from the first run


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


def test_wait_polls_until_gone():
    api = lab()
    api.deletions_take = 2
    sleeps = []
    result = sc.SeatCleaner(api, sleep=sleeps.append, clock=lambda: 0).run(wait=True, wait_timeout=60)
    assert result['remaining'] == []
    assert sleeps and all(s == 2 for s in sleeps)


def test_wait_times_out_naming_what_is_left():
    api = lab()
    api.deletions_take = 10 ** 6
    api.items['resourceclaims'][0]['status'] = {
        'allocation': {'devices': {'results': [{'pool': 'node-1', 'device': 'gpu-3'}]}},
        'reservedFor': [{'resource': 'pods', 'name': 'solo'}]}
    api.items['pods'][2]['spec'] = {'nodeName': 'node-1'}
    api.items['pods'][2]['status'] = {'phase': 'Running'}
    ticks = iter(range(0, 1000, 10))
    cleaner = sc.SeatCleaner(api, sleep=lambda s: None, clock=lambda: next(ticks))
    with pytest.raises(sc.SeatCleanupTimeout) as exc:
        cleaner.run(wait=True, wait_timeout=30)
    message = str(exc.value)
    assert message.startswith('7 object(s) are still present in the seat namespaces after waiting: ')
    assert 'pod user02/solo (terminating since now) phase Running on node node-1' in message
    assert 'resourceclaim user02/gpu (terminating since now) allocated node-1/gpu-3 reserved for pods solo' in message
    assert exc.value.result['deleted_count'] == 7


def test_restricting_to_named_namespaces_still_requires_the_labels():
    api = lab()
    result = sc.SeatCleaner(api).run(only=['user02', 'user99'], wait=False)
    assert result['namespaces'] == ['user02']
    assert result['deleted'] == {'pods': ['user02/solo'], 'resourceclaims': ['user02/gpu']}


def test_rotate_credentials_deletes_our_secret_and_service_account_only():
    api = lab()
    api.objects = {
        '/api/v1/namespaces/user01/secrets/dralab-seat-token': {'metadata': {'name': 'dralab-seat-token', 'labels': OURS}},
        '/api/v1/namespaces/user01/serviceaccounts/user01': {'metadata': {'name': 'user01', 'labels': OURS}},
        '/api/v1/namespaces/user02/serviceaccounts/user02': {'metadata': {'name': 'user02', 'labels': {}}},
    }
    result = sc.SeatCleaner(api).run(kinds=['pods'], wait=False, rotate_credentials=True)
    assert result['credentials_deleted'] == ['Secret user01/dralab-seat-token', 'ServiceAccount user01/user01']
    assert '/api/v1/namespaces/user02/serviceaccounts/user02' in api.objects
    assert '/api/v1/namespaces/user01/serviceaccounts/user01' not in api.objects


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match='unknown kinds services'):
        sc.ordered_kinds(['pods', 'services'])
    assert sc.ordered_kinds(['resourceclaims', 'pods', 'deployments']) == ['deployments', 'pods', 'resourceclaims']


def test_no_seat_namespaces_means_nothing_to_do():
    api = FakeApi([ns('user01', {})], {'pods': [obj('user01', 'x')]})
    result = sc.SeatCleaner(api).run()
    assert result == {'namespaces': [], 'deleted': {}, 'deleted_count': 0, 'terminating': {},
                      'credentials_deleted': [], 'changed': False, 'remaining': []}
