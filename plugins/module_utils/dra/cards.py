# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real cards as data: what an emulated GPU of a node with `dralab_gpu_profile` is, in NVIDIA's figures.

Each profile is one card as nvidia-smi reports it: its names, versions, memory and multiprocessors, and its
MIG profiles (nvidia-smi mig -lgip) with their placements over the card's memory slices (mig -lgipp). The
figures of nvidia-h200 are a real H200's (../shared/hardware/nvidia-h200, kept as the unit tests' fixture
tests/unit/fixtures/hardware/nvidia-h200; tests/unit/plugins/module_utils/test_dra_cards.py reads them and
compares); those of the A100 and H100 come from NVIDIA's published MIG tables and real captures, the source
beside each. Published mock tables (go-nvml's) disagree with real cards on SM, decoder and placement figures:
none is used here.

This module imports only values.py (its layer, model: docs/architecture.md).
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import show

# Sources, named beside the figures they gave.
MIG_GUIDE = 'https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html'
MIG_GUIDE_GPUS = 'https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html'
H200_CAPTURE = 'tests/unit/fixtures/hardware/nvidia-h200 (a real H200, driver 580.159.04)'
H100_CAPTURE = ('github.com/stackhpc/ansible-slurm-appliance docs/mig.md @049b557d (nvidia-smi mig -lgip of a real '
                'H100 SXM5 80GB)')
H100_SMI = ('github.com/NVIDIA/k8s-test-infra tests/e2e/go/assertions/nvidiasmi/testdata/hardware/qx-h100.xml '
            '@5f8956ad (nvidia-smi -q -x of a real H100 80GB HBM3, driver 580.105.08)')
A100_SMI = 'github.com/NVIDIA/mig-parted/issues/31 (nvidia-smi of a real A100-SXM4-80GB, driver 545.23.08)'


def mig(name, profile_id, memory_gib, multiprocessors, copy_engines, decoders, encoders, jpeg_engines, ofa_engines,
        starts, size, instances=None):
    """One MIG profile as nvidia-smi mig -lgip prints it (memory in GiB, at most `instances` at a time: default one
    per placement), and its placements (mig -lgipp): the first memory slice of each, how many slices it takes."""
    return {'name': name, 'id': profile_id, 'memory_mib': int(round(memory_gib * 1024)),
            'instances': len(tuple(starts)) if instances is None else instances,
            'multiprocessors': multiprocessors, 'copy_engines': copy_engines, 'decoders': decoders,
            'encoders': encoders, 'jpeg_engines': jpeg_engines, 'ofa_engines': ofa_engines,
            'placements': tuple(starts), 'size': size}


ALL_1G = range(7)

PROFILES = {
    'nvidia-h200': {
        'product_name': 'NVIDIA H200',  # H200_CAPTURE: nvidia-smi -q Product Name, query-gpu.csv name
        'brand': 'NVIDIA',  # H200_CAPTURE: Product Brand
        'architecture': 'Hopper',  # H200_CAPTURE: Product Architecture
        'cuda_compute_capability': '9.0',  # H200_CAPTURE: query-gpu.csv compute_cap
        'driver_version': '580.159.04',  # H200_CAPTURE: Driver Version
        'cuda_driver_version': '13.0',  # H200_CAPTURE: CUDA Version
        'memory_mib': 143771,  # H200_CAPTURE: FB Memory Usage Total, memory.total [MiB]
        'multiprocessors': 132,  # H200_CAPTURE: the 7g.141gb instance's SMs (MIG off has no SM line)
        'memory_slices': 8,  # H200_CAPTURE: the placements of 7g.141gb, {0}:8
        'source': H200_CAPTURE,
        'mig': (  # H200_CAPTURE: mig-gpu-instance-profiles.txt and mig-placements.txt
            mig('1g.18gb', 19, 16.00, 16, 1, 1, 0, 1, 0, ALL_1G, 1),
            mig('1g.18gb+me', 20, 16.00, 16, 1, 1, 0, 1, 1, ALL_1G, 1, instances=1),
            mig('1g.35gb', 15, 32.50, 26, 1, 1, 0, 1, 0, (0, 2, 4, 6), 2),
            mig('2g.35gb', 14, 32.50, 32, 2, 2, 0, 2, 0, (0, 2, 4), 2),
            mig('3g.71gb', 9, 69.75, 60, 3, 3, 0, 3, 0, (0, 4), 4),
            mig('4g.71gb', 5, 69.75, 64, 4, 4, 0, 4, 0, (0,), 4),
            mig('7g.141gb', 0, 140.00, 132, 8, 7, 0, 7, 1, (0,), 8),
        ),
    },
    'nvidia-h100-80gb': {
        'product_name': 'NVIDIA H100 80GB HBM3',  # H100_SMI
        'brand': 'NVIDIA',  # H100_SMI
        'architecture': 'Hopper',  # H100_SMI; MIG_GUIDE_GPUS
        'cuda_compute_capability': '9.0',  # MIG_GUIDE_GPUS
        'driver_version': '580.105.08',  # H100_SMI
        'cuda_driver_version': '13.0',  # H100_SMI (the 580 drivers' CUDA)
        'memory_mib': 81559,  # H100_SMI (not 81920: HBM3 keeps some for itself)
        'multiprocessors': 132,  # H100_CAPTURE: the 7g.80gb instance's SMs
        'memory_slices': 8,  # MIG_GUIDE: each memory slice is 1/8 of the memory
        'source': H100_CAPTURE,
        'mig': (  # H100_CAPTURE for the figures; its placements as in MIG_GUIDE's mig -lgipp and the H200's
            mig('1g.10gb', 19, 9.75, 16, 1, 1, 0, 1, 0, ALL_1G, 1),
            mig('1g.10gb+me', 20, 9.75, 16, 1, 1, 0, 1, 1, ALL_1G, 1, instances=1),
            mig('1g.20gb', 15, 19.625, 26, 1, 1, 0, 1, 0, (0, 2, 4, 6), 2),
            mig('2g.20gb', 14, 19.625, 32, 2, 2, 0, 2, 0, (0, 2, 4), 2),
            mig('3g.40gb', 9, 39.50, 60, 3, 3, 0, 3, 0, (0, 4), 4),
            mig('4g.40gb', 5, 39.50, 64, 4, 4, 0, 4, 0, (0,), 4),
            mig('7g.80gb', 0, 79.25, 132, 8, 7, 0, 7, 1, (0,), 8),
        ),
    },
    'nvidia-a100-80gb': {
        'product_name': 'NVIDIA A100-SXM4-80GB',  # A100_SMI
        'brand': 'NVIDIA',  # A100_SMI
        'architecture': 'Ampere',  # MIG_GUIDE_GPUS
        'cuda_compute_capability': '8.0',  # MIG_GUIDE_GPUS
        'driver_version': '545.23.08',  # A100_SMI
        'cuda_driver_version': '12.3',  # A100_SMI (the 545 drivers' CUDA)
        'memory_mib': 81920,  # A100_SMI
        'multiprocessors': 108,  # CUDA deviceQuery of an A100-SXM4-80GB: 108 multiprocessors (98 of them in MIG)
        'memory_slices': 8,  # MIG_GUIDE
        'source': MIG_GUIDE,
        # MIG_GUIDE's A100 table (copy engine and media counts, placements; the 80GB names it gives); the SMs
        # and the memory in GiB as nvidia-smi mig -lgip prints them on a real A100 80GB (driver 515, published
        # in a tutorial), where MIG_GUIDE gives sevenths and eighths.
        'mig': (
            mig('1g.10gb', 19, 9.50, 14, 1, 0, 0, 0, 0, ALL_1G, 1),
            mig('1g.10gb+me', 20, 9.50, 14, 1, 1, 0, 1, 1, ALL_1G, 1, instances=1),
            mig('1g.20gb', 15, 19.50, 14, 1, 1, 0, 0, 0, (0, 2, 4, 6), 2),
            mig('2g.20gb', 14, 19.50, 28, 2, 1, 0, 0, 0, (0, 2, 4), 2),
            mig('3g.40gb', 9, 39.25, 42, 3, 2, 0, 0, 0, (0, 4), 4),
            mig('4g.40gb', 5, 39.25, 56, 4, 2, 0, 0, 0, (0,), 4),
            mig('7g.80gb', 0, 79.00, 98, 7, 5, 0, 1, 1, (0,), 8),
        ),
    },
}

NAMES = tuple(sorted(PROFILES))


def profile(name):
    """The card profile called name; KeyError (with the known names) for another."""
    if name not in PROFILES:
        raise KeyError('%s is no card profile; known: %s' % (show(name), ', '.join(NAMES)))
    return PROFILES[name]


def mig_profile(card, name):
    """The MIG profile called name of a card profile, or None."""
    return next((m for m in card['mig'] if m['name'] == name), None)


def profile_problems(name, card):
    """What is wrong with a card profile, one sentence each: a placement beyond the card's memory slices, two
    placements of one MIG profile that overlap, a MIG profile with more memory or multiprocessors than the card."""
    problems = []
    slices = card['memory_slices']
    for item in card['mig']:
        label = '%s MIG profile %s' % (name, item['name'])
        for start in item['placements']:
            if start < 0 or start + item['size'] > slices:
                problems.append('%s: placement at slice %d of size %d overruns the card\'s %d memory slices'
                                % (label, start, item['size'], slices))
        ordered = sorted(item['placements'])
        for first, second in zip(ordered, ordered[1:]):
            if first + item['size'] > second:
                problems.append('%s: placements at slices %d and %d overlap' % (label, first, second))
        if item['memory_mib'] > card['memory_mib']:
            problems.append('%s: %d MiB is more than the card\'s %d MiB' % (label, item['memory_mib'], card['memory_mib']))
        if item['multiprocessors'] > card['multiprocessors']:
            problems.append('%s: %d multiprocessors is more than the card\'s %d'
                            % (label, item['multiprocessors'], card['multiprocessors']))
    return problems


# The real driver's names (kubernetes-sigs/dra-driver-nvidia-gpu @95932046, cmd/gpu-kubelet-plugin: deviceinfo.go
# GpuInfo.Attributes and CanonicalName, mig.go CommonAttributesMig, CommonCapacitiesMig and ToCanonicalName,
# partitions.go counter sets; its chart's deviceclass-gpu.yaml and deviceclass-mig.yaml).
NVIDIA_DRIVER = 'gpu.nvidia.com'
GPU_CLASS = {'name': 'gpu.nvidia.com',
             'selectors': ["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"]}
MIG_CLASS = {'name': 'mig.nvidia.com',
             'selectors': ["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"]}
PCI_BUS_ID = 'resource.kubernetes.io/pciBusID'
PCIE_ROOT = 'resource.kubernetes.io/pcieRoot'
# A MIG profile's capacities, by the driver's name (memory in bytes); as counters they are written with hyphens.
MIG_CAPACITIES = (('multiprocessors', 'multiprocessors'), ('copyEngines', 'copy_engines'), ('decoders', 'decoders'),
                  ('encoders', 'encoders'), ('jpegEngines', 'jpeg_engines'), ('ofaEngines', 'ofa_engines'))
COUNTER_NAMES = {'multiprocessors': 'multiprocessors', 'copyEngines': 'copy-engines', 'decoders': 'decoders',
                 'encoders': 'encoders', 'jpegEngines': 'jpeg-engines', 'ofaEngines': 'ofa-engines',
                 'memory': 'memory'}


def mig_capacities(item):
    """A MIG profile's capacities as the driver publishes them: counts, and memory in bytes."""
    found = dict((name, item[key]) for name, key in MIG_CAPACITIES)
    found['memory'] = item['memory_mib'] * 1024 * 1024
    return found


def card_capacities(card, partitionable):
    """The whole card's capacities: its memory in bytes; with MIG as partitionable devices, the largest figure of
    each capacity over its MIG profiles (what the driver's full GPU device then announces and consumes)."""
    if not partitionable:
        return {'memory': card['memory_mib'] * 1024 * 1024}
    found = {}
    for item in card['mig']:
        for name, value in mig_capacities(item).items():
            found[name] = max(found.get(name, 0), value)
    return found


def mig_device_name(minor, item, start):
    """gpu-0-mig-1g18gb-19-0: the parent's minor, the profile without dots ('+' becomes '-'), its ID, its start."""
    profile_name = item['name'].lower().replace('.', '').replace('+', '-')
    return 'gpu-%d-mig-%s-%d-%d' % (minor, profile_name, item['id'], start)


def counter_set_name(minor):
    return 'gpu-%d-counter-set' % minor


def counters(capacities, start, size):
    """The counters a device consumes: its capacities under their counter names, and one per memory slice."""
    found = dict((COUNTER_NAMES[name], value) for name, value in capacities.items())
    for index in range(start, start + size):
        found['memory-slice-%d' % index] = 1
    return found


def card_attributes(card, pci_bus_id, pcie_root):
    """The attributes a full GPU and its MIG devices share, by the driver's names (versions as semver)."""
    return {'productName': card['product_name'], 'brand': card['brand'], 'architecture': card['architecture'],
            'cudaComputeCapability': semver(card['cuda_compute_capability']),
            'driverVersion': semver(card['driver_version']), 'cudaDriverVersion': semver(card['cuda_driver_version']),
            PCI_BUS_ID: pci_bus_id, PCIE_ROOT: pcie_root}


def semver(version):
    """'9.0' -> '9.0.0', '580.159.04' -> '580.159.4': the driver's semver.MustParse(...).String()."""
    parts = [str(int(part)) for part in version.split('.')] + ['0', '0']
    return '.'.join(parts[:3])


def card_devices(card, minor, uuid, pci_bus_id, pcie_root, partitionable=False):
    """What a node publishes for one card, as plain data: {'devices': [...], 'counter_sets': [...]}.

    Each device: name, attributes ({name: value}; the versions written as semver strings), capacities ({name:
    int}) and, with partitionable MIG, consumes ({counter: int} from counter_set_name(minor)). The full GPU is type
    'gpu' with its uuid; with partitionable, every MIG placement is a device too, of type 'mig' with parentUUID and
    profile, and the card has its counter set. Without it, the full GPU is the card's only device."""
    shared = card_attributes(card, pci_bus_id, pcie_root)
    full = {'name': 'gpu-%d' % minor, 'attributes': dict(shared, type='gpu', uuid=uuid),
            'capacities': card_capacities(card, partitionable)}
    if not partitionable:
        return {'devices': [full], 'counter_sets': []}
    total = counters(full['capacities'], 0, card['memory_slices'])
    full['consumes'] = dict(total)
    devices = [full]
    for item in card['mig']:
        capacities = mig_capacities(item)
        for start in item['placements']:
            devices.append({'name': mig_device_name(minor, item, start),
                            'attributes': dict(shared, type='mig', parentUUID=uuid, profile=item['name']),
                            'capacities': capacities, 'consumes': counters(capacities, start, item['size'])})
    return {'devices': devices, 'counter_sets': [{'name': counter_set_name(minor), 'counters': total}]}


def fits(counter_set, devices):
    """Whether devices can be allocated together from one card's counter set (the scheduler's rule: what they
    consume, summed per counter, is at most the counter's value)."""
    used = {}
    for device in devices:
        for name, value in device['consumes'].items():
            used[name] = used.get(name, 0) + value
    return all(value <= counter_set['counters'].get(name, 0) for name, value in used.items())
