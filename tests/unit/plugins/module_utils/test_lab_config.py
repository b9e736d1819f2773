# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""validate() of module_utils/preflight/ and the helpers it shares with the filters: every check names its field."""

from __future__ import annotations

import copy
import pathlib
import re

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import FEATURE_GATES, KNOWN_FEATURE_GATES
from ansible_collections.dralab.workshop.plugins.module_utils.dra.feature_gates import parse_feature_gates
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.resolve import resolve_hosts
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import effective_settings, validate
from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import generate_seat_names
from ansible_collections.dralab.workshop.plugins.module_utils.values import mirror_url

HOSTS = ['cp1', 'node1', 'node2', 'login1']

GOOD = {
    'groups': {
        'all': HOSTS,
        'ungrouped': [],
        'control_plane': ['cp1'],
        'workers': ['node1', 'node2'],
        'login': ['login1'],
    },
    'hosts': HOSTS,
    'dralab_kubernetes_version': '1.35.4',
    'dralab_allow_unsupported_kubernetes_version': False,
    'dralab_download_mirror': 'http://10.88.0.1:8080/',
    'dralab_registry_mirror': '10.88.0.1:5000',
    'dralab_feature_gates': ['DRAConsumableCapacity', 'DRADeviceTaints=true', 'DRAAdminAccess=false'],
    'dralab_cgroup_v1': False,
    'dralab_devices_per_node': 8,
    'dralab_seats': 72,
    'dralab_seat_prefix': 'user',
    'dralab_seat_width': 2,
    'dralab_event_duration': '8h',
    'dralab_device_classes': [
        {'name': 'gpu.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]},
        {
            'name': 'gpu-big',
            'selectors': [
                {'cel': {'expression': "device.driver == 'gpu.example.com'"}},
                "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
            ],
            'config': [{'opaque': {'driver': 'gpu.example.com', 'parameters': {'kind': 'GpuConfig'}}}],
        },
    ],
    'dralab_login_hosts': ['login1'],
}


def config(**changes):
    """GOOD with dralab_<key> (or groups/hosts) replaced; a value of ... removes the key."""
    result = copy.deepcopy(GOOD)
    for key, value in changes.items():
        name = key if key in ('groups', 'hosts') else 'dralab_' + key
        if value is Ellipsis:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def errors_of(**changes):
    errors, dummy = validate(config(**changes))
    return errors


def warnings_of(**changes):
    errors, warnings = validate(config(**changes))
    assert errors == []
    return warnings


def only_error(field, **changes):
    """Assert that the change gives exactly one error, about field; return it."""
    errors = errors_of(**changes)
    assert len(errors) == 1, errors
    assert errors[0].startswith(field + ': '), errors
    return errors[0]


# ---------------------------------------------------------------- good input

def test_good_config_has_no_errors_or_warnings():
    assert validate(GOOD) == ([], [])


def test_defaults_are_valid():
    # Only the inventory: every dralab_* variable takes its documented default.
    errors, warnings = validate({'groups': GOOD['groups'], 'hosts': HOSTS})
    assert errors == []
    assert warnings == []


def test_none_means_default():
    keys = [key for key in GOOD if key.startswith('dralab_')]
    errors, dummy = validate(dict(GOOD, **dict((key, None) for key in keys)))
    assert errors == []


def test_hosts_default_to_the_union_of_groups():
    assert errors_of(hosts=...) == []


def test_every_problem_is_reported_at_once():
    errors = errors_of(groups={'all': ['login1']}, hosts=['login1'], seats=-1, devices_per_node=200,
                       feature_gates=['FooBar'], login_hosts=['nohost'], event_duration='soon',
                       registry_mirror='http://x', download_mirror='x:1', kubernetes_version='1.34.0',
                       device_classes=[{'name': 'a', 'selectors': ['']}])
    fields = sorted(re.match(r"groups\['\w+'\]|dralab_\w+", error).group(0) for error in errors)
    assert fields == sorted([
        "groups['control_plane']", "groups['ungrouped']", 'dralab_seats', 'dralab_devices_per_node',
        'dralab_login_hosts',
        'dralab_event_duration', 'dralab_registry_mirror', 'dralab_download_mirror',
        'dralab_kubernetes_version', 'dralab_device_classes',
    ])


# ---------------------------------------------------------------- inventory

@pytest.mark.parametrize('groups', [
    {'all': ['login1'], 'login': ['login1']},
    {'all': ['login1'], 'login': ['login1'], 'control_plane': []},
    {'all': ['login1'], 'login': ['login1'], 'control_plane': None},
])
def test_no_control_plane_host(groups):
    # Only a login host: GOOD's nodes in no group would be refused as well (test_a_host_in_no_lab_group_is_refused).
    message = only_error("groups['control_plane']", groups=groups, hosts=['login1'])
    assert 'no control_plane host' in message


def test_no_groups_at_all():
    errors, dummy = validate({})
    assert any(error.startswith("groups['control_plane']: ") for error in errors)


def test_several_control_plane_hosts_are_refused_until_ha_exists():
    groups = dict(GOOD['groups'], control_plane=['cp1', 'cp2'])
    error = only_error("groups['control_plane']", groups=groups, hosts=HOSTS + ['cp2'])
    assert '2 hosts (cp1, cp2); the lab builds one control plane node (no HA)' in error


def test_no_control_plane_is_a_warning_with_an_existing_cluster():
    # An existing cluster: the inventory holds the login hosts only (workers would need a control plane to join).
    groups = {'all': ['login1'], 'ungrouped': [], 'login': ['login1']}
    warnings = warnings_of(groups=groups, hosts=['login1'], kubeconfig='/tmp/admin.conf')
    assert any(warning.startswith("groups['control_plane']: the inventory has no control_plane host")
               for warning in warnings)


# ---------------------------------------------------------------- networks and versions

@pytest.mark.parametrize('changes, field, shown', [
    ({'pod_subnet': '10.244.0.0'}, 'dralab_pod_subnet', "'10.244.0.0' is not a network in CIDR notation"),
    ({'pod_subnet': 10}, 'dralab_pod_subnet', '10 is not a network in CIDR notation'),
    ({'service_subnet': '10.96.0.1/12'}, 'dralab_service_subnet', 'has host bits set'),
    ({'pod_subnet': '10.96.0.0/16'}, 'dralab_service_subnet', '10.96.0.0/12 overlaps dralab_pod_subnet 10.96.0.0/16'),
    ({'service_subnet': '10.240.0.0/12'}, 'dralab_service_subnet', 'overlaps dralab_pod_subnet 10.244.0.0/16'),
])
def test_bad_networks(changes, field, shown):
    assert shown in only_error(field, **changes)


def test_network_holding_a_node_address():
    result = config(pod_subnet='192.0.2.0/24')
    result['node_addresses'] = {'cp1': '192.0.2.10', 'node1': 'node1.lab', 'node2': '198.51.100.7'}
    errors, dummy = validate(result)
    assert errors == ['dralab_pod_subnet: 192.0.2.0/24 contains node address cp1 (192.0.2.10); '
                      'pick a network the nodes are not on',
                      'dralab_pod_subnet: 192.0.2.0/24 holds 1 node pod network (a /24 each) and the lab has 3 nodes '
                      '(cp1, node1, node2): the others would get none; use a /22 or larger']


@pytest.mark.parametrize('name, value, shown', [
    ('dra_driver_chart_version', 'v0.4', "'v0.4' is not a semantic version like 1.2.3 (major.minor.patch, no leading"),
    ('dra_driver_chart_version', 'v0.4.0', "'v0.4.0' must be given without the leading \"v\" ('0.4.0')"),
    ('dra_driver_chart_version', '0.4', "'0.4' is not a semantic version like 1.2.3"),
    ('dra_driver_chart_version', 0.4, '0.4 is not a version string'),
    ('dra_driver_helm_version', '3.20', "'3.20' is not a semantic version like 1.2.3"),
    ('dra_driver_image_tag', 'latest', "'latest' is not a semantic version like v1.2.3"),
])
def test_bad_role_versions(name, value, shown):
    result = config()
    result['role_versions'] = {name: value}
    errors, dummy = validate(result)
    assert errors == ['%s: %s' % (name, errors[0].split(': ', 1)[1])] and shown in errors[0], errors


def test_good_role_versions():
    result = config()
    result['role_versions'] = {'dra_driver_chart_version': '0.4.0', 'dra_driver_image_tag': 'v0.4.0',
                               'dra_driver_helm_version': '3.20.2'}
    assert validate(result) == ([], [])


@pytest.mark.parametrize('bounds, expected', [
    ({'workshop_users_quota_objects': 1},
     ["workshop_users_quota_objects: 1 of each kind is fewer than the workshop itself needs in every seat namespace "
      "(what the lab keeps there, and the pods of can-has-gpu and the demos: configmaps 2, pods 2, "
      "rolebindings.rbac.authorization.k8s.io 2, serviceaccounts 2); the lab's own objects would be refused"]),
    ({'workshop_users_quota_objects_by_kind': {'configmaps': 1}},
     ["workshop_users_quota_objects_by_kind[configmaps]: 1 configmaps per seat is fewer than the workshop itself "
      "needs in every seat namespace (2: what the lab keeps there, and the pods of can-has-gpu and the demos); the "
      "lab's own objects would be refused"]),
    ({'workshop_users_quota_pods': '1'},
     ['workshop_users_quota_pods: 1 pods per seat is fewer than can-has-gpu and the demos need (2)']),
    ({'workshop_users_quota_pods': 'lots'},
     ["workshop_users_quota_pods: 'lots' is not a whole number (or empty for no cap)"]),
    ({'workshop_users_pod_grace_max': 10},
     ['workshop_users_pod_grace_max: 10 s is less than the 30 s Kubernetes gives every pod that names no '
      "terminationGracePeriodSeconds: the demos' pods would be refused"]),
    ({'lab_reset_grace_period_seconds': -1}, ['lab_reset_grace_period_seconds: -1 is negative']),
    ({'workshop_users_api_concurrency_shares': 0, 'workshop_users_api_queue_length': 'long'},
     ['workshop_users_api_concurrency_shares: 0 is outside 1..1000',
      "workshop_users_api_queue_length: 'long' is not a whole number"]),
    ({'workshop_users_api_queue_length': 5000}, ['workshop_users_api_queue_length: 5000 is outside 1..1000']),
    ({'workshop_users_quota_ephemeral_storage': '1Gi'},
     ["workshop_users_quota_ephemeral_storage: '1Gi' is less than the 2 pods can-has-gpu and the demos need at "
      "'1Gi' each (the containers' default limit): their pods would be refused"]),
    ({'workshop_users_container_default_limits': {'cpu': '1', 'memory': '1Gi', 'ephemeral-storage': '10Mi'}},
     ["workshop_users_container_default_limits['ephemeral-storage']: '10Mi' is less than 50Mi, the container logs "
      "the kubelet keeps (5 files of 10Mi) and counts against it: a demo pod that logs would be evicted"]),
    ({'workshop_users_quota_ephemeral_storage': '10Gi', 'workshop_users_container_default_limits': {'cpu': '1'}},
     ["workshop_users_quota_ephemeral_storage: a quota on ephemeral storage needs a default ephemeral-storage limit "
      "for containers (workshop_users_container_default_limits): the demos' pods name none and would be refused"]),
    ({'workshop_users_pod_tolerations': [{'effect': 'NoSchedule'}]},
     ['workshop_users_pod_tolerations[0]: needs a key (a toleration without one tolerates every taint)']),
    ({'workshop_users_pod_tolerations': [{'key': 'example.com/lab', 'effect': 'Sometimes'}]},
     ["workshop_users_pod_tolerations[0]: effect 'Sometimes' is not one of NoSchedule, PreferNoSchedule, NoExecute "
      "(or leave it out for any)"]),
    ({'workshop_users_device_tolerations': 'dralab.workshop/maintenance'},
     ["workshop_users_device_tolerations: must be a list of {key, effect} entries, got 'dralab.workshop/maintenance'"]),
    ({'control_plane_kubelet_pod_pids_limit': 100},
     ["control_plane_kubelet_pod_pids_limit: 100 PIDs per pod is fewer than the control plane's own pods need (256 "
      "or more; 0 for no limit)"]),
    ({'control_plane_kubelet_pod_pids_limit': 'many'}, ["control_plane_kubelet_pod_pids_limit: 'many' is not a whole "
                                                        "number"]),
    ({'workshop_users_sshd_per_source_max_startups': 100, 'workshop_users_sshd_max_startups': '100:30:300'},
     ['workshop_users_sshd_per_source_max_startups: 100 is not below the start of workshop_users_sshd_max_startups '
      '(100): one source could take every pre-authentication slot']),
    ({'workshop_users_sshd_per_source_max_startups': 0}, ['workshop_users_sshd_per_source_max_startups: 0 is less '
                                                          'than 1']),
    ({'lab_board_streams_per_client': 0}, ['lab_board_streams_per_client: 0 is less than 1']),
    ({'lab_board_streams_max': 2000, 'lab_board_streams_max_instructor': 50, 'lab_board_limit_nofile': 1024},
     ['lab_board_limit_nofile: 1024 files do not hold lab_board_streams_max and lab_board_streams_max_instructor '
      '(2050) and 64 more for the board itself']),
    ({'lab_reset_grace_period_seconds': 290, 'lab_reset_wait_timeout': 300},
     ['lab_reset_grace_period_seconds: 290 s (and the 10 s after it before a pod still there is deleted with grace '
      '0) is not less than lab_reset_wait_timeout 300 s: the reset would give up before it']),
])
def test_bounds_too_small_for_the_lab_are_refused_naming_the_variable(bounds, expected):
    result = config()
    result['role_bounds'] = bounds
    errors, dummy = validate(result)
    assert errors == expected


def test_bounds_that_fit_pass_and_the_demos_and_gpus_raise_the_pods_needed():
    result = config()
    result['role_bounds'] = {'workshop_users_quota_objects': 2, 'workshop_users_quota_objects_by_kind': {'pods': 4},
                             'workshop_users_quota_pods': '', 'workshop_users_pod_grace_max': 30,
                             'lab_reset_grace_period_seconds': 0, 'lab_reset_wait_timeout': 300,
                             'control_plane_kubelet_pod_pids_limit': 0, 'workshop_users_sshd_per_source_max_startups': 'none',
                             'lab_board_streams_max': 10, 'lab_board_streams_max_instructor': 1, 'lab_board_limit_nofile': 75}
    assert validate(result)[0] == []
    result['dralab_gpus_per_seat'] = 3  # can-has-gpu: a holder and a workload pod per GPU
    assert validate(result)[0] == [
        "workshop_users_quota_objects_by_kind[pods]: 4 pods per seat is fewer than the workshop itself needs in every "
        "seat namespace (6: what the lab keeps there, and the pods of can-has-gpu and the demos); the lab's own objects "
        "would be refused"]


def test_the_role_defaults_fit_the_lab():
    roles = pathlib.Path(__file__).resolve().parents[4] / 'roles'
    defaults = {}
    for role in ('workshop_users', 'lab_reset', 'control_plane', 'lab_board'):
        defaults.update(yaml.safe_load((roles / role / 'defaults/main.yml').read_text()))
    result = config()
    result['role_bounds'] = dict((name, defaults[name]) for name in lab_settings.ROLE_BOUNDS)
    result['dralab_dra_features'] = ['device_taints']  # the demo with two pods
    assert validate(result)[0] == []


def test_cel_selectors_go_through_the_compile_hook():
    seen = []

    def compile_problem(expression):
        seen.append(expression)
        return 'Syntax error: mismatched input' if expression.endswith('>=') else None

    result = config(device_classes=[{'name': 'gpu-big', 'selectors': ["device.driver == 'gpu.example.com' >="]}])
    errors, dummy = validate(result, compile_problem=compile_problem)
    assert errors == ["dralab_device_classes[0] (gpu-big).selectors[0] does not compile: "
                      "Syntax error: mismatched input"]
    assert seen == ["device.driver == 'gpu.example.com' >="]
    assert validate(config(), compile_problem=compile_problem)[0] == []


# ---------------------------------------------------------------- one value per lab

def test_a_setting_set_on_one_group_only_is_refused():
    settings, errors = resolve_hosts({
        'localhost': {}, 'cp1': {'dralab_seats': 3}, 'worker1': {},
    })
    assert errors == ['dralab_seats: differs between the hosts of the lab: 3 on cp1; 72 on localhost, worker1; '
                      'set it once for the whole lab (group_vars/all.yml, or -e)']
    assert 'dralab_seats' not in settings


def test_the_default_written_out_is_the_same_value():
    settings, errors = resolve_hosts({'localhost': {}, 'cp1': {'dralab_seats': 72}})
    assert errors == [] and settings == {'dralab_seats': 72}


def test_a_derived_setting_set_on_one_host_only_is_refused():
    dummy, errors = resolve_hosts({'localhost': {}, 'cp1': {'dralab_login_hosts': ['cp1']}})
    assert errors and errors[0].startswith('dralab_login_hosts: differs between the hosts of the lab: ["cp1"] on cp1; '
                                           'not set on localhost')


def test_unknown_settings_are_errors_with_the_closest_name():
    settings, errors = resolve_hosts({
        'localhost': {'dralab_seat': 30, 'dralab_whatever_else': 1}, 'cp1': {'dralab_seat': 30},
    })
    assert settings == {}
    assert errors == [
        'dralab_seat is not a lab setting; did you mean dralab_seats? (set for cp1, localhost)',
        'dralab_whatever_else is not a lab setting (README.md lists them) (set for localhost)',
    ]


# ---------------------------------------------------------------- seats

@pytest.mark.parametrize('seats, shown', [
    (-1, '-1 is outside 0..10000'),
    (10001, '10001 is outside 0..10000'),
    ('many', "'many' is not an integer"),
    (1.5, '1.5 is not an integer'),
    (True, 'true is not an integer'),
    ([3], '[3] is not an integer'),
])
def test_bad_seat_count(seats, shown):
    assert only_error('dralab_seats', seats=seats) == 'dralab_seats: ' + shown


def test_seat_count_may_be_a_string_of_digits():
    assert errors_of(seats='72') == []


def test_zero_seats_warns():
    warnings = warnings_of(seats=0)
    assert warnings == ['dralab_seats: no workshop seats are configured']


def test_more_than_99_seats_widen_the_names():
    assert effective_settings(config(seats=100))['seat_names'][-1] == 'user100'
    assert errors_of(seats=100) == []


@pytest.mark.parametrize('width', [0, 11, 'two', -2])
def test_bad_seat_width(width):
    only_error('dralab_seat_width', seat_width=width)


@pytest.mark.parametrize('prefix, reason', [
    ('User', 'not a valid Linux user name'),
    ('9lives', 'not a valid Linux user name'),
    ('', 'not a valid Linux user name'),
    ('u_', 'not a valid Linux user name'),
    ('a' * 31, 'longer than 32 characters'),
])
def test_bad_seat_prefix(prefix, reason):
    message = only_error('dralab_seat_prefix', seat_prefix=prefix)
    assert reason in message


def test_seat_prefix_not_a_string():
    assert only_error('dralab_seat_prefix', seat_prefix=7) == 'dralab_seat_prefix: 7 is not a string'


def test_duplicate_explicit_seat_names():
    message = only_error('dralab_seat_names', seat_names=['ann', 'bob', 'ann', 'cy', 'bob', 'ann'])
    assert message == 'dralab_seat_names: duplicate seat names: ann, bob'


@pytest.mark.parametrize('name, reason', [
    ('Bob', 'not a valid Linux user name and DNS-1123 label'),
    ('bob_smith', 'not a valid Linux user name and DNS-1123 label'),
    ('bob-', 'not a valid Linux user name and DNS-1123 label'),
    ('1bob', 'not a valid Linux user name and DNS-1123 label'),
    ('bob.smith', 'not a valid Linux user name and DNS-1123 label'),
    ('', 'the name is empty'),
    ('b' * 33, 'longer than 32 characters'),
    (42, 'is not a string'),
    ('root', 'reserved'),
    ('kube-system', 'reserved'),
    ('default', 'reserved'),
])
def test_bad_explicit_seat_name(name, reason):
    message = only_error('dralab_seat_names', seat_names=['ann', name])
    assert message.startswith('dralab_seat_names: seat 2: ')
    assert reason in message


def test_explicit_seat_names_override_count_and_prefix():
    # seats/prefix/width are ignored (even when bad) once the list is given.
    assert errors_of(seat_names=['ann', 'bob'], seats=-1, seat_prefix='BAD') == []
    assert effective_settings(config(seat_names=['ann', 'bob']))['seat_names'] == ['ann', 'bob']


def test_explicit_seat_names_not_a_list():
    only_error('dralab_seat_names', seat_names='ann,bob')


# ---------------------------------------------------------------- devices per node

@pytest.mark.parametrize('value, message', [
    (200, 'dralab_devices_per_node: 200 is outside 1..128'),
    (0, 'dralab_devices_per_node: 0 is outside 1..128'),
    (129, 'dralab_devices_per_node: 129 is outside 1..128'),
    ('eight', "dralab_devices_per_node: 'eight' is not an integer"),
    (False, 'dralab_devices_per_node: false is not an integer'),
])
def test_bad_devices_per_node(value, message):
    assert errors_of(devices_per_node=value) == [message]


@pytest.mark.parametrize('value', [1, 8, 128, '16'])
def test_good_devices_per_node(value):
    assert errors_of(devices_per_node=value) == []


# ---------------------------------------------------------------- device classes
# preflight uses the device_classes role's own menu validation
# (module_utils/dra/menu.py); these check that it is wired in and
# that each message names dralab_device_classes, the entry and the field.

def classes_errors(classes):
    errors = errors_of(device_classes=classes)
    assert errors, classes
    assert all(error.startswith('dralab_device_classes') for error in errors), errors
    return errors


def test_device_class_without_name():
    assert classes_errors([{'selectors': ['true']}]) == ['dralab_device_classes[0].name is missing or empty']
    assert classes_errors([{'name': '', 'selectors': ['true']}]) == ['dralab_device_classes[0].name is missing or empty']


@pytest.mark.parametrize('name', ['GPU', 'gpu_small', '-gpu', 'gpu.', 'a' * 254, 7])
def test_device_class_bad_name(name):
    errors = classes_errors([{'name': name, 'selectors': ['true']}])
    assert len(errors) == 1
    assert errors[0].startswith('dralab_device_classes[0].name')
    assert 'is not a DNS-1123 subdomain' in errors[0] or 'missing' in errors[0]


def test_device_class_duplicate_names():
    menu = [{'name': 'gpu', 'selectors': ['true']}, {'name': 'big', 'selectors': ['true']},
            {'name': 'gpu', 'selectors': ['true']}]
    assert classes_errors(menu) == ['dralab_device_classes[2].name "gpu" is a duplicate of dralab_device_classes[0].name']


@pytest.mark.parametrize('selector', ['', '   ', '\n\t', {'cel': {'expression': ' '}}])
def test_device_class_empty_cel_selector_names_class_and_index(selector):
    menu = [{'name': 'gpu', 'selectors': ['true']}, {'name': 'gpu-big', 'selectors': ['true', selector]}]
    assert classes_errors(menu) == ['dralab_device_classes[1] (gpu-big).selectors[1] is an empty CEL expression']


@pytest.mark.parametrize('selector', [7, None, {'expression': 'true'}, {'cel': 'true'},
                                      {'cel': {'expression': 3}}, {'cel': {'expression': 'true'}, 'x': 1}])
def test_device_class_malformed_selector(selector):
    errors = classes_errors([{'name': 'gpu', 'selectors': [selector]}])
    assert len(errors) == 1
    assert errors[0].startswith('dralab_device_classes[0] (gpu).selectors[0] must be a CEL expression string')


@pytest.mark.parametrize('selectors', [None, [], "device.driver == 'x'"])
def test_device_class_needs_selectors(selectors):
    errors = classes_errors([{'name': 'gpu', 'selectors': selectors}])
    assert errors[0].startswith('dralab_device_classes[0] (gpu).selectors must list at least one CEL expression')


@pytest.mark.parametrize('entry, part', [
    ({'opaque': 'gpu.example.com'}, 'config[0] must be {opaque:'),
    ({'opaque': {'driver': 'gpu.example.com', 'parameters': {}}, 'other': 1}, 'config[0] must be {opaque:'),
    ({'opaque': {'parameters': {}}}, 'config[0] must be {opaque:'),
    ({'opaque': {'driver': 'GPU!', 'parameters': {}}}, 'config[0].driver "GPU!" is not a driver name'),
    ({'opaque': {'driver': 'gpu.example.com', 'parameters': 'x'}}, 'config[0].parameters must be a mapping'),
])
def test_device_class_malformed_config(entry, part):
    errors = classes_errors([{'name': 'gpu', 'selectors': ['true'], 'config': [entry]}])
    assert len(errors) == 1
    assert errors[0].startswith('dralab_device_classes[0] (gpu).' + part), errors


def test_device_class_config_not_a_list():
    errors = classes_errors([{'name': 'gpu', 'selectors': ['true'], 'config': {'opaque': {}}}])
    assert errors[0].startswith('dralab_device_classes[0] (gpu).config must be a list')


def test_device_classes_not_a_list():
    assert classes_errors({'name': 'gpu'})[0].startswith('dralab_device_classes must be a list')


def test_device_class_entry_not_a_mapping():
    assert classes_errors(['gpu'])[0].startswith('dralab_device_classes[0] must be a mapping')


def test_device_class_unknown_key():
    errors = classes_errors([{'name': 'gpu', 'selectors': ['true'], 'selector': ['true']}])
    assert errors[0].startswith('dralab_device_classes[0] (gpu) has unknown keys selector')


def test_device_classes_default_is_not_checked():
    assert errors_of(device_classes=...) == []
    assert errors_of(device_classes=[]) == []


# ---------------------------------------------------------------- Kubernetes version

@pytest.mark.parametrize('version', ['1.35.0', '1.35.4', '1.35.10', '1.35.0-rc.1', '1.35.4+build.1'])
def test_supported_versions(version):
    assert errors_of(kubernetes_version=version) == []


@pytest.mark.parametrize('version, reason', [
    ('v1.35.4', 'without the leading "v"'),
    ('1.35', 'is not a semantic version'),
    ('1.35.x', 'is not a semantic version'),
    ('01.35.4', 'is not a semantic version'),
    ('latest', 'is not a semantic version'),
    (1.35, 'is not a version string'),
    ('1.34.2', 'is outside 1.35.x'),
    ('1.36.0', 'is outside 1.35.x'),
])
def test_bad_versions(version, reason):
    assert reason in only_error('dralab_kubernetes_version', kubernetes_version=version)


def test_unsupported_version_allowed_is_a_warning():
    warnings = warnings_of(kubernetes_version='1.36.1', allow_unsupported_kubernetes_version=True,
                           feature_gates=['SomeFutureGate'])
    assert len(warnings) == 1
    assert warnings[0].startswith("dralab_kubernetes_version: '1.36.1' is outside 1.35.x")


def test_allow_unsupported_must_be_a_boolean():
    only_error('dralab_allow_unsupported_kubernetes_version', allow_unsupported_kubernetes_version='maybe')
    assert errors_of(allow_unsupported_kubernetes_version='yes', kubernetes_version='1.36.0') == []


# ---------------------------------------------------------------- feature gates

def test_unknown_feature_gate():
    message = only_error('dralab_feature_gates', feature_gates=['DRADeviceTaints', 'FooBar'])
    assert message == "dralab_feature_gates: unknown feature gate 'FooBar' for Kubernetes 1.35"


@pytest.mark.parametrize('name, suggestion', [
    ('draadminaccess', 'DRAAdminAccess'),
    ('DRADeviceTaint', 'DRADeviceTaints'),
    ('DRAConsumableCapacty', 'DRAConsumableCapacity'),
])
def test_unknown_feature_gate_suggests_a_known_one(name, suggestion):
    assert '(did you mean %s?)' % suggestion in only_error('dralab_feature_gates', feature_gates=[name])


@pytest.mark.parametrize('gates', [
    ['DRAAdminAccess=maybe'],
    ['=true'],
    ['DRA Admin'],
    [7],
    'DRAAdminAccess=true,=x',
    {'DRAAdminAccess': 'sometimes'},
    42,
])
def test_malformed_feature_gates(gates):
    only_error('dralab_feature_gates', feature_gates=gates)


@pytest.mark.parametrize('gates', [
    ['DRAAdminAccess', 'DRADeviceTaints=false', 'AllAlpha=false'],
    {'DRAAdminAccess': True, 'DRAPartitionableDevices': False},
    'DRAAdminAccess=true,DRAExtendedResource',
    [{'DRAAdminAccess': True}, 'DRADeviceTaintRules=TRUE'],
    [],
])
def test_good_feature_gates(gates):
    assert errors_of(feature_gates=gates) == []


def test_locked_gate_set_against_its_default_is_an_error():
    message = only_error('dralab_feature_gates', feature_gates=['DynamicResourceAllocation=false'])
    assert 'DynamicResourceAllocation is GA and locked to true' in message


def test_locked_gate_set_to_its_default_warns():
    warnings = warnings_of(feature_gates=['DynamicResourceAllocation'])
    assert warnings == ['dralab_feature_gates: DynamicResourceAllocation is GA and locked to true in '
                        'Kubernetes 1.35; setting it has no effect']


def test_known_gates_are_the_1_35_set():
    dra = {'DRAAdminAccess', 'DRAConsumableCapacity', 'DRADeviceBindingConditions', 'DRADeviceTaintRules',
           'DRADeviceTaints', 'DRAExtendedResource', 'DRAPartitionableDevices', 'DRAPrioritizedList',
           'DRAResourceClaimDeviceStatus', 'DRASchedulerFilterTimeout', 'DynamicResourceAllocation',
           'ResourceHealthStatus'}
    assert dra <= KNOWN_FEATURE_GATES
    # From the other modules wired into the same gate.
    assert {'AllAlpha', 'AllBeta', 'WatchListClient', 'ContextualLogging', 'LoggingBetaOptions',
            'ComponentFlagz', 'CRDValidationRatcheting', 'CloudControllerManagerWebhook',
            'APIServerIdentity'} <= KNOWN_FEATURE_GATES
    # Gates removed before 1.35, and one declared but never registered.
    assert not {'DevicePlugins', 'CSIMigration', 'LoggingStableOptions', 'FooBar'} & KNOWN_FEATURE_GATES
    assert len(KNOWN_FEATURE_GATES) == 218
    assert FEATURE_GATES['DRAConsumableCapacity'] == ('Alpha', False, False)
    assert FEATURE_GATES['DRAPrioritizedList'] == ('Beta', True, False)
    assert FEATURE_GATES['DynamicResourceAllocation'] == ('GA', True, True)


# ---------------------------------------------------------------- login hosts

def test_login_host_not_in_inventory():
    assert errors_of(login_hosts=['login1', 'login9']) == [
        "dralab_login_hosts: 'login9' is not a host in the inventory"]


def test_login_hosts_not_a_list():
    assert errors_of(login_hosts='login1') == ["dralab_login_hosts: 'login1' is not a list of inventory host names"]


def test_login_hosts_default_to_the_login_group():
    assert errors_of(login_hosts=...) == []
    groups = dict(GOOD['groups'], login=['login1', 'ghost'])
    assert errors_of(login_hosts=..., groups=groups) == ["dralab_login_hosts: 'ghost' is not a host in the inventory"]


def test_no_login_hosts_warns():
    groups = dict(GOOD['groups'], all=['cp1', 'node1', 'node2'])
    del groups['login']
    assert warnings_of(login_hosts=..., groups=groups, hosts=groups['all']) == [
        'dralab_login_hosts: no login hosts; seats get a kubeconfig but no Linux account']
    assert warnings_of(login_hosts=[]) == [
        'dralab_login_hosts: no login hosts; seats get a kubeconfig but no Linux account']


def test_seat_login_host_overrides():
    groups = dict(GOOD['groups'], all=HOSTS + ['login2'], login=['login1', 'login2'])
    assert errors_of(groups=groups, hosts=groups['all'], login_hosts=['login1', 'login2'],
                     seat_login_hosts={'user05': 'login2', 'user06': 'login1'}) == []
    assert errors_of(seat_login_hosts={}) == []
    assert errors_of(seat_login_hosts={'user99': 'login1', 'user01': 'cp1'}) == [
        "dralab_seat_login_hosts: 'cp1' of seat user01 is not a login host (login hosts: login1)",
        "dralab_seat_login_hosts: 'user99' is not a seat of this lab (seats: user01, user02, user03, ..., user71, "
        "user72)"]
    assert errors_of(seat_login_hosts=['user01']) == [
        'dralab_seat_login_hosts: ["user01"] is not a mapping of seat names to login hosts']
    # The login group stands for dralab_login_hosts when that is not set; explicit seat names are the seats.
    assert errors_of(login_hosts=..., seats=..., seat_names=['ana', 'bo'], seat_login_hosts={'bo': 'login1'}) == []
    assert errors_of(login_hosts=[], seat_login_hosts={'user01': 'login1'}) == [
        "dralab_seat_login_hosts: 'login1' of seat user01 is not a login host (login hosts: none)"]


# ---------------------------------------------------------------- event duration

@pytest.mark.parametrize('value', ['8h', '90m', '2d', '1h30m', '3600s', 3600, '600', '1w'])
def test_good_event_duration(value):
    assert errors_of(event_duration=value) == []


@pytest.mark.parametrize('value, reason', [
    ('8x', "'8x' is not a duration"),
    ('', "'' is not a duration"),
    ('h', "'h' is not a duration"),
    ('30m1h', "'30m1h' is not a duration"),
    (True, 'true is not a duration'),
    (-5, '-5 is a negative duration'),
    ('5m', "'5m' is shorter than 10m"),
    (0, '0 is shorter than 10m'),
])
def test_bad_event_duration(value, reason):
    assert reason in only_error('dralab_event_duration', event_duration=value)


# ---------------------------------------------------------------- mirrors

@pytest.mark.parametrize('value', ['', '10.88.0.1:5000', 'mirror.lab', 'mirror.lab:5000', '[fd00::1]:5000',
                                   'localhost:5000'])
def test_good_registry_mirror(value):
    assert errors_of(registry_mirror=value) == []


@pytest.mark.parametrize('value, reason', [
    ('http://10.88.0.1:5000', 'has a scheme'),
    ('10.88.0.1:5000/v2', 'is not host[:port]'),
    ('10.88.0.1:0', 'port 0 is outside 1..65535'),
    ('10.88.0.1:70000', 'port 70000 is outside 1..65535'),
    ('mirror lab:5000', 'is not a valid host name'),
    ('-mirror:5000', 'is not a valid host name'),
    ('[zz]:5000', 'is not a valid [IPv6] address'),
    (5000, 'is not a string'),
])
def test_bad_registry_mirror(value, reason):
    assert reason in only_error('dralab_registry_mirror', registry_mirror=value)


@pytest.mark.parametrize('value', ['', 'http://10.88.0.1:8080', 'https://mirror.lab/files/', 'HTTP://m:1'])
def test_good_download_mirror(value):
    assert errors_of(download_mirror=value) == []


@pytest.mark.parametrize('value', ['10.88.0.1:8080', 'ftp://mirror.lab', 'http://', 'http:///x',
                                   'http://bad host/', 'http://m:99999', 8080])
def test_bad_download_mirror(value):
    only_error('dralab_download_mirror', download_mirror=value)


# ---------------------------------------------------------------- booleans

def test_cgroup_v1_must_be_a_boolean():
    assert only_error('dralab_cgroup_v1', cgroup_v1='perhaps') == "dralab_cgroup_v1: 'perhaps' is not a boolean (true or false)"
    assert errors_of(cgroup_v1='true') == []


# ---------------------------------------------------------------- helpers

def test_generate_seat_names():
    assert generate_seat_names(3) == ['user01', 'user02', 'user03']
    assert generate_seat_names(0) == []
    assert generate_seat_names('2', 'gpu', 3) == ['gpu001', 'gpu002']
    assert generate_seat_names(101)[-2:] == ['user100', 'user101']
    with pytest.raises(ValueError, match='count -1 is negative'):
        generate_seat_names(-1)
    with pytest.raises(ValueError, match="count 'x' is not an integer"):
        generate_seat_names('x')


def test_mirror_url():
    assert mirror_url('https://dl.k8s.io/release', '') == 'https://dl.k8s.io/release'
    assert mirror_url('https://dl.k8s.io/release', None) == 'https://dl.k8s.io/release'
    assert (mirror_url('https://dl.k8s.io/release', 'http://10.88.0.1:8080')
            == 'http://10.88.0.1:8080/dl.k8s.io/release')
    with pytest.raises(ValueError, match='not an http'):
        mirror_url('https://dl.k8s.io/release', '10.88.0.1:8080')


def test_parse_feature_gates_last_setting_wins():
    gates, problems = parse_feature_gates(['A', 'B=false', {'A': False}, 'B=TRUE'])
    assert problems == []
    assert gates == {'A': False, 'B': True}


@pytest.mark.parametrize('changes, field, shown', [
    ({'lease_default': 'soon'}, 'dralab_lease_default', "'soon' is not a duration"),
    ({'lease_max': '1x'}, 'dralab_lease_max', "'1x' is not a duration"),
    ({'lease_default': '9h'}, 'dralab_lease_default', "'9h' is longer than dralab_lease_max '8h'"),
    ({'waitlist_turn': 'a minute'}, 'dralab_waitlist_turn', "'a minute' is not a duration"),
    ({'waitlist_turn': '3s'}, 'dralab_waitlist_turn', "'3s' is shorter than 5s"),
])
def test_bad_leases(changes, field, shown):
    assert shown in only_error(field, **changes)
