# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/preflight.yml against small inventories written to tmp_path.

The play runs on localhost only and contacts no other host.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).with_name('ansible-playbook')

LOCALHOST = {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}


def write_inventory(tmp_path, inventory):
    path = tmp_path / 'hosts.yml'
    # JSON is YAML: the inventory is written exactly as given.
    path.write_text(json.dumps(inventory, indent=2))
    return path


def run_playbooks(tmp_path, inventory, playbooks, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'), ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json',
               # Facts of this run only: never facts another run cached for the same host names.
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / 'facts'))
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), '-i', str(write_inventory(tmp_path, inventory))] + list(playbooks) + list(extra),
        cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def run_preflight(tmp_path, inventory, *extra):
    return run_playbooks(tmp_path, inventory, ['playbooks/preflight.yml'], *extra)


def recap(output):
    """host -> {ok: n, changed: n, unreachable: n, failed: n, ...} from the PLAY RECAP."""
    hosts = {}
    for match in re.finditer(r'^(\S+)\s+:\s+((?:\w+=\d+\s*)+)$', output, re.MULTILINE):
        hosts[match.group(1)] = dict((key, int(value)) for key, value in re.findall(r'(\w+)=(\d+)', match.group(2)))
    return hosts


def assert_no_host_contacted(result):
    """No task ran on a node: only localhost appears in the recap with work done."""
    for host, counts in recap(result.stdout).items():
        if host != 'localhost':
            assert counts['ok'] == counts['changed'] == counts['unreachable'] == counts['failed'] == 0, \
                host + '\n' + result.stdout


def flat(result):
    # Compare without line breaks, whatever the callback's layout.
    return ' '.join((result.stdout + result.stderr).split())


def good_inventory():
    return {'all': {
        'hosts': dict(LOCALHOST),
        'vars': {
            'dralab_kubernetes_version': '1.35.4',
            'dralab_seats': 3,
            'dralab_devices_per_node': 8,
            'dralab_feature_gates': ['DRAConsumableCapacity', 'DRADeviceTaints'],
            'dralab_device_classes': [
                {'name': 'gpu.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]},
            ],
            'dralab_login_hosts': ['cp1'],
            'dralab_event_duration': '8h',
        },
        'children': {
            'control_plane': {'hosts': {'cp1': {'ansible_host': '192.0.2.10'}}},
            'workers': {'hosts': {'node1': {'ansible_host': '192.0.2.11'}}},
            'login': {'hosts': {'cp1': {}}},
        },
    }}


BAD_FIELDS = [
    "groups['control_plane']",
    "dralab_seats: -1 is outside 0..10000",
    "dralab_devices_per_node: 200 is outside 1..128",
    "dralab_device_classes[0] (gpu-small).selectors[1] is an empty CEL expression",
    "dralab_feature_gates: unknown feature gate 'FooBar' for Kubernetes 1.35",
    "dralab_login_hosts: 'login9' is not a host in the inventory",
    "groups['ungrouped']: node1 is in none of the groups the playbooks use (control_plane, workers, login, mirror)",
]


def bad_inventory():
    # No control_plane group: the lab-wide variables come from group "all".
    return {'all': {
        'hosts': dict(LOCALHOST, node1={'ansible_host': '192.0.2.11'}),
        'vars': {
            'dralab_seats': -1,
            'dralab_devices_per_node': 200,
            'dralab_device_classes': [
                {'name': 'gpu-small', 'selectors': ["device.driver == 'gpu.example.com'", '   ']},
            ],
            'dralab_feature_gates': ['DRADeviceTaints', 'FooBar'],
            'dralab_login_hosts': ['login9'],
        },
    }}


def test_good_inventory_passes_without_contacting_a_node(tmp_path):
    # The nodes' OS release is checked from their facts; seeded facts stand in for the nodes at 192.0.2.x
    # (which do not exist), so the good inventory goes through both plays without contacting one.
    result = run_with_facts(tmp_path, good_inventory(), 'Debian', '12.11', '-v')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'failed=0' in result.stdout
    assert 'user03' in result.stdout and 'user04' not in result.stdout
    assert 'DRAConsumableCapacity' in result.stdout
    assert recap(result.stdout)['cp1']['unreachable'] == 0
    assert 'Stop on an OS release the lab does not support' in result.stdout


def seed_facts(tmp_path, distribution, version):
    """A playbook that gives every node the OS facts of a release, without contacting it.

    It runs before playbooks/preflight.yml in the same ansible-playbook run;
    set_fact with cacheable puts the values into ansible_facts, as a gathered
    (or cached) fact would be, so the preflight reads them and skips gathering.
    """
    path = tmp_path / 'seed-facts.yml'
    path.write_text(json.dumps([{
        'name': 'Seed the OS facts of the nodes',
        'hosts': 'control_plane:workers:login',
        'gather_facts': False,
        'tasks': [{
            'name': 'Set the OS release facts',
            'ansible.builtin.set_fact': {
                'cacheable': True,
                'distribution': distribution,
                'distribution_version': version,
                'distribution_major_version': version.split('.')[0],
            },
        }],
    }], indent=2))
    return path


def run_with_facts(tmp_path, inventory, distribution, version, *extra):
    """The seeding playbook, then playbooks/preflight.yml, in one ansible-playbook run."""
    return run_playbooks(tmp_path, inventory, [str(seed_facts(tmp_path, distribution, version)),
                                               'playbooks/preflight.yml'], *extra)


def test_bad_inventory_fails_naming_each_field(tmp_path):
    result = run_preflight(tmp_path, bad_inventory())
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for message in BAD_FIELDS:
        assert message in flat(result), message + '\n' + output
    assert 'Preflight found %d problem(s)' % len(BAD_FIELDS) in flat(result)
    assert_no_host_contacted(result)


@pytest.mark.parametrize('sample', ['workshop', 'local'])
def test_the_sample_inventories_pass(tmp_path, sample):
    # The inventories as shipped, through the module (seeded facts stand in for the nodes' OS release).
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'), ANSIBLE_CACHE_PLUGIN_CONNECTION=str(tmp_path / 'facts'),
               DRALAB_CACHE=str(tmp_path / 'cache'))
    playbooks = [str(seed_facts(tmp_path, 'Debian', '12.11')), 'playbooks/preflight.yml']
    result = subprocess.run(
        [str(ANSIBLE_PLAYBOOK), '-i', 'inventories/%s/hosts.yml' % sample, '-e',
         'ansible_python_interpreter=' + sys.executable] + playbooks,
        cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Preflight found' not in result.stdout
    assert 'Validate the inventory and the lab-wide settings' in result.stdout
    assert all(counts['unreachable'] == 0 for counts in recap(result.stdout).values()), result.stdout


def test_extra_vars_override_the_inventory(tmp_path):
    result = run_preflight(tmp_path, good_inventory(), '-e', 'dralab_kubernetes_version=1.36.0')
    assert result.returncode != 0
    assert "dralab_kubernetes_version: '1.36.0' is outside 1.35.x" in flat(result)
    assert_no_host_contacted(result)


@pytest.mark.parametrize('tags', ['preflight', 'something_else'])
def test_runs_with_any_tag(tmp_path, tags):
    result = run_preflight(tmp_path, bad_inventory(), '--tags', tags)
    assert result.returncode != 0
    assert 'Preflight found' in result.stdout


# ------------------------------------------------------------------ one bad input each

def with_vars(**variables):
    inventory = good_inventory()
    inventory['all']['vars'].update(variables)
    return inventory


def two_control_planes():
    inventory = good_inventory()
    inventory['all']['children']['control_plane']['hosts']['cp2'] = {'ansible_host': '192.0.2.12'}
    return inventory


def seats_on_the_login_group_only():
    # The split the issue found: the Kubernetes half (localhost) would make 72 seats, the Linux half 3.
    inventory = good_inventory()
    del inventory['all']['vars']['dralab_seats']
    inventory['all']['children']['login']['vars'] = {'dralab_seats': 3}
    return inventory


def chart_version_on_control_plane(value):
    inventory = good_inventory()
    inventory['all']['children']['control_plane']['vars'] = {'dra_driver_chart_version': value}
    return inventory


def node_in_pod_network():
    inventory = with_vars(dralab_pod_subnet='192.0.2.0/24')
    return inventory


def worker_in_a_misspelt_group():
    inventory = good_inventory()
    inventory['all']['children']['worker'] = inventory['all']['children'].pop('workers')
    return inventory


def ipv6_worker():
    inventory = good_inventory()
    inventory['all']['children']['workers']['hosts']['node1']['ansible_host'] = '2001:db8::11'
    return inventory


BAD_INPUTS = {
    'worker in a misspelt group': (
        worker_in_a_misspelt_group(),
        "groups['worker']: node1 is in none of the groups the playbooks use (control_plane, workers, login, mirror), "
        "so no play reaches it (did you mean workers?)"),
    'IPv6 node address': (
        ipv6_worker(),
        'ansible_host of node1: 2001:db8::11 is an IPv6 address; the lab is IPv4 only'),
    'login host outside the login group': (
        with_vars(dralab_login_hosts=['node1']),
        'dralab_login_hosts: node1 is not in the login group'),
    'two control plane hosts': (
        two_control_planes(),
        "groups['control_plane']: 2 hosts (cp1, cp2); the lab builds one control plane node (no HA)"),
    'pod subnet not a network': (
        with_vars(dralab_pod_subnet='10.244.0.0'),
        "dralab_pod_subnet: '10.244.0.0' is not a network in CIDR notation"),
    'pod subnet with host bits': (
        with_vars(dralab_pod_subnet='10.244.1.0/16'),
        "dralab_pod_subnet: '10.244.1.0/16' is not a network in CIDR notation (10.244.1.0/16 has host bits set)"),
    'service subnet not a network': (
        with_vars(dralab_service_subnet='services'),
        "dralab_service_subnet: 'services' is not a network in CIDR notation"),
    'pod and service subnets overlap': (
        with_vars(dralab_pod_subnet='10.96.0.0/16'),
        'dralab_service_subnet: 10.96.0.0/12 overlaps dralab_pod_subnet 10.96.0.0/16'),
    'pod subnet holds a node address': (
        node_in_pod_network(),
        'dralab_pod_subnet: 192.0.2.0/24 contains node addresses cp1 (192.0.2.10), node1 (192.0.2.11)'),
    'chart version with a v and no patch': (
        chart_version_on_control_plane('v0.4'),
        "dra_driver_chart_version: 'v0.4' is not a semantic version like 1.2.3 (major.minor.patch, no leading \"v\")"),
    'chart version without patch': (
        chart_version_on_control_plane('0.4'),
        "dra_driver_chart_version: '0.4' is not a semantic version like 1.2.3"),
    'image tag not a version': (
        with_vars(dra_driver_image_tag='latest'),
        "dra_driver_image_tag: 'latest' is not a semantic version like v1.2.3"),
    'setting on one group only': (
        seats_on_the_login_group_only(),
        'dralab_seats: differs between the hosts of the lab: 3 on cp1; 72 on localhost, node1'),
    'CEL selector with a syntax error': (
        with_vars(dralab_device_classes=[
            {'name': 'gpu-40gi.example.com',
             'selectors': ["device.driver == 'gpu.example.com' && "
                           "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >="]}]),
        'dralab_device_classes[0] (gpu-40gi.example.com).selectors[0] does not compile: syntax error in CEL expression'),
    'CEL selector with an unknown variable': (
        with_vars(dralab_device_classes=[{'name': 'gpu.example.com', 'selectors': ["gpu.driver == 'gpu.example.com'"]}]),
        "dralab_device_classes[0] (gpu.example.com).selectors[0] does not compile: "
        "CEL expression \"gpu.driver == 'gpu.example.com'\" does not compile: undeclared reference to 'gpu'"),
    'seat object count below the lab\'s own': (
        with_vars(workshop_users_quota_objects=1),
        'workshop_users_quota_objects: 1 of each kind is fewer than the workshop itself needs in every seat namespace'),
    'pod grace maximum below the demos\' pods': (
        with_vars(workshop_users_pod_grace_max=5),
        'workshop_users_pod_grace_max: 5 s is less than the 30 s Kubernetes gives every pod'),
    'empty CEL selector': (
        with_vars(dralab_device_classes=[{'name': 'gpu.example.com', 'selectors': [' ']}]),
        'dralab_device_classes[0] (gpu.example.com).selectors[0] is an empty CEL expression'),
}


@pytest.mark.parametrize('case', sorted(BAD_INPUTS))
def test_bad_input_stops_before_any_host_task(tmp_path, case):
    inventory, message = BAD_INPUTS[case]
    result = run_preflight(tmp_path, inventory)
    assert result.returncode != 0, result.stdout
    assert message in flat(result), message + '\n' + result.stdout + result.stderr
    assert_no_host_contacted(result)
    # The OS play (the first that would contact a node) never started.
    assert 'Check the operating system of every node' not in result.stdout


@pytest.mark.parametrize('distribution, version', [('Debian', '11.9'), ('Debian', '14.1'), ('Ubuntu', '24.04'),
                                                   ('CentOS', '9')])
def test_unsupported_os_release_stops_before_any_change(tmp_path, distribution, version):
    result = run_with_facts(tmp_path, good_inventory(), distribution, version)
    assert result.returncode != 0, result.stdout
    message = ("ansible_facts['distribution_version'] of cp1: %s %s is not a supported release "
               "(supported: Debian 12, Debian 13, the releases the lab is tested on)" % (distribution, version))
    assert message in flat(result), result.stdout + result.stderr
    # Facts only: no node was contacted (the seeded facts made gathering unnecessary).
    assert all(counts['unreachable'] == 0 for counts in recap(result.stdout).values()), result.stdout


def test_misspelt_setting_stops_naming_the_closest_known_one(tmp_path):
    result = run_preflight(tmp_path, with_vars(dralab_seat=30))
    assert result.returncode != 0, result.stdout + result.stderr
    assert 'dralab_seat is not a lab setting; did you mean dralab_seats? (set for cp1, localhost, node1)' \
        in flat(result), result.stdout + result.stderr
    assert 'Preflight found 1 problem(s)' in flat(result)
    assert_no_host_contacted(result)
    # The OS play (the first that would contact a node) never started.
    assert 'Check the operating system of every node' not in result.stdout


def test_extra_vars_settle_a_setting_for_every_host(tmp_path):
    result = run_with_facts(tmp_path, seats_on_the_login_group_only(), 'Debian', '12.11', '-e', 'dralab_seats=5', '-v')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'user05' in result.stdout and 'user06' not in result.stdout


def test_a_second_import_checks_nothing_again_and_hands_the_settings_on(tmp_path):
    # site.yml imports preflight.yml once per part; a play after it reads the resolved values on a node.
    show = tmp_path / 'show.yml'
    show.write_text(json.dumps([{
        'name': 'Show what a node play sees', 'hosts': 'cp1', 'gather_facts': False,
        'tasks': [{'name': 'Show the seats', 'ansible.builtin.debug': {'msg': 'seats={{ dralab_seats }}'}}],
    }]))
    playbooks = [str(seed_facts(tmp_path, 'Debian', '12.11')), 'playbooks/preflight.yml', 'playbooks/preflight.yml',
                 str(show)]
    result = run_playbooks(tmp_path, good_inventory(), playbooks)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count('Preflight found') == 0
    validations = re.findall(r'TASK \[Validate the inventory and the lab-wide settings\][^\n]*\n(\w+): \[localhost\]',
                             result.stdout)
    assert validations == ['ok', 'skipping'], result.stdout
    assert 'seats=3' in result.stdout
    assert recap(result.stdout)['cp1']['unreachable'] == 0


def test_site_stops_in_preflight_before_the_cluster(tmp_path):
    result = run_playbooks(tmp_path, two_control_planes(), ['playbooks/site.yml'])
    assert result.returncode != 0
    assert "groups['control_plane']: 2 hosts" in flat(result)
    assert 'Prepare every node' not in result.stdout
    assert_no_host_contacted(result)


@pytest.mark.parametrize('playbook', ['site.yml', 'cluster.yml', 'driver.yml', 'users.yml', 'reset.yml',
                                      'health.yml'])
def test_every_lab_playbook_starts_with_preflight(playbook):
    plays = yaml.safe_load((REPO / 'playbooks' / playbook).read_text())
    assert plays[0].get('ansible.builtin.import_playbook') == 'preflight.yml', playbook


# The playbooks that do not start with preflight, each with the reason docs/architecture.md gives.
WITHOUT_PREFLIGHT = {'preflight.yml', 'teardown.yml', 'mirror.yml'}


def test_only_the_documented_playbooks_skip_the_preflight():
    skipping = set(path.name for path in (REPO / 'playbooks').glob('*.yml')
                   if yaml.safe_load(path.read_text())[0].get('ansible.builtin.import_playbook') != 'preflight.yml')
    assert skipping == WITHOUT_PREFLIGHT
    architecture = ' '.join((REPO / 'docs' / 'architecture.md').read_text().split())
    for playbook in sorted(WITHOUT_PREFLIGHT - {'preflight.yml'}):
        assert '`%s`, which' % playbook in architecture, playbook


def test_the_play_hands_over_every_role_bound():
    """preflight.yml reads the variables of lab_settings.ROLE_BOUNDS, no more, no less."""
    from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import ROLE_BOUNDS
    play = yaml.safe_load((REPO / 'playbooks' / 'preflight.yml').read_text())[0]
    names = re.search(r"for name in \[([^\]]*)\]", play['vars']['preflight_role_bounds']).group(1)
    assert sorted(re.findall(r"'([a-z_]+)'", names)) == sorted(ROLE_BOUNDS)
