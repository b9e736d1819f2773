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
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = pathlib.Path(sys.executable).with_name('ansible-playbook')

LOCALHOST = {'localhost': {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}}


def run_preflight(tmp_path, inventory, *extra):
    path = tmp_path / 'hosts.yml'
    # JSON is YAML: the inventory is written exactly as given.
    path.write_text(json.dumps(inventory, indent=2))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'), ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_CALLBACK_RESULT_FORMAT='json')
    return subprocess.run(
        [str(ANSIBLE_PLAYBOOK), '-i', str(path), 'playbooks/preflight.yml'] + list(extra),
        cwd=str(REPO), env=env, capture_output=True, text=True, timeout=300, check=False,
    )


def good_inventory():
    return {'all': {
        'hosts': dict(LOCALHOST),
        'children': {
            'cluster': {
                # Not visible on localhost: the play must read them from the control_plane host.
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
                },
            },
        },
    }}


BAD_FIELDS = [
    "groups['control_plane']",
    "dralab_seats: -1 is outside 0..10000",
    "dralab_devices_per_node: 200 is outside 1..128",
    "dralab_device_classes[0] (gpu-small).selectors[1] is an empty CEL expression",
    "dralab_feature_gates: unknown feature gate 'FooBar' for Kubernetes 1.35",
    "dralab_login_hosts: 'login9' is not a host in the inventory",
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


def test_good_inventory_passes(tmp_path):
    result = run_preflight(tmp_path, good_inventory(), '-v')
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'failed=0' in result.stdout
    # The values came from the control_plane host's group, not the defaults.
    assert 'user03' in result.stdout and 'user04' not in result.stdout
    assert 'DRAConsumableCapacity' in result.stdout


def test_bad_inventory_fails_naming_each_field(tmp_path):
    result = run_preflight(tmp_path, bad_inventory())
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    # Compare without line breaks, whatever the callback's layout.
    flat = ' '.join(output.split())
    for message in BAD_FIELDS:
        assert message in flat, message + '\n' + output
    assert 'Preflight found %d problem(s)' % len(BAD_FIELDS) in flat


def test_variables_of_the_control_plane_group_are_checked(tmp_path):
    inventory = good_inventory()
    inventory['all']['children']['cluster']['vars']['dralab_devices_per_node'] = 200
    result = run_preflight(tmp_path, inventory)
    assert result.returncode != 0
    assert 'dralab_devices_per_node: 200 is outside 1..128' in ' '.join(result.stdout.split())


def test_extra_vars_override_the_inventory(tmp_path):
    result = run_preflight(tmp_path, good_inventory(), '-e', 'dralab_kubernetes_version=1.36.0')
    assert result.returncode != 0
    assert "dralab_kubernetes_version: '1.36.0' is outside 1.35.x" in ' '.join(result.stdout.split())


@pytest.mark.parametrize('tags', ['preflight', 'something_else'])
def test_runs_with_any_tag(tmp_path, tags):
    result = run_preflight(tmp_path, bad_inventory(), '--tags', tags)
    assert result.returncode != 0
    assert 'Preflight found' in result.stdout
