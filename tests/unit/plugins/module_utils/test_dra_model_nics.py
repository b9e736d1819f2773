# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health analysis (dra/health.py), the explainer and the board on gpu_nic_numa: GPUs of gpu.example.com and NICs of net.example.com
side by side, a claim holding one of each, and a NIC shared by two claims.

tests/unit/fixtures/dra/gpu_nic.json was recorded by tests/harness/record_gpu_nic.py from a 1.35.4 cluster with
the lab's build of the driver (both profiles publish resource.kubernetes.io/pcieRoot) and DRAConsumableCapacity:
seat user01 runs the demo of docs/demos/gpu-nic-numa (claim gpu-and-nic: gpu-0 and nic-0 of node2) and pod
two-shares with claims share-a and share-b, both on nic-3 of node1."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.board import build as board_build
from ansible_collections.dralab.workshop.plugins.module_utils.dra import collect as dra_collect
from ansible_collections.dralab.workshop.plugins.module_utils.dra import explain as dra_explain
from ansible_collections.dralab.workshop.plugins.module_utils.dra import health as dra_health
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra.features import NIC_DRIVER, PCIE_ROOT_ATTRIBUTE

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'dra'
GPU_DRIVER = dra_objects.DEFAULT_DRIVER
NODES = ['node1', 'node2', 'node3']
NOW = '2026-12-02T03:00:00Z'


@pytest.fixture(name='lab')
def lab_fixture():
    raw = json.loads((FIXTURES / 'gpu_nic.json').read_text())
    return dict((key, copy.deepcopy(raw[path]['items'])) for key, path in dra_collect.LIST_PATHS)


def analyze(lab, driver=GPU_DRIVER, **options):
    return dra_health.analyze(driver=driver, expected_nodes=NODES, stale_claim_age='100d', now=NOW,
                              **dict(lab, **options))


def row(report, name):
    return next(c for c in report['claims'] if (c['namespace'], c['name']) == ('user01', name))


def types(report):
    return sorted(set(p['type'] for p in report['problems']))


def test_the_recorded_gpu_and_nic_share_a_pcie_root(lab):
    devices = dict(((s['spec']['driver'], s['spec']['pool']['name'], d['name']), d)
                   for s in lab['slices'] for d in s['spec']['devices'])
    results = next(c for c in lab['claims'] if c['metadata']['name'] == 'gpu-and-nic')[
        'status']['allocation']['devices']['results']
    roots = [devices[(r['driver'], r['pool'], r['device'])]['attributes'][PCIE_ROOT_ATTRIBUTE] for r in results]
    assert len(results) == 2 and roots[0] == roots[1]


@pytest.mark.parametrize('driver', [GPU_DRIVER, NIC_DRIVER])
def test_each_driver_counts_its_own_devices_and_the_lab_is_healthy(lab, driver):
    report = analyze(lab, driver)
    assert report['healthy'], report['problems']
    assert types(report) == []
    assert [(n['name'], n['published'], n['devices'], n['slices']) for n in report['nodes']] == [
        (name, 8, 8, 1) for name in NODES]
    summary = report['summary']
    assert (summary['nodes_complete'], summary['devices_published']) == (3, 24)
    # The GPU driver holds gpu-0 of node2; the NIC driver nic-0 of node2 and the shared nic-3 of node1.
    assert summary['devices_allocated'] == (1 if driver == GPU_DRIVER else 2)
    assert summary['devices_free'] == 24 - summary['devices_allocated']


def test_a_claim_holding_a_gpu_and_a_nic_has_both_devices(lab):
    claim = row(analyze(lab), 'gpu-and-nic')
    assert claim['state'] == 'reserved' and claim['holder_pods_alive'] == ['gpu-and-nic']
    assert [(d['driver'], d['device'], d['node'], d['request']) for d in claim['devices']] == [
        (GPU_DRIVER, 'gpu-0', 'node2', 'gpu'), (NIC_DRIVER, 'nic-0', 'node2', 'nic')]


def test_a_shared_nic_with_two_claims_is_a_shared_device_not_a_double_allocation(lab):
    report = analyze(lab, NIC_DRIVER)
    shared = dict(((r['pool'], r['device']), r) for r in report['shared_devices'])
    assert shared[('node1', 'nic-3')]['claims'] == ['user01/share-a', 'user01/share-b']
    assert shared[('node1', 'nic-3')]['capacity'] == {
        'egressBandwidth': {'total': '100G', 'used': '2G', 'free': '98G'},
        'ingressBandwidth': {'total': '100G', 'used': '2G', 'free': '98G'},
        'vfs': {'total': '100', 'used': '2', 'free': '98'}}
    assert shared[('node2', 'nic-0')]['claims'] == ['user01/gpu-and-nic']


def test_an_exclusive_nic_in_two_claims_is_still_a_double_allocation(lab):
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device.pop('allowMultipleAllocations', None)  # as the API stores it without DRAConsumableCapacity
    report = analyze(lab, NIC_DRIVER)
    [problem] = [p for p in report['problems'] if p['type'] == 'device_double_allocated']
    assert (problem['device'], problem['claims']) == ('nic-3', ['user01/share-a', 'user01/share-b'])


def test_a_nic_no_slice_publishes_any_more_is_unknown_whatever_driver_is_checked(lab):
    lab['slices'] = [s for s in lab['slices'] if (s['spec']['driver'], s['spec']['nodeName']) != (NIC_DRIVER, 'node2')]
    for driver in (GPU_DRIVER, NIC_DRIVER):
        [problem] = [p for p in analyze(lab, driver)['problems'] if p['type'] == 'claim_device_unknown']
        assert (problem['name'], problem['driver'], problem['device']) == ('gpu-and-nic', NIC_DRIVER, 'nic-0')


def plugin_pod(driver, node, created, ready):
    """A kubelet plugin pod as the example chart's DaemonSet makes it (labels, DRIVER_NAME), one per release."""
    release = 'dra-example-driver' if driver == GPU_DRIVER else 'dra-example-driver-net'
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {
        'name': '%s-kubeletplugin-%s' % (release, node), 'namespace': 'dra-example-driver',
        'uid': 'uid-%s-%s' % (release, node), 'creationTimestamp': created,
        'labels': dict(dra_objects.EXAMPLE_DRIVER_PLUGIN_LABELS, **{'app.kubernetes.io/instance': release})},
        'spec': {'nodeName': node, 'containers': [{'name': 'plugin', 'env': [
            {'name': 'DRIVER_NAME', 'value': driver}, {'name': 'DEVICE_PROFILE', 'value': driver.split('.')[0]}]}]},
        'status': {'phase': 'Running', 'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}],
                   'containerStatuses': [{'name': 'plugin', 'restartCount': 0, 'ready': ready, 'state': {}}]}}


def test_each_driver_judges_its_own_plugin_pod_not_the_other_release(lab):
    # node1's GPU plugin is not ready; its NIC plugin, created later, is.
    for node in NODES:
        lab['pods'].append(plugin_pod(GPU_DRIVER, node, '2026-12-02T02:00:00Z', ready=node != 'node1'))
        lab['pods'].append(plugin_pod(NIC_DRIVER, node, '2026-12-02T02:10:00Z', ready=True))
    labels = dra_objects.EXAMPLE_DRIVER_PLUGIN_LABELS
    [problem] = analyze(lab, GPU_DRIVER, plugin_labels=labels)['problems']
    assert (problem['type'], problem['node'], problem['pod']) == (
        'driver_plugin_not_ready', 'node1', 'dra-example-driver/dra-example-driver-kubeletplugin-node1')
    assert analyze(lab, NIC_DRIVER, plugin_labels=labels)['problems'] == []


def test_the_explainer_places_a_pending_gpu_and_nic_claim_on_one_root(lab):
    demo = next(c for c in lab['claims'] if c['metadata']['name'] == 'gpu-and-nic')
    pending = copy.deepcopy(demo)
    pending['metadata'].update(name='second-pair', uid='uid-second-pair')
    pending.pop('status')

    def explain():
        return dra_explain.explain_claim(pending, device_classes=lab['device_classes'], slices=lab['slices'],
                                         claims=lab['claims'] + [pending], pods=lab['pods'], nodes=lab['nodes'],
                                         namespaces=lab['namespaces'], now=NOW)
    result = explain()
    assert result['allocatable'], result
    # Without the common attribute (the stock driver) the constraint cannot be met.
    for rslice in lab['slices']:
        for device in rslice['spec']['devices']:
            device['attributes'].pop(PCIE_ROOT_ATTRIBUTE)
    result = explain()
    assert (result['allocatable'], result['reason']) == (False, 'constraint_unsatisfiable'), result


def test_the_board_shows_gpus_as_tiles_and_the_nic_beside_the_seats_gpu(lab):
    board = board_build.build(lab, now=NOW, board={})['board']
    assert board['summary']['devices'] == 24
    assert board['summary']['devices_in_use'] == 1
    [seat] = [s for s in board['seats'] if s['seat'] == 'user01']
    assert seat['holds'] == 1
    assert seat['devices'] == ['gpu-0 on node2', 'nic-0 on node2 (%s)' % NIC_DRIVER,
                               'nic-3 on node1 (%s)' % NIC_DRIVER, 'nic-3 on node1 (%s)' % NIC_DRIVER]
