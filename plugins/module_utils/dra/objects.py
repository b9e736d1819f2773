# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA objects as the API serves them, indexed once: the pools of published devices, a claim's state,
devices and pods, shared devices' capacity, device taints.

Pure functions over plain dicts (resource.k8s.io/v1 DeviceClasses, ResourceSlices, ResourceClaims; v1 Pods,
Nodes, Namespaces and Events; resource.k8s.io/v1alpha3 DeviceTaintRules): dra/collect.py reads them, the
health checks (dra/health.py), the explainer (dra/explain.py), the board and can-has-gpu read them through
this module. Every input is indexed once (by uid, by namespace/name, by device), so the analysis stays linear
in the number of objects (72 seats and more).
"""

from __future__ import annotations

import datetime
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import condition, object_meta, object_name, object_namespace
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_quantity, is_decimal_quantity, parse_quantity, parse_time


DEFAULT_DRIVER = 'gpu.example.com'


# The labels of the example driver chart's kubelet plugin pods (its DaemonSet <release>-kubeletplugin).
EXAMPLE_DRIVER_PLUGIN_LABELS = {'app.kubernetes.io/name': 'dra-example-driver',
                                'app.kubernetes.io/component': 'kubeletplugin'}


# The environment variable of the example chart's plugin container that names the driver it serves.
PLUGIN_DRIVER_ENV = 'DRIVER_NAME'


POD_CLAIM_NAME_ANNOTATION = 'resource.kubernetes.io/pod-claim-name'


TERMINATED_PHASES = ('Succeeded', 'Failed')


def allocated_devices(claim):
    """The allocation results of a claim: dicts with driver, pool, device, request (empty when pending)."""
    allocation = (claim.get('status') or {}).get('allocation') or {}
    return list((allocation.get('devices') or {}).get('results') or [])


def claim_state(claim):
    """The state the API records: 'pending' (no allocation), 'reserved' (allocated, reservedFor names a
    consumer) or 'allocated' (allocated, reserved for nobody)."""
    status = claim.get('status') or {}
    if not status.get('allocation'):
        return 'pending'
    return 'reserved' if status.get('reservedFor') else 'allocated'


class PodIndex:
    """Pods indexed once, by uid, by namespace/name and by the claims they name, so that finding the pods
    of every claim stays linear in the number of pods."""

    def __init__(self, pods):
        self.by_uid = {}
        self.by_key = {}
        self.by_claim = defaultdict(list)
        self._position = {}
        for position, pod in enumerate(pods or []):
            meta = object_meta(pod)
            key = (meta.get('namespace'), meta.get('name'))
            self._position[id(pod)] = position
            self.by_key[key] = pod
            if meta.get('uid'):
                self.by_uid[meta['uid']] = pod
            claim_names = set(ref.get('resourceClaimName') for ref in (pod.get('spec') or {}).get('resourceClaims') or [])
            claim_names.update(st.get('resourceClaimName')
                               for st in (pod.get('status') or {}).get('resourceClaimStatuses') or [])
            for claim_name in claim_names:
                if claim_name:
                    self.by_claim[(key[0], claim_name)].append(pod)

    def consumers(self, claim):
        """Pods of the claim's namespace that use it: by name in spec.resourceClaims, by generated name in
        status.resourceClaimStatuses, as its owner, or in its reservedFor; each once, in the order given."""
        meta = object_meta(claim)
        namespace = meta.get('namespace')
        found = dict((id(pod), pod) for pod in self.by_claim.get((namespace, meta.get('name')), ()))
        uids = [ref.get('uid') for ref in meta.get('ownerReferences') or [] if ref.get('kind') == 'Pod']
        uids += [ref.get('uid') for ref in (claim.get('status') or {}).get('reservedFor') or []]
        for uid in uids:
            pod = self.by_uid.get(uid) if uid else None
            if pod is not None and object_namespace(pod) == namespace:
                found[id(pod)] = pod
        return sorted(found.values(), key=lambda pod: self._position[id(pod)])

    def reservations(self, claim, nodes=None):
        """The pods of the claim's reservedFor: (live pods, [(name, why) for each one gone or terminated]).

        Consumers that are not pods are left out. A pod is found by uid; a new pod with the same name is
        another pod. nodes ({name: Node}, when given): a pod being deleted on a node that is NotReady or gone counts
        as gone too (stuck_deleting: its kubelet cannot confirm it stopped, so the claim stays reserved).
        """
        namespace = object_namespace(claim)
        alive = []
        missing = []
        for consumer in (claim.get('status') or {}).get('reservedFor') or []:
            if consumer.get('resource') != 'pods' or consumer.get('apiGroup'):
                continue
            uid = consumer.get('uid')
            pod = self.by_uid.get(uid) if uid else self.by_key.get((namespace, consumer.get('name')))
            if pod is None:
                same_name = self.by_key.get((namespace, consumer.get('name')))
                missing.append((consumer.get('name'), 'no longer exists' + (
                    ' (a new pod with the same name has a different uid)' if same_name is not None else '')))
                continue
            phase = (pod.get('status') or {}).get('phase')
            if phase in TERMINATED_PHASES:
                missing.append((consumer.get('name'), 'has terminated (%s)' % phase))
                continue
            stuck = stuck_deleting(pod, nodes) if nodes is not None else None
            if stuck:
                missing.append((consumer.get('name'), stuck))
                continue
            alive.append(pod)
        return alive, missing


def stuck_deleting(pod, nodes):
    """Why a pod being deleted stays (a phrase: 'is being deleted on node-2, which is NotReady'), or None.

    A pod deleted on a node whose kubelet does not answer (Ready not True, or the Node gone) keeps its phase and its
    place in its claims' reservedFor until it is force-deleted: the resource claim controller releases a claim only
    when its pod is gone, terminal, or deleted before it was bound. nodes: {name: Node}.
    """
    node_name = (pod.get('spec') or {}).get('nodeName')
    if not object_meta(pod).get('deletionTimestamp') or not node_name:
        return None
    node = nodes.get(node_name)
    if node is None:
        return 'is being deleted on %s, which no longer exists' % node_name
    ready = condition(node, 'Ready')
    if ready and ready.get('status') == 'True':
        return None
    return 'is being deleted on %s, which is NotReady' % node_name


def has_gate(pod, name):
    """Whether the pod carries the scheduling gate of that name (the scheduler does not try it until it is removed)."""
    return any(g.get('name') == name for g in (pod.get('spec') or {}).get('schedulingGates') or [])


def claim_pods(claim, pods):
    """The pods (of a list) that use a claim (PodIndex.consumers)."""
    return PodIndex(pods).consumers(claim)


def in_use(claim, pods):
    """Whether a pod that has not finished holds the claim's reservation (PodIndex.reservations)."""
    return bool(PodIndex(pods).reservations(claim)[0])


class ObjectIndex:
    """Every input indexed once."""

    def __init__(self, device_classes, slices, claims, pods, nodes, namespaces, events):
        self.claims = claims or []
        self.slice_counts = defaultdict(int)  # (driver, node) -> slices of every generation
        for rslice in slices or []:
            spec = rslice.get('spec') or {}
            if spec.get('nodeName'):
                self.slice_counts[(spec.get('driver'), spec['nodeName'])] += 1
        self.device_classes = set(object_name(dc) for dc in device_classes or [])
        self.nodes = dict((object_name(node), node) for node in nodes or [])
        self.namespaces = dict((object_name(ns), ns) for ns in namespaces or [])
        self.pods = PodIndex(pods)
        self.events_by_uid = {}
        self.events_by_key = {}
        for event in events or []:
            if event.get('reason') != 'FailedScheduling':
                continue
            involved = event.get('involvedObject') or event.get('regarding') or {}
            if involved.get('kind', 'Pod') != 'Pod':
                continue
            stamp = event_time(event)
            for table, key in ((self.events_by_uid, involved.get('uid')),
                               (self.events_by_key, (involved.get('namespace'), involved.get('name')))):
                if not key or key == (None, None):
                    continue
                current = table.get(key)
                if current is None or stamp > current[0]:
                    table[key] = (stamp, event)
        self.pools = build_pools(slices or [])
        self.devices = {}
        for pool in self.pools.values():
            for device_name, device in pool['devices'].items():
                self.devices[(pool['driver'], pool['pool'], device_name)] = device

    def newest_failed_scheduling(self, pod):
        meta = object_meta(pod)
        found = self.events_by_uid.get(meta.get('uid')) or self.events_by_key.get((meta.get('namespace'), meta.get('name')))
        return found[1] if found else None

    def pool_node(self, driver, pool):
        entry = self.pools.get((driver, pool))
        return entry['node'] if entry else None


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def event_time(event):
    series = event.get('series') or {}
    stamps = [parse_time(series.get('lastObservedTime')), parse_time(event.get('lastTimestamp')),
              parse_time(event.get('eventTime')), parse_time(event.get('firstTimestamp')),
              parse_time(object_meta(event).get('creationTimestamp'))]
    stamps = [stamp for stamp in stamps if stamp is not None]
    return max(stamps) if stamps else EPOCH


def build_pools(slices):
    """Group ResourceSlices by (driver, pool); keep the devices of the newest generation."""
    grouped = defaultdict(list)
    for rslice in slices:
        spec = rslice.get('spec') or {}
        pool = spec.get('pool') or {}
        grouped[(spec.get('driver'), pool.get('name'))].append(rslice)
    pools = {}
    for (driver, pool_name), members in grouped.items():
        generations = sorted(set(int((m['spec'].get('pool') or {}).get('generation') or 0) for m in members))
        newest = generations[-1]
        current = [m for m in members if int((m['spec'].get('pool') or {}).get('generation') or 0) == newest]
        counts = sorted(set(int((m['spec'].get('pool') or {}).get('resourceSliceCount') or 0) for m in current))
        node = None
        devices = {}
        for member in current:
            spec = member['spec']
            node = node or spec.get('nodeName')
            for device in spec.get('devices') or []:
                devices[device.get('name')] = device
        expected_count = counts[-1] if counts else 0
        pools[(driver, pool_name)] = {
            'driver': driver,
            'pool': pool_name,
            'node': node,
            'generation': newest,
            'generations': generations,
            'resource_slice_count': expected_count,
            'slice_counts': counts,
            'slices_seen': len(current),
            'devices': devices,
        }
    return pools


def node_ready(node):
    if node is None:
        return None
    cond = condition(node, 'Ready')
    return bool(cond and cond.get('status') == 'True')


def node_selected(node, selector):
    labels = object_meta(node).get('labels') or {}
    for key, value in (selector or {}).items():
        if key not in labels:
            return False
        if value is not None and str(labels[key]) != str(value):
            return False
    return True


def physical_cards(pool):
    """The physical cards of a pool: one per shared counter set its devices consume, one per other device.

    A partitionable card is published as its partitions and itself whole, all consuming the counters of one
    counter set; returns {card: [device names]}.
    """
    cards = defaultdict(list)
    for device_name, device in pool['devices'].items():
        sets = sorted(set(item.get('counterSet') for item in device.get('consumesCounters') or []
                          if item.get('counterSet')))
        cards[('counters',) + tuple(sets) if sets else ('device', device_name)].append(device_name)
    return cards


def device_status(claim):
    """What drivers wrote about the claim's devices (status.devices): driver, pool, device, data, conditions."""
    rows = []
    for item in (claim.get('status') or {}).get('devices') or []:
        rows.append({'driver': item.get('driver'), 'pool': item.get('pool'), 'device': item.get('device'),
                     'share_id': item.get('shareID'), 'data': item.get('data'),
                     'conditions': [dict((k, c.get(k)) for k in ('type', 'status', 'reason', 'message'))
                                    for c in item.get('conditions') or []],
                     'network_data': item.get('networkData')})
    return rows


def capacity_rows(device, consumed):
    """[{name, total, used, free, over}] of a shared device's capacities, sorted by name, given the
    consumedCapacity mappings of the allocations that share it (also the board's and the explainer's). An
    allocation that records no consumedCapacity (made while the device was not shareable) holds all of it."""
    rows = []
    for name, entry in sorted((device.get('capacity') or {}).items()):
        try:
            total = parse_quantity((entry or {}).get('value'))
        except ValueError:
            continue
        used = 0
        for amounts in consumed:
            try:
                used += parse_quantity(amounts.get(name, '0')) if amounts else total
            except ValueError:
                continue
        # Written as the driver publishes it: a NIC's 100G bandwidth in decimal units, a GPU's 80Gi in binary.
        decimal = is_decimal_quantity((entry or {}).get('value'))
        rows.append({'name': name, 'total': format_quantity(total, decimal), 'used': format_quantity(used, decimal),
                     'free': format_quantity(max(total - used, 0), decimal), 'over': used > total})
    return rows


def share_consumed(entry, asked=None):
    """What a share consumes of one capacity of a shared device (its DeviceCapacity entry), as the allocator counts
    it: the amount asked (none: the requestPolicy's default, else all of it), raised to the requestPolicy's minimum
    and up to its next step (validRange), or to the smallest valid value at least as large (validValues). A
    Fraction; ValueError for a quantity that does not parse."""
    policy = (entry or {}).get('requestPolicy') or {}
    if asked is None:
        asked = policy.get('default') or (entry or {}).get('value')
    amount = parse_quantity(asked)
    valid_range = policy.get('validRange') or {}
    if valid_range.get('min') is not None:
        least = parse_quantity(valid_range['min'])
        if amount < least:
            return least
        if valid_range.get('step') is not None:
            step = parse_quantity(valid_range['step'])
            if step > 0:
                steps = -((least - amount) // step)  # the ceiling of (amount - least) / step
                return least + steps * step
        return amount
    larger = sorted(v for v in (parse_quantity(value) for value in policy.get('validValues') or []) if v >= amount)
    return larger[0] if larger else amount


def taint_text(taint):
    """key=value:Effect of a device taint."""
    value = '=' + str(taint['value']) if taint.get('value') else ''
    return '%s%s:%s' % (taint.get('key'), value, taint.get('effect'))


def taint_rule_matches(rule, driver, pool, device_name):
    selector = (rule.get('spec') or {}).get('deviceSelector') or {}
    return all(selector.get(field) in (None, value)
               for field, value in (('driver', driver), ('pool', pool), ('device', device_name)))


def device_taints(driver, pool, device_name, device, rules):
    """The taints of a device: its own (rule None) and those of the DeviceTaintRules that select it (rule = name);
    each with key, value, effect, rule (also the explainer's)."""
    taints = [dict(taint, rule=None) for taint in device.get('taints') or []]
    for rule in rules or []:
        if taint_rule_matches(rule, driver, pool, device_name):
            taints.append(dict((rule.get('spec') or {}).get('taint') or {}, rule=object_name(rule)))
    return [dict((k, taint.get(k)) for k in ('key', 'value', 'effect', 'rule')) for taint in taints]
