# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_apply: what counts as up to date, and which requests the Applier sends (an in-memory API server)."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.k8s import apply as k8s_apply
from ansible_collections.dralab.workshop.plugins.module_utils.seat import model as seat_model
from ansible_collections.dralab.workshop.plugins.module_utils.seat import policies as seat_policies

from apply_fakes import Store


def seat_objects(seats=('user01', 'user02'), **options):
    return seat_policies.seat_policies() + seat_model.build_seat_objects(list(seats), ['gpu.example.com'], **options)


def apply(store, objects, check_mode=False):
    return k8s_apply.Applier(store).apply(objects, seat_model.MANAGED_SELECTOR, check_mode=check_mode)


def writes(store):
    return [call for call in store.calls if call[0] != 'GET']


def test_a_cold_apply_creates_everything_then_a_rerun_only_reads():
    store = Store()
    objects = seat_objects()
    first = apply(store, objects)
    assert len(first['created']) == len(objects) and first['updated'] == []
    store.calls = []
    again = apply(store, objects)
    assert again['created'] == [] and again['updated'] == [] and again['unchanged'] == len(objects)
    assert writes(store) == []
    kinds = set((obj['apiVersion'], obj['kind']) for obj in objects)
    assert len(store.calls) == len(kinds) == again['requests']  # one list per kind


def test_only_the_object_that_differs_is_written():
    store = Store()
    apply(store, seat_objects())
    store.calls = []
    result = apply(store, seat_objects(gpus_per_seat=2))
    assert sorted(result['updated']) == ['ResourceQuota user01/dralab-seat-quota', 'ResourceQuota user02/dralab-seat-quota']
    assert sorted(path for _m, path in writes(store)) == [
        '/api/v1/namespaces/user01/resourcequotas/dralab-seat-quota',
        '/api/v1/namespaces/user02/resourcequotas/dralab-seat-quota']


def test_a_label_this_manager_no_longer_wants_makes_a_write():
    store = Store()
    apply(store, seat_objects())
    result = apply(store, seat_objects(pod_security=''))
    assert sorted(result['updated']) == ['Namespace user01', 'Namespace user02']


def test_a_quantity_in_another_form_is_the_same():
    live = {'spec': {'hard': {'requests.cpu': '1', 'limits.memory': '8Gi'}}}
    assert k8s_apply.contains(live, {'spec': {'hard': {'requests.cpu': '1000m', 'limits.memory': '8192Mi'}}})
    assert not k8s_apply.contains(live, {'spec': {'hard': {'requests.cpu': '2'}}})


def test_lists_must_match_item_by_item():
    assert k8s_apply.contains({'subjects': [{'name': 'a', 'kind': 'X', 'extra': 1}]}, {'subjects': [{'name': 'a'}]})
    assert not k8s_apply.contains({'subjects': [{'name': 'a'}]}, {'subjects': [{'name': 'a'}, {'name': 'b'}]})


def test_an_object_never_applied_by_this_manager_is_written_once():
    obj = seat_objects()[0]
    live = copy.deepcopy(obj)  # same content, written by another manager (client-side apply)
    assert not k8s_apply.up_to_date(live, obj)


def test_check_mode_writes_nothing_and_reports_what_would_change():
    store = Store()
    apply(store, seat_objects())
    before = copy.deepcopy(store.objects)
    result = apply(store, seat_objects(seats=('user01', 'user02', 'user03'), gpus_per_seat=2), check_mode=True)
    assert store.objects == before
    assert 'Namespace user03' in result['created']
    assert 'ResourceQuota user01/dralab-seat-quota' in result['updated']


def test_check_mode_reports_the_objects_of_a_new_namespace_without_a_dry_run():
    """A late seat in --check: the API server refuses a dry run into a namespace it does not have yet
    ('namespaces "user03" not found'), so its objects are reported as created without a request."""
    store = Store()
    apply(store, seat_objects())
    before = copy.deepcopy(store.objects)
    store.calls = []
    result = apply(store, seat_objects(seats=('user01', 'user02', 'user03')), check_mode=True)
    assert store.objects == before
    new = sorted(name for name in result['created'] if 'user03' in name)
    assert new == ['LimitRange user03/dralab-seat-limits', 'Namespace user03', 'ResourceQuota user03/dralab-seat-quota',
                   'RoleBinding user03/dralab-seat-edit', 'Secret user03/dralab-seat-token', 'ServiceAccount user03/user03']
    dry_runs = [path for _m, path in writes(store)]
    assert not [path for path in dry_runs if '/namespaces/user03/' in path], dry_runs
    assert '/api/v1/namespaces/user03' in dry_runs
    # The other seats' objects are not created again; the reader's binding gains the new seat.
    assert not [name for name in result['created'] if 'user01' in name or 'user02' in name]


def phase_of_path(path):
    if '/admissionregistration' in path:
        return 0
    if not ('/namespaces/' in path and path.count('/') > 5):
        return 1
    return 2 if '/serviceaccounts/' in path else 3


def test_policies_then_cluster_objects_then_service_accounts_then_namespaced_ones():
    store = Store()
    apply(store, seat_objects())
    paths = [path for _m, path in writes(store)]
    phases = [phase_of_path(path) for path in paths]
    assert phases == sorted(phases) and set(phases) == {0, 1, 2, 3}


def test_a_token_secret_is_written_only_after_its_service_account():
    """The token controller deletes a service-account-token Secret whose ServiceAccount does not exist yet."""
    labels = {'app.kubernetes.io/managed-by': 'dralab.workshop'}
    secret = {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/service-account-token',
              'metadata': {'name': 'reaper-token', 'namespace': 'dralab-system', 'labels': labels,
                           'annotations': {'kubernetes.io/service-account.name': 'reaper'}}}
    account = {'apiVersion': 'v1', 'kind': 'ServiceAccount',
               'metadata': {'name': 'reaper', 'namespace': 'dralab-system', 'labels': labels}}
    for objects in ([secret, account], [account, secret]):
        store = Store().add_namespace('dralab-system')
        apply(store, copy.deepcopy(objects))
        kinds = [path.split('/')[-2] for _m, path in writes(store)]
        assert kinds == ['serviceaccounts', 'secrets']


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match='cannot apply'):
        apply(Store(), [{'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'x'}}])
