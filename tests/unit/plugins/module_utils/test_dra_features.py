# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_features: what each DRA feature turns on, from one table; the README table and the demos follow it."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra import features as dra_features
from ansible_collections.dralab.workshop.plugins.module_utils.lab_settings import DEFAULTS
from ansible_collections.dralab.workshop.plugins.module_utils.preflight.validate import validate
from ansible_collections.dralab.workshop.plugins.module_utils.dra.menu import validate_menu
from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import FEATURE_GATES

REPO = pathlib.Path(__file__).resolve().parents[4]
BEGIN = '<!-- dralab-features: generated from plugins/module_utils/dra/features.py'
END = '<!-- dralab-features: end -->'
GOOD = {'groups': {'control_plane': ['cp1'], 'workers': [], 'login': ['cp1']}}


def test_every_gate_is_a_1_35_gate_and_every_feature_needs_one():
    for feature in dra_features.FEATURES:
        assert feature.gates, feature
        for gate in feature.gates:
            assert gate in FEATURE_GATES, (feature, gate)
            assert not FEATURE_GATES[gate][2], '%s is locked in 1.35' % gate


def test_device_taints_turn_on_both_gates_and_the_alpha_api():
    assert dra_features.feature_gates(['device_taints']) == ['DRADeviceTaintRules', 'DRADeviceTaints']
    assert dra_features.api_versions(['device_taints']) == ['resource.k8s.io/v1alpha3=true']
    assert dra_features.api_versions(['consumable_capacity']) == []


def test_helm_values_of_several_features_merge():
    values = dra_features.helm_values(['consumable_capacity', 'partitionable_devices', 'device_status',
                                       'binding_conditions'])
    assert values == {'gpuAllowMultipleAllocations': True, 'gpuDeviceStatus': True,
                      'kubeletPlugin': {'gpuPartitions': dra_features.GPU_PARTITIONS, 'bindingConditions': True},
                      'controller': {'plugins': ['BindingConditions']}}
    # The table is not changed by merging.
    assert dra_features.BY_NAME['partitionable_devices'].helm_values == {
        'kubeletPlugin': {'gpuPartitions': dra_features.GPU_PARTITIONS}}


def test_no_feature_no_change():
    for what in ('feature_gates', 'api_versions', 'device_classes', 'demos'):
        assert dra_features.part([], what) == []
        assert dra_features.part(None, what) == []
    assert dra_features.part([], 'helm_values') == {}


def test_feature_classes_leave_out_what_the_menu_names():
    classes = dra_features.device_classes(['consumable_capacity'])
    assert [item['name'] for item in classes] == ['gpu-shared.example.com']
    mine = [{'name': 'gpu-shared.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]}]
    assert dra_features.device_classes(['consumable_capacity'], mine) == []


def test_feature_classes_are_a_valid_menu_whose_cel_compiles():
    classes = dra_features.device_classes(list(dra_features.NAMES))
    assert validate_menu(classes, variable='classes') == []
    if cel_types.HAS_CEL:
        for item in classes:
            for expression in item['selectors']:
                assert dra_cel.compile_problem(expression, consumable_capacity=True) is None, expression


def test_unknown_repeated_and_misshapen_features_are_named():
    problems = dra_features.feature_problems(['consumable_capacity', 'consumable_capcity', 'consumable_capacity', 3])
    assert problems[0].startswith("dralab_dra_features[1]: 'consumable_capcity' is not a DRA feature")
    assert 'did you mean consumable_capacity?' in problems[0]
    assert problems[1] == "dralab_dra_features[2]: 'consumable_capacity' is listed twice"
    assert problems[2].startswith('dralab_dra_features[3]: 3 is not a feature name')
    assert dra_features.feature_problems('device_taints')[0].startswith(
        "dralab_dra_features: 'device_taints' is not a list")
    with pytest.raises(ValueError, match='not a DRA feature'):
        dra_features.part(['nope'], 'feature_gates')
    with pytest.raises(ValueError, match='is not a part'):
        dra_features.part([], 'gates')


def test_preflight_refuses_bad_features_before_any_change():
    errors, dummy = validate(dict(GOOD, dralab_dra_features=['device_taint']))
    assert errors == ["dralab_dra_features[0]: 'device_taint' is not a DRA feature of Kubernetes 1.35 "
                      "(did you mean device_taints?)"]


def test_preflight_refuses_a_gate_switched_off_that_a_feature_needs():
    errors, dummy = validate(dict(GOOD, dralab_dra_features=['device_taints'],
                                  dralab_feature_gates=['DRADeviceTaintRules=false']))
    assert len(errors) == 1
    assert errors[0].startswith('dralab_feature_gates: DRADeviceTaintRules=false switches off what device_taints')


def test_preflight_warns_when_the_seat_quota_is_below_the_demo():
    errors, warnings = validate(dict(GOOD, dralab_dra_features=['consumable_capacity']))
    assert errors == []
    assert warnings == ['dralab_dra_features: consumable_capacity: its demo (docs/demos/consumable-capacity) makes '
                        '3 claims in a seat, and dralab_gpus_per_seat 1 lets a seat hold 1; raise '
                        'dralab_gpus_per_seat to 3 for the seats to run it']
    errors, warnings = validate(dict(GOOD, dralab_dra_features=['consumable_capacity'],
                                     dralab_gpus_per_seat=3))
    assert (errors, warnings) == ([], [])


def test_every_feature_is_valid_together():
    errors, dummy = validate(dict(GOOD, dralab_dra_features=list(dra_features.NAMES),
                                  dralab_gpus_per_seat=3))
    assert errors == []


def test_readme_feature_table_is_the_table():
    text = (REPO / 'README.md').read_text()
    assert BEGIN in text and END in text
    start = text.index('\n', text.index(BEGIN)) + 1
    assert text[start:text.index(END)] == dra_features.markdown_table(), \
        'README.md: the DRA feature table differs from dra/features.py; run make settings-docs'


def test_readme_table_says_which_gate_each_feature_needs():
    table = dra_features.markdown_table()
    assert '| `device_taints` |' in table
    row = [line for line in table.splitlines() if line.startswith('| `device_taints` |')][0]
    assert '`DRADeviceTaints` (alpha)' in row and '`DRADeviceTaintRules` (alpha)' in row
    assert 'API `resource.k8s.io/v1alpha3`' in row


def demo_documents(name):
    documents = []
    for path in sorted((REPO / dra_features.DEMOS_DIR / name).glob('*.yaml')):
        documents.extend((path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc)
    return documents


@pytest.mark.parametrize('name', dra_features.demos(list(dra_features.NAMES)))
def test_each_demo_is_a_folder_of_manifests_for_a_seat_namespace(name):
    folder = REPO / dra_features.DEMOS_DIR / name
    assert (folder / 'README.md').is_file(), name
    documents = demo_documents(name)
    assert documents, name
    for filename, doc in documents:
        assert doc.get('apiVersion') and doc.get('kind'), (filename, doc)
        # No namespace: kubectl apply puts them into the seat's own (instructor files excepted).
        if not filename.startswith('instructor-'):
            assert 'namespace' not in doc['metadata'], (filename, doc['metadata'])
            assert doc['kind'] in ('ResourceClaim', 'ResourceClaimTemplate', 'Pod'), (filename, doc['kind'])


@pytest.mark.parametrize('name', dra_features.demos(list(dra_features.NAMES)))
def test_demo_claims_use_classes_of_the_menu_and_the_features(name):
    menu = [item['name'] for item in DEFAULTS['dralab_device_classes']]
    known = set(menu) | set(item['name'] for item in dra_features.device_classes(list(dra_features.NAMES)))
    for filename, doc in demo_documents(name):
        if doc['kind'] != 'ResourceClaim':
            continue
        for request in doc['spec']['devices']['requests']:
            for sub in [request.get('exactly')] + list(request.get('firstAvailable') or []):
                if sub:
                    assert sub['deviceClassName'] in known, (filename, sub)


def test_consumable_capacity_demo_makes_the_claims_the_table_says():
    claims = [doc for dummy, doc in demo_documents('consumable-capacity') if doc['kind'] == 'ResourceClaim']
    assert len(claims) == dra_features.BY_NAME['consumable_capacity'].seat_claims
    for claim in claims:
        [request] = claim['spec']['devices']['requests']
        assert request['exactly']['capacity']['requests'] == {'memory': '10Gi', 'compute': '10'}


def test_gpu_nic_numa_adds_the_net_release_the_nic_class_and_its_companion():
    assert dra_features.part(['gpu_nic_numa'], 'driver_releases', release_name='dra-example-driver') == [
        {'suffix': 'net', 'name': 'dra-example-driver-net', 'driver': dra_features.NIC_DRIVER,
         'values': {'deviceProfile': 'net'}}]
    assert dra_features.companion_classes(['gpu_nic_numa']) == [dra_features.NIC_CLASS['name']]
    assert [c['name'] for c in dra_features.device_classes(['gpu_nic_numa'])] == [dra_features.NIC_CLASS['name']]
    # The net profile publishes shareable NICs; without the gate the API server drops those fields (see the module).
    assert dra_features.feature_gates(['gpu_nic_numa']) == ['DRAConsumableCapacity']
    for other in ('consumable_capacity', 'device_taints'):
        assert dra_features.driver_releases([other]) == [] and dra_features.companion_classes([other]) == []


def test_the_nic_class_selects_only_the_nic_driver():
    assert dra_features.NIC_CLASS['selectors'] == ["device.driver == '%s'" % dra_features.NIC_DRIVER]
    assert dra_features.NIC_DRIVER != dra_features.DRIVER


def test_the_demo_claim_asks_for_a_gpu_and_a_nic_on_one_pcie_root():
    [claim] = [doc for dummy, doc in demo_documents('gpu-nic-numa') if doc['kind'] == 'ResourceClaim']
    classes = [r['exactly']['deviceClassName'] for r in claim['spec']['devices']['requests']]
    assert classes == [dra_features.DRIVER, dra_features.NIC_CLASS['name']]
    assert claim['spec']['devices']['constraints'] == [
        {'requests': ['gpu', 'nic'], 'matchAttribute': dra_features.PCIE_ROOT_ATTRIBUTE}]


def test_preflight_warns_when_gpu_nic_numa_would_pull_the_upstream_driver():
    errors, warnings = validate(dict(GOOD, dralab_dra_features=['gpu_nic_numa']))
    assert errors == []
    assert warnings == ["dralab_dra_features: gpu_nic_numa needs the lab's own build of dra-example-driver (the "
                        "offline mirror's image, dralab_build/mirror): with dralab_registry_mirror empty "
                        "the nodes pull the upstream image, whose drivers publish no resource.kubernetes.io/pcieRoot, "
                        "and its demo's claim stays pending"]
    assert validate(dict(GOOD, dralab_dra_features=['gpu_nic_numa'],
                         dralab_registry_mirror='10.89.0.1:5000')) == ([], [])


def test_preflight_refuses_a_menu_that_redefines_the_companion_class():
    mirror = {'dralab_registry_mirror': '10.89.0.1:5000'}
    menu = [{'name': 'gpu.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]},
            {'name': 'nic.example.com', 'selectors': ["device.driver == 'gpu.example.com'"]}]
    errors, dummy = validate(dict(GOOD, dralab_dra_features=['gpu_nic_numa'], dralab_device_classes=menu,
                                  **mirror))
    assert errors == ["dralab_device_classes[1]: nic.example.com is the companion class of dralab_dra_features (a "
                      "seat's claim may hold one of it beside its GPU), so its selectors must be "
                      "[\"device.driver == 'net.example.com'\"], or a seat could take a second GPU through it; "
                      "remove it from the menu or rename it"]
    menu[1] = dict(dra_features.NIC_CLASS)
    assert validate(dict(GOOD, dralab_dra_features=['gpu_nic_numa'], dralab_device_classes=menu,
                         **mirror)) == ([], [])
