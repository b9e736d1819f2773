# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_objects, seat_tokens, seat_cleanup and device_class_menu run as Ansible runs them (module_runner.py), fake API."""

from __future__ import annotations

import json

import yaml

from apply_fakes import RbacStore, Store
from module_runner import run_module
from seat_fakes import NOW, CappedTokenApi, FakeTokenApi, lab, no_sleep


SEATS = ['user%02d' % n for n in range(1, 73)]


def test_seat_objects_for_72_seats():
    code, result = run_module('seat_objects', {'seats': SEATS,
                                               'device_classes': ['gpu.example.com', 'gpu-40gi.example.com'],
                                               'existing_namespaces': []})
    assert code == 0 and result['changed'] is False
    assert result['counts'] == {'Namespace': 72, 'ServiceAccount': 72, 'Secret': 72, 'RoleBinding': 72,
                                'ResourceQuota': 72, 'LimitRange': 72, 'ClusterRole': 1, 'ClusterRoleBinding': 1,
                                'ValidatingAdmissionPolicy': 15, 'ValidatingAdmissionPolicyBinding': 15,
                                'PriorityLevelConfiguration': 1, 'FlowSchema': 1}
    assert len(result['objects']) == 72 * 6 + 2 + 30 + 2
    # Policies first (seat/policies.py, then seat/placement.py, each policies then bindings), the seats' API share,
    # then the namespaces.
    assert [o['kind'] for o in result['objects'][:32]] == (
        ['ValidatingAdmissionPolicy'] * 10 + ['ValidatingAdmissionPolicyBinding'] * 10
        + ['ValidatingAdmissionPolicy'] * 5 + ['ValidatingAdmissionPolicyBinding'] * 5
        + ['PriorityLevelConfiguration', 'FlowSchema'])
    assert len(result['objects'][31]['spec']['rules'][0]['subjects']) == 72
    assert result['objects'][32]['kind'] == 'Namespace'
    assert result['quota'] == {'gpu.example.com.deviceclass.resource.k8s.io/devices': '1',
                               'gpu-40gi.example.com.deviceclass.resource.k8s.io/devices': '1',
                               'count/resourceclaims.resource.k8s.io': '1'}
    assert result['object_bytes_max'] == 1536 * 1024  # one claim
    # Without apply (no discovery), only the kinds named per kind are counted.
    code, result = run_module('seat_objects', {'seats': ['user01'], 'quota_objects': 3,
                                               'quota_objects_by_kind': {'configmaps': 4, 'jobs.batch': 2}})
    assert code == 0 and result['quota']['count/configmaps'] == '4' and result['quota']['count/jobs.batch'] == '2'
    assert result['object_bytes_max'] == 7 * 1536 * 1024
    assert result['admin_access_patches'] == [] and result['stale_namespaces'] == []


def test_seat_objects_refuses_a_bad_api_share_naming_it():
    code, result = run_module('seat_objects', {'seats': ['user01'], 'api_concurrency_shares': 0})
    assert code == 1
    assert result['msg'] == 'Cannot build the seat objects: api_concurrency_shares: 0 is outside 1..1000.'


def test_seat_objects_refuses_foreign_namespaces_and_fixes_admin_access():
    ours = {'app.kubernetes.io/managed-by': 'dralab.workshop', 'dralab.workshop/seat': 'user02',
            'resource.kubernetes.io/admin-access': 'true'}
    existing = [{'metadata': {'name': 'user01', 'labels': {}}}]
    code, result = run_module('seat_objects', {'seats': ['user01', 'user02'], 'existing_namespaces': existing})
    assert code == 1
    assert result['msg'].startswith('Namespace(s) user01 exist but were not created by dralab.workshop')
    code, result = run_module('seat_objects', {'seats': ['user02'],
                                               'existing_namespaces': [{'metadata': {'name': 'user02', 'labels': ours}}]})
    assert code == 0
    assert result['admin_access_patches'] == [{'apiVersion': 'v1', 'kind': 'Namespace',
                                               'metadata': {'name': 'user02',
                                                            'labels': {'resource.kubernetes.io/admin-access': None}}}]
    assert any('resource.kubernetes.io/admin-access' in w for w in result['warnings'])


def test_seat_objects_bad_input_fails_clearly():
    code, result = run_module('seat_objects', {'seats': ['user01'], 'devices_per_class': {'x.example.com': 1}})
    assert code == 1
    assert result['msg'].startswith('Cannot build the seat objects: devices_per_class names DeviceClasses')
    code, result = run_module('seat_objects', {'seats': ['user01'], 'pod_grace_max': 10})
    assert code == 1 and result['msg'].startswith('pod_grace_max: 10 s is less than the 30 s Kubernetes gives')
    code, result = run_module('seat_objects', {'seats': ['user01'], 'quota_objects_by_kind': {'events': 5}})
    assert code == 1 and 'quota_objects_by_kind names events, which the seats cannot create or the quota cannot' \
        in result['msg']


def test_device_class_menu_module():
    menu = [{'name': 'gpu-40gi.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]}]
    code, result = run_module('device_class_menu', {'menu': menu})
    assert code == 0 and result['changed'] is False
    assert result['apply'][0]['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'dralab.workshop'}
    code, result = run_module('device_class_menu', {'menu': [{'name': 'a', 'selectors': ['']}],
                                                    'variable_name': 'device_classes_menu'})
    assert code == 1
    assert result['msg'] == ('1 problem(s) in device_classes_menu: device_classes_menu[0] (a).selectors[0] is an '
                             'empty CEL expression')


def admin_kubeconfig(tmp_path):
    path = tmp_path / 'admin.conf'
    path.write_text(yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'kubernetes-admin@kubernetes',
        'contexts': [{'name': 'kubernetes-admin@kubernetes', 'context': {'cluster': 'kubernetes', 'user': 'admin'}}],
        'clusters': [{'name': 'kubernetes', 'cluster': {'server': 'https://10.0.0.10:6443',
                                                        'certificate-authority-data': 'Q0E='}}],
        'users': [{'name': 'admin', 'user': {'client-certificate-data': 'x', 'client-key-data': 'y'}}]}))
    return str(path)


def test_seat_tokens_module_issues_then_reuses(tmp_path):
    api = FakeTokenApi(['user01', 'user02'])
    args = {'kubeconfig': admin_kubeconfig(tmp_path), 'seats': ['user01', 'user02'],
            'kubeconfig_dir': str(tmp_path / 'seats'), 'api_server': 'https://lab.example.com:6443'}
    code, result = run_module('seat_tokens', args, api, NOW, diff=True)
    assert code == 0 and result['changed'] is True
    assert result['issued'] == ['user01', 'user02']
    assert result['api_server'] == 'https://lab.example.com:6443' and result['ca_data'] == 'Q0E='
    assert 'user01: no stored token' in result['diff']['before']
    assert result['tokens']['user01'] not in json.dumps(result['diff'])
    written = yaml.safe_load((tmp_path / 'seats' / 'user01.kubeconfig').read_text())
    assert written['clusters'][0]['cluster']['server'] == 'https://lab.example.com:6443'
    code, result = run_module('seat_tokens', args, api, NOW + 120, diff=True)
    assert code == 0 and result['changed'] is False and 'diff' not in result


def test_seat_tokens_module_reports_api_errors(tmp_path):
    api = FakeTokenApi([])
    args = {'kubeconfig': admin_kubeconfig(tmp_path), 'seats': ['user01'], 'kubeconfig_dir': str(tmp_path / 'seats')}
    code, result = run_module('seat_tokens', args, api, NOW)
    assert code == 1
    assert result['msg'].startswith('Cannot issue the seat tokens: Secret user01/dralab-seat-token does not exist')


def test_a_late_seat_in_check_mode_is_reported_and_nothing_is_made(tmp_path):
    """users.yml -e dralab_seats=3 --check on a lab of two seats: seat_objects and seat_tokens say what they would
    create for user03 (whose namespace does not exist yet) and write nothing; the real run then leaves the two
    other seats' tokens and kubeconfig files as they were."""
    store = Store()
    objects_args = {'seats': ['user01', 'user02'], 'device_classes': ['gpu.example.com'], 'apply': True}
    code, result = run_module('seat_objects', objects_args, store)
    assert code == 0 and 'Namespace user02' in result['created']
    before = json.dumps(store.objects, sort_keys=True)
    code, result = run_module('seat_objects', dict(objects_args, seats=['user01', 'user02', 'user03']), store,
                              check_mode=True)
    assert code == 0, result
    assert result['changed'] is True
    assert {'Namespace user03', 'ServiceAccount user03/user03', 'Secret user03/dralab-seat-token'} <= set(result['created'])
    assert not [name for name in result['created'] if 'user01' in name or 'user02' in name]
    assert json.dumps(store.objects, sort_keys=True) == before

    api = FakeTokenApi(['user01', 'user02'])
    seats_dir = tmp_path / 'seats'
    args = {'kubeconfig': admin_kubeconfig(tmp_path), 'seats': ['user01', 'user02'], 'kubeconfig_dir': str(seats_dir)}
    code, result = run_module('seat_tokens', args, api, NOW)
    files = dict((path.name, path.read_text()) for path in seats_dir.iterdir())
    code, result = run_module('seat_tokens', dict(args, seats=['user01', 'user02', 'user03']), api, NOW + 60,
                              check_mode=True)
    assert code == 0, result
    assert result['changed'] is True and result['issued'] == ['user03'] and result['written'] == ['user03']
    assert 'does not exist yet' in result['seats'][2]['reason']
    assert dict((path.name, path.read_text()) for path in seats_dir.iterdir()) == files
    assert len([r for r in api.requests if r[0] == 'POST']) == 2

    api = FakeTokenApi(['user01', 'user02', 'user03'])  # the real run: seat_objects made user03 (same uids for the others)
    code, result = run_module('seat_tokens', dict(args, seats=['user01', 'user02', 'user03']), api, NOW + 60)
    assert code == 0 and result['issued'] == ['user03']
    after = dict((path.name, path.read_text()) for path in seats_dir.iterdir())
    assert sorted(after) == ['user01.kubeconfig', 'user02.kubeconfig', 'user03.kubeconfig']
    assert dict((name, text) for name, text in after.items() if name != 'user03.kubeconfig') == files


def test_seat_cleanup_module_diff_and_check_mode():
    api = lab()
    code, result = run_module('seat_cleanup', {}, api, check_mode=True, diff=True)
    assert code == 0 and result['changed'] is True and result['deleted_count'] == 7
    assert 'pods user02/solo' in result['diff']['before']
    assert not [c for c in api.calls if c[0] == 'DELETE']
    code, result = run_module('seat_cleanup', {'wait': False}, api)
    assert code == 0 and result['deleted_count'] == 7
    code, result = run_module('seat_cleanup', {'kinds': ['pods', 'resourceclaims']}, api, no_sleep)
    assert code == 0 and result['changed'] is False


def test_seat_tokens_module_warns_when_the_api_server_cuts_tokens_short_of_the_event(tmp_path):
    # NOW is 2027-01-15T08:00:00Z; the event ends the next day at 17:00 in Berlin.
    args = {'kubeconfig': admin_kubeconfig(tmp_path), 'seats': ['user01', 'user02'],
            'kubeconfig_dir': str(tmp_path / 'seats'), 'event_end': '2027-01-16T17:00:00+01:00'}
    code, result = run_module('seat_tokens', args, CappedTokenApi(['user01', 'user02'], 8 * 3600), NOW)
    assert code == 0 and result['short'] == ['user01', 'user02']
    assert result['warnings'] == [
        'The API server issued 2 seat token(s) that expire at 2027-01-15T16:00:00Z, before the event ends '
        '(2027-01-16T17:00:00+01:00): its longest token (--service-account-max-token-expiration) is shorter than the '
        'time until then. It is set from dralab_event_start, dralab_event_end and dralab_event_lead when the cluster '
        'is built: run playbooks/users.yml again within dralab_event_lead of the start, or rebuild the cluster with '
        'the event window set.']
    code, result = run_module('seat_tokens', args, FakeTokenApi(['user01', 'user02']), NOW)
    assert code == 0 and result['short'] == [] and result['warnings'] == []


def test_seat_tokens_module_refuses_an_unreadable_event_end(tmp_path):
    args = {'kubeconfig': admin_kubeconfig(tmp_path), 'seats': ['user01'], 'kubeconfig_dir': str(tmp_path / 'seats'),
            'event_end': '2027-01-16T17:00:00'}
    code, result = run_module('seat_tokens', args, FakeTokenApi(['user01']), NOW)
    assert code == 1 and result['msg'].startswith("Cannot issue the seat tokens: '2027-01-16T17:00:00' has no UTC offset")


def test_seat_objects_counts_every_kind_the_seats_rbac_lets_them_create():
    """The count/ keys come from the rules of the edit ClusterRole (as served) and the discovery, not from a list:
    a kind the role allows is counted, one it does not allow is not, and Events, which no quota counts, are left
    to their admission policy."""
    rules = [{'apiGroups': [''], 'resources': ['pods', 'configmaps', 'secrets', 'serviceaccounts', 'services', 'events',
                                               'pods/exec'], 'verbs': ['create', 'delete']},
             {'apiGroups': ['apps', 'batch'], 'resources': ['deployments', 'jobs', 'cronjobs'], 'verbs': ['*']},
             {'apiGroups': ['resource.k8s.io'], 'resources': ['resourceclaims', 'resourceclaimtemplates'],
              'verbs': ['create']},
             {'apiGroups': [''], 'resources': ['resourcequotas'], 'verbs': ['get', 'list']}]
    store = RbacStore({'edit': rules})
    args = {'seats': ['user01'], 'apply': True, 'quota_objects': 4, 'quota_objects_by_kind': {'pods': 9}}
    code, result = run_module('seat_objects', args, store)
    assert code == 0, result
    counted = dict((key, value) for key, value in result['quota'].items() if key.startswith('count/'))
    assert counted == {'count/configmaps': '4', 'count/cronjobs.batch': '4', 'count/deployments.apps': '4',
                       'count/jobs.batch': '4', 'count/pods': '9', 'count/resourceclaimtemplates.resource.k8s.io': '4',
                       'count/secrets': '4', 'count/serviceaccounts': '4', 'count/services': '4',
                       'count/resourceclaims.resource.k8s.io': '1'}
    assert result['object_bytes_max'] == 42 * 1536 * 1024
    quota = store.objects['/api/v1/namespaces/user01/resourcequotas/dralab-seat-quota']
    assert quota['spec']['hard'] == result['quota']
    # A kind the role does not let the seats create cannot be given a count (a misspelling would count nothing).
    code, result = run_module('seat_objects', dict(args, quota_objects_by_kind={'statefulsets.apps': 2}), store)
    assert code == 1 and 'quota_objects_by_kind names statefulsets.apps, which the seats cannot create' in result['msg']
