# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA features of Kubernetes 1.35 an instructor switches on with dralab_dra_features.

One entry per feature says everything the feature needs, so that one list
item turns it all on at once:

- gates: feature gates, set on kube-apiserver, kube-controller-manager,
  kube-scheduler and every kubelet (control_plane's kubeadm configuration;
  kubeadm hands the KubeletConfiguration to the workers);
- api_versions: API group versions for kube-apiserver's --runtime-config;
- helm_values: values of the dra-example-driver v0.4.0 chart (read from its
  values.yaml and templates/kubeletplugin.yaml);
- device_classes: DeviceClasses added to the menu (device_classes role);
- demo: the folder under docs/demos that workshop_users copies to each seat's
  home;
- seat_claims: how many claims at once the demo makes in a seat's namespace
  (the preflight warns when dralab_gpus_per_seat is lower);
- seat_pods: how many pods at once the demo makes there (the preflight refuses
  a seat's object counts below it, seat/bounds.py);
- driver_releases: more Helm releases of the same chart (dra_driver installs
  them beside its own and waits for their devices), each with its release
  name, the driver name its devices are published under and its chart values;
- companion_classes: DeviceClasses of which a seat's claim may hold one
  device beside its GPU (seat_policies: the claim-size policies).
- device_tolerations: device taints a seat's claim may tolerate (the demo's
  own claim tolerates them; seat/placement.py refuses every other).
- lab_build: the feature needs the lab's own build of the driver (the offline
  mirror's image); the preflight warns when the lab pulls from upstream.

Notes kept here because they decide the table:
- DeviceTaintRule is served as resource.k8s.io/v1alpha3 only in 1.35.
- DRAPrioritizedList, DRAAdminAccess and DRAResourceClaimDeviceStatus are beta
  and on by default; they are still listed, so that the feature table says
  which gate each feature needs and a dralab_feature_gates entry that turns
  one off is refused by the preflight.
- extended_resource uses the implicit resource name
  deviceclass.resource.kubernetes.io/<class>, which needs no chart value;
  the chart's deviceClass.extendedResourceName would name the driver's own
  DeviceClass, which the menu may take over (device_classes_adopt).
- The driver publishes device status (gpuDeviceStatus) when it prepares a
  claim for a pod, that is when a kubelet calls NodePrepareResources.
- gpu_nic_numa needs the lab's own build of the driver (dralab_build/binaries/
  source_edits.py, SOURCE_EDITS; the offline mirror's image): both profiles then publish
  resource.kubernetes.io/pcieRoot, which the stock v0.4.0 does not. The net
  release turns on DRAConsumableCapacity: the net profile publishes every NIC
  with allowMultipleAllocations and capacity request policies (bandwidth,
  vfs). Seen on 1.35.4 with the gate off (verified with the harness): the API
  server drops those fields, the plugin keeps running (the kubelet plugin
  helper hands slice errors to the driver as recoverable) but logs a
  DroppedFieldsError on every publish, and the stored NICs are exclusive, not
  the shared NICs the profile describes. With the gate, what is stored is what
  the driver publishes, and dra_health judges NICs as shared devices.

This module imports only dra/gates.py (a values module); the preflight
validates dralab_dra_features with it and the dra_features filter hands its
parts to the roles (docs/architecture.md).
"""

from __future__ import annotations

import difflib

from ansible_collections.dralab.workshop.plugins.module_utils.dra.gates import FEATURE_GATES

DRIVER = 'gpu.example.com'
SETTING = 'dralab_dra_features'
DEMOS_DIR = 'docs/demos'

SHARED_CLASS = {
    'name': 'gpu-shared.example.com',
    'description': 'A share of an emulated GPU: the claim asks for memory (capacity.requests) and other claims '
                   'use the rest of the card.',
    'selectors': ["device.driver == '%s' && device.allowMultipleAllocations == true" % DRIVER],
}
PARTITION_CLASS = {
    'name': 'gpu-partition.example.com',
    'description': 'One partition of an emulated GPU (the partitions of a card share its uuid).',
    'selectors': ["device.driver == '%s' && has(device.attributes['%s'].partition)" % (DRIVER, DRIVER)],
}

# Partitions per card of partitionable_devices (kubeletPlugin.gpuPartitions): 80Gi cards, 20Gi partitions.
GPU_PARTITIONS = 4

# gpu_nic_numa: the NICs of a second release of the chart (deviceProfile net), and the attribute both drivers share.
NIC_DRIVER = 'net.example.com'
PCIE_ROOT_ATTRIBUTE = 'resource.kubernetes.io/pcieRoot'
NIC_CLASS = {
    'name': 'nic.example.com',
    'description': 'An emulated NIC (driver %s), shared by bandwidth; a claim may hold one beside its GPU, on '
                   'the same PCIe root (matchAttribute %s).' % (NIC_DRIVER, PCIE_ROOT_ATTRIBUTE),
    'selectors': ["device.driver == '%s'" % NIC_DRIVER],
}
NIC_RELEASE = {'suffix': 'net', 'driver': NIC_DRIVER, 'values': {'deviceProfile': 'net'}}


class Feature:
    def __init__(self, name, title, gates, demo=None, api_versions=(), helm_values=None, device_classes=(),
                 seat_claims=1, driver_releases=(), companion_classes=(), lab_build=False, seat_pods=1,
                 device_tolerations=()):
        self.name = name
        self.title = title
        self.gates = tuple(gates)
        self.demo = demo
        self.api_versions = tuple(api_versions)
        self.helm_values = helm_values or {}
        self.device_classes = list(device_classes)
        self.seat_claims = seat_claims
        self.seat_pods = seat_pods
        self.driver_releases = list(driver_releases)
        self.companion_classes = tuple(companion_classes)
        self.lab_build = lab_build
        self.device_tolerations = tuple(dict(entry) for entry in device_tolerations)

    def __repr__(self):
        return 'Feature(%s)' % self.name


FEATURES = (
    Feature('consumable_capacity', 'several claims share one GPU by memory (consumable capacity)',
            ['DRAConsumableCapacity'], demo='consumable-capacity',
            helm_values={'gpuAllowMultipleAllocations': True}, device_classes=[SHARED_CLASS], seat_claims=3),
    Feature('partitionable_devices', 'a GPU split into partitions that share its counters',
            ['DRAPartitionableDevices'], demo='partitionable-devices',
            helm_values={'kubeletPlugin': {'gpuPartitions': GPU_PARTITIONS}}, device_classes=[PARTITION_CLASS]),
    Feature('prioritized_list', 'a request lists alternatives in order (firstAvailable)',
            ['DRAPrioritizedList'], demo='prioritized-list'),
    Feature('device_status', 'the driver writes device data into the claim status',
            ['DRAResourceClaimDeviceStatus'], demo='device-status', helm_values={'gpuDeviceStatus': True}),
    Feature('extended_resource', 'a pod asks for a GPU in resources.limits, without a claim',
            ['DRAExtendedResource'], demo='extended-resource'),
    Feature('device_taints', 'the instructor takes a GPU out of service with a DeviceTaintRule',
            ['DRADeviceTaints', 'DRADeviceTaintRules'], demo='device-taints',
            api_versions=['resource.k8s.io/v1alpha3=true'], seat_pods=2,
            device_tolerations=[{'key': 'dralab.workshop/maintenance', 'effect': 'NoSchedule'}]),
    Feature('admin_access', 'the instructor monitors GPUs in use (admin access; seats are refused)',
            ['DRAAdminAccess'], demo='admin-access'),
    Feature('gpu_nic_numa', 'one claim gets a GPU and a NIC on the same PCIe root (matchAttribute)',
            ['DRAConsumableCapacity'], demo='gpu-nic-numa', driver_releases=[NIC_RELEASE], device_classes=[NIC_CLASS],
            companion_classes=[NIC_CLASS['name']], lab_build=True),
    Feature('binding_conditions', 'the driver\'s controller confirms a device before the pod is bound',
            ['DRADeviceBindingConditions'],
            helm_values={'kubeletPlugin': {'bindingConditions': True}, 'controller': {'plugins': ['BindingConditions']}}),
)

BY_NAME = dict((feature.name, feature) for feature in FEATURES)
NAMES = tuple(feature.name for feature in FEATURES)


def _show(value):
    return repr(value) if isinstance(value, str) else str(value)


def feature_problems(features, variable=SETTING):
    """Why a dralab_dra_features value is wrong: a list of messages naming the variable and the item."""
    if features is None:
        return []
    if not isinstance(features, (list, tuple)):
        return ['%s: %s is not a list of feature names (known: %s)' % (variable, _show(features), ', '.join(NAMES))]
    problems = []
    seen = set()
    for index, name in enumerate(features):
        where = '%s[%d]' % (variable, index)
        if not isinstance(name, str):
            problems.append('%s: %s is not a feature name (known: %s)' % (where, _show(name), ', '.join(NAMES)))
            continue
        if name not in BY_NAME:
            close = difflib.get_close_matches(name, NAMES, n=1, cutoff=0.6)
            hint = 'did you mean %s?' % close[0] if close else 'known: %s' % ', '.join(NAMES)
            problems.append('%s: %s is not a DRA feature of Kubernetes 1.35 (%s)' % (where, _show(name), hint))
        elif name in seen:
            problems.append('%s: %s is listed twice' % (where, _show(name)))
        seen.add(name)
    return problems


def selected(features):
    """The Feature entries of a valid dralab_dra_features value, in table order; ValueError when invalid."""
    problems = feature_problems(features)
    if problems:
        raise ValueError('; '.join(problems))
    wanted = set(features or ())
    return [feature for feature in FEATURES if feature.name in wanted]


def feature_gates(features):
    """The gate names the features need, sorted, each once."""
    return sorted(set(gate for feature in selected(features) for gate in feature.gates))


def api_versions(features):
    """--runtime-config entries the features need."""
    return sorted(set(entry for feature in selected(features) for entry in feature.api_versions))


def _merge(into, values):
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, dict):
            into[key] = _merge({}, value)
        else:
            into[key] = list(value) if isinstance(value, list) else value
    return into


def helm_values(features):
    """The dra-example-driver chart values of the features, merged into one mapping."""
    merged = {}
    for feature in selected(features):
        _merge(merged, feature.helm_values)
    return merged


def device_classes(features, menu=None):
    """The DeviceClasses the features add, minus those the menu already names (the instructor's wins)."""
    taken = set(item.get('name') for item in menu or [] if isinstance(item, dict))
    classes = []
    for feature in selected(features):
        for item in feature.device_classes:
            if item['name'] not in taken:
                taken.add(item['name'])
                classes.append(dict(item, selectors=list(item['selectors'])))
    return classes


def demos(features):
    """The docs/demos folder names of the features."""
    return [feature.demo for feature in selected(features) if feature.demo]


def driver_releases(features, release_name=None):
    """The chart releases the features add: suffix, name (release_name-suffix), driver, chart values."""
    releases = []
    for feature in selected(features):
        for release in feature.driver_releases:
            if release['suffix'] not in [known['suffix'] for known in releases]:
                name = '%s-%s' % (release_name, release['suffix']) if release_name else release['suffix']
                releases.append({'suffix': release['suffix'], 'name': name, 'driver': release['driver'],
                                 'values': _merge({}, release['values'])})
    return releases


def companion_classes(features):
    """DeviceClasses of which a seat's claim may hold one device beside its GPU, sorted."""
    return sorted(set(name for feature in selected(features) for name in feature.companion_classes))


def gate_conflicts(features, gates):
    """Gates of {name: bool} that switch off a gate a feature needs: messages naming both."""
    problems = []
    for feature in selected(features):
        for gate in feature.gates:
            if gates.get(gate) is False:
                problems.append('%s=false switches off what %s of dralab_dra_features needs; remove it from '
                                'dralab_feature_gates or the feature from dralab_dra_features' % (gate, feature.name))
    return problems


def device_tolerations(features):
    """The device taints ({key, effect}) the features' demos tolerate in a seat's claim, sorted by key."""
    found = []
    for feature in selected(features):
        for entry in feature.device_tolerations:
            if entry not in found:
                found.append(dict(entry))
    return sorted(found, key=lambda entry: (entry['key'], entry.get('effect', '')))


PARTS = {
    'feature_gates': feature_gates,
    'api_versions': api_versions,
    'helm_values': helm_values,
    'demos': demos,
    'companion_classes': companion_classes,
    'device_tolerations': device_tolerations,
}


def part(features, what, menu=None, release_name=None):
    """One part of what the features turn on (the dra_features filter): see PARTS, device_classes (minus the
    menu's) or driver_releases (named after release_name)."""
    if what == 'device_classes':
        return device_classes(features, menu)
    if what == 'driver_releases':
        return driver_releases(features, release_name)
    if what not in PARTS:
        raise ValueError('%s is not a part of a DRA feature (known: %s)'
                         % (_show(what), ', '.join(sorted(list(PARTS) + ['device_classes', 'driver_releases']))))
    return PARTS[what](features)


def markdown_table():
    """The feature table of README.md (between the dralab-features markers)."""
    lines = ['| `dralab_dra_features` entry | what it shows | feature gates (1.35 stage) | also turns on | demo |',
             '|---|---|---|---|---|']
    for feature in FEATURES:
        gates = ', '.join('`%s` (%s%s)' % (gate, FEATURE_GATES[gate][0].lower(),
                                           ', on by default' if FEATURE_GATES[gate][1] else '')
                          for gate in feature.gates)
        extra = ['API `%s`' % entry.split('=', 1)[0] for entry in feature.api_versions]
        extra += ['chart `%s`' % text for text in _flat_values(feature.helm_values)]
        for release in feature.driver_releases:
            chart = ', '.join('`%s`' % text for text in _flat_values(release['values']))
            extra.append('release `%s` (chart %s)' % (release['suffix'], chart))
        extra += ['DeviceClass `%s`' % item['name'] for item in feature.device_classes]
        if feature.lab_build:
            extra.append('needs the lab\'s own driver build (offline mirror)')
        demo = '[%s](docs/demos/%s/)' % (feature.demo, feature.demo) if feature.demo else '-'
        row = (feature.name, feature.title, gates, ', '.join(extra) or '-', demo)
        lines.append('| `%s` | %s | %s | %s | %s |' % row)
    return '\n'.join(lines) + '\n'


def _flat_values(values, prefix=''):
    out = []
    for key in sorted(values):
        value = values[key]
        if isinstance(value, dict):
            out.extend(_flat_values(value, prefix + key + '.'))
        else:
            if isinstance(value, bool):
                value = 'true' if value else 'false'
            elif isinstance(value, list):
                value = '{%s}' % ','.join(str(item) for item in value)
            out.append('%s%s=%s' % (prefix, key, value))
    return out
