"""The card profiles (plugins/module_utils/dra/cards.py) against their sources: the H200's every figure against
the real card's nvidia-smi output (tests/unit/fixtures/hardware/nvidia-h200), read from those files here."""

from __future__ import annotations

import csv
import pathlib
import re

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cards

H200 = pathlib.Path(__file__).resolve().parents[2] / 'fixtures' / 'hardware' / 'nvidia-h200'


def smi_q():
    """nvidia-smi -q as {key: value} of its top-level lines (the first of each key)."""
    found = {}
    for line in (H200 / 'nvidia-smi-q.txt').read_text().splitlines():
        if ':' in line:
            key, value = line.split(':', 1)
            found.setdefault(key.strip(), value.strip())
    return found


def lgip():
    """nvidia-smi mig -lgip: {name: {id, instances, memory_gib, sm, dec, enc, ce, jpeg, ofa}}, each profile's two
    lines (GPU Name ID Instances Memory P2P SM DEC ENC, then CE JPEG OFA)."""
    rows, lines = {}, (H200 / 'mig-gpu-instance-profiles.txt').read_text().splitlines()
    first = re.compile(r'^\|\s+\d+\s+MIG (\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([\d.]+)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|$')
    second = re.compile(r'^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+\|$')
    for at, line in enumerate(lines):
        match = first.match(line)
        if match:
            name, pid, _free, total, memory, _p2p, sm, dec, enc = match.groups()
            ce, jpeg, ofa = second.match(lines[at + 1]).groups()
            rows[name] = {'id': int(pid), 'instances': int(total), 'memory_gib': float(memory), 'sm': int(sm),
                          'dec': int(dec), 'enc': int(enc), 'ce': int(ce), 'jpeg': int(jpeg), 'ofa': int(ofa)}
    return rows


def lgipp():
    """nvidia-smi mig -lgipp: {profile id: (starts, size)}."""
    found = {}
    for line in (H200 / 'mig-placements.txt').read_text().splitlines():
        match = re.match(r'^GPU\s+0 Profile ID\s+(\d+) Placements?\s*: \{([\d,]+)\}:(\d+)$', line.strip())
        assert match, line
        found[int(match.group(1))] = (tuple(int(s) for s in match.group(2).split(',')), int(match.group(3)))
    return found


def test_the_h200_is_the_captured_card():
    card = cards.profile('nvidia-h200')
    q = smi_q()
    with open(H200 / 'query-gpu.csv', encoding='utf-8') as handle:
        query = dict((k.strip(), v.strip()) for k, v in next(csv.DictReader(handle, skipinitialspace=True)).items())
    assert card['product_name'] == q['Product Name'] == query['name']
    assert card['brand'] == q['Product Brand'] and card['architecture'] == q['Product Architecture']
    assert card['driver_version'] == q['Driver Version'] == query['driver_version']
    assert card['cuda_driver_version'] == q['CUDA Version']
    assert card['cuda_compute_capability'] == query['compute_cap']
    assert '%d MiB' % card['memory_mib'] == query['memory.total [MiB]'] == q['Total']


def test_every_h200_mig_profile_is_the_captured_one():
    card, table, placements = cards.profile('nvidia-h200'), lgip(), lgipp()
    assert [m['name'] for m in card['mig']] == list(table)  # every profile, in nvidia-smi's order
    for item in card['mig']:
        row = table[item['name']]
        assert (item['id'], item['memory_mib'], item['multiprocessors'], item['decoders'], item['encoders'],
                item['copy_engines'], item['jpeg_engines'], item['ofa_engines']) == (
            row['id'], int(row['memory_gib'] * 1024), row['sm'], row['dec'], row['enc'], row['ce'], row['jpeg'],
            row['ofa']), item['name']
        assert (item['placements'], item['size']) == placements[item['id']], item['name']
        assert item['instances'] == row['instances'], item['name']
    # The whole card's instance has every slice and every multiprocessor the card gives MIG.
    assert cards.mig_profile(card, '7g.141gb')['size'] == card['memory_slices'] == 8
    assert cards.mig_profile(card, '7g.141gb')['multiprocessors'] == card['multiprocessors']


@pytest.mark.parametrize('name', cards.NAMES)
def test_every_profile_is_sound(name):
    card = cards.profile(name)
    assert cards.profile_problems(name, card) == []
    largest = max(card['mig'], key=lambda m: m['size'])
    assert largest['size'] == card['memory_slices'] and largest['placements'] == (0,)
    # Seven of the smallest slices fit a card, as its seven 1g instances do.
    smallest = card['mig'][0]
    assert smallest['size'] == 1 and len(smallest['placements']) == 7


def test_a_profile_that_overruns_its_slices_or_overlaps_is_refused():
    card = dict(cards.profile('nvidia-h200'))
    card['mig'] = (cards.mig('3g.bad', 9, 69.75, 60, 3, 3, 0, 3, 0, (0, 3, 6), 4),)
    assert cards.profile_problems('custom', card) == [
        "custom MIG profile 3g.bad: placement at slice 6 of size 4 overruns the card's 8 memory slices",
        'custom MIG profile 3g.bad: placements at slices 0 and 3 overlap',
        'custom MIG profile 3g.bad: placements at slices 3 and 6 overlap']


def test_an_unknown_profile_names_the_known_ones():
    with pytest.raises(KeyError, match="'nvidia-b200' is no card profile; known: nvidia-a100-80gb, nvidia-h100-80gb, nvidia-h200"):
        cards.profile('nvidia-b200')


def h200_card(partitionable=True):
    return cards.card_devices(cards.profile('nvidia-h200'), 0, 'GPU-00000000-0000-4000-8000-000000000000',
                              '0000:00:06.0', 'pci0000:00', partitionable=partitionable)


def named(published, *names):
    by_name = dict((d['name'], d) for d in published['devices'])
    return [by_name[name] for name in names]


def test_a_full_h200_speaks_the_real_drivers_names():
    published = h200_card(partitionable=False)
    assert published['counter_sets'] == [] and len(published['devices']) == 1
    gpu = published['devices'][0]
    assert gpu['name'] == 'gpu-0'
    assert gpu['attributes'] == {
        'type': 'gpu', 'uuid': 'GPU-00000000-0000-4000-8000-000000000000', 'productName': 'NVIDIA H200',
        'brand': 'NVIDIA', 'architecture': 'Hopper', 'cudaComputeCapability': '9.0.0',
        'driverVersion': '580.159.4', 'cudaDriverVersion': '13.0.0',
        'resource.kubernetes.io/pciBusID': '0000:00:06.0', 'resource.kubernetes.io/pcieRoot': 'pci0000:00'}
    assert gpu['capacities'] == {'memory': 143771 * 1024 * 1024}  # bytes, as the driver writes them


def test_every_h200_placement_is_a_mig_device_of_the_real_drivers_form():
    published = h200_card()
    migs = [d for d in published['devices'] if d['attributes']['type'] == 'mig']
    assert len(migs) == 7 + 7 + 4 + 3 + 2 + 1 + 1  # the placements of mig-placements.txt
    small, = named(published, 'gpu-0-mig-1g18gb-19-0')
    assert small['attributes']['parentUUID'] == 'GPU-00000000-0000-4000-8000-000000000000'
    assert small['attributes']['profile'] == '1g.18gb' and 'uuid' not in small['attributes']
    assert small['capacities'] == {'multiprocessors': 16, 'copyEngines': 1, 'decoders': 1, 'encoders': 0,
                                   'jpegEngines': 1, 'ofaEngines': 0, 'memory': 16 * 1024 ** 3}
    assert small['consumes'] == {'multiprocessors': 16, 'copy-engines': 1, 'decoders': 1, 'encoders': 0,
                                 'jpeg-engines': 1, 'ofa-engines': 0, 'memory': 16 * 1024 ** 3, 'memory-slice-0': 1}
    assert named(published, 'gpu-0-mig-1g18gb-me-20-6')[0]['attributes']['profile'] == '1g.18gb+me'
    counter_set, = published['counter_sets']
    assert counter_set['name'] == 'gpu-0-counter-set'
    assert counter_set['counters'] == dict({'multiprocessors': 132, 'copy-engines': 8, 'decoders': 7, 'encoders': 0,
                                            'jpeg-engines': 7, 'ofa-engines': 1, 'memory': 140 * 1024 ** 3},
                                           **dict(('memory-slice-%d' % i, 1) for i in range(8)))


def test_the_counters_pack_slices_as_the_card_does():
    published = h200_card()
    counter_set = published['counter_sets'][0]
    devices = dict((d['name'], d) for d in published['devices'])
    ones = [devices['gpu-0-mig-1g18gb-19-%d' % start] for start in range(7)]
    assert cards.fits(counter_set, ones)  # 7 x 1g.18gb fill an H200
    assert not cards.fits(counter_set, ones + [devices['gpu-0-mig-1g18gb-me-20-0']])  # an eighth does not
    four = devices['gpu-0-mig-4g71gb-5-0']
    assert cards.fits(counter_set, [four, devices['gpu-0-mig-3g71gb-9-4']])  # after a 4g.71gb, a 3g.71gb
    assert not cards.fits(counter_set, [four, devices['gpu-0-mig-3g71gb-9-0']])
    assert cards.fits(counter_set, [four, devices['gpu-0-mig-2g35gb-14-4'], devices['gpu-0-mig-1g18gb-19-6']])
    for name, device in devices.items():
        if name != 'gpu-0':
            assert not cards.fits(counter_set, [devices['gpu-0'], device]), name  # a card and a slice: never both
    # Only one media-extended slice at a time: the card has one OFA engine.
    assert not cards.fits(counter_set, [devices['gpu-0-mig-1g18gb-me-20-0'], devices['gpu-0-mig-1g18gb-me-20-2']])


@pytest.mark.parametrize('name', cards.NAMES)
def test_every_placement_consumes_within_the_card(name):
    card = cards.profile(name)
    published = cards.card_devices(card, 3, 'GPU-x', '0000:00:06.0', 'pci0000:01', partitionable=True)
    counter_set = published['counter_sets'][0]
    for device in published['devices']:
        assert cards.fits(counter_set, [device]), device['name']
        assert device['name'].startswith('gpu-3') and len(device['name']) <= 63
    # Every profile's placements, as many at a time as nvidia-smi says, fit (the memory slices do not overlap).
    for item in card['mig']:
        placed = [d for d in published['devices'] if d['attributes'].get('profile') == item['name']]
        chosen = placed[::max(1, len(placed) // item['instances'])][:item['instances']]
        assert cards.fits(counter_set, chosen), item['name']
