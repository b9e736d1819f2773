# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health analysis of Dynamic Resource Allocation (DRA) objects.

Pure functions over plain dicts as the API serves them (resource.k8s.io/v1
DeviceClasses, ResourceSlices, ResourceClaims; v1 Pods, Nodes, Namespaces and
Events; resource.k8s.io/v1alpha3 DeviceTaintRules). No I/O: dra_collect reads
the objects, analyze() judges them, so the same code runs on a live cluster and
on recorded fixtures.

The DRA features of Kubernetes 1.35 (plugins/module_utils/dra/features.py):
- a device with allowMultipleAllocations (consumable capacity) may hold
  several claims while the sum of their consumedCapacity fits its capacity;
  every shared device in use gets a row with its capacity used and free;
- partitions of one card consume the counters of one shared counter set, so
  a node's published count is its physical cards (counter sets, plus devices
  that consume none), not its partitions;
- taints come from the ResourceSlice (device.taints) and from
  DeviceTaintRules (selector driver, pool, device);
- the data a driver writes into status.devices is kept in each claim's row.

Every input is indexed once (by uid, by namespace/name, by device), so the
analysis stays linear in the number of objects (72 seats and more).
"""

from __future__ import annotations

import datetime
import re
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import condition, object_meta, object_name, object_namespace
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    SEAT_LABEL,
    format_quantity,
    is_decimal_quantity,
    parse_duration,
    parse_quantity,
)

DEFAULT_DRIVER = 'gpu.example.com'
# The labels of the example driver chart's kubelet plugin pods (its DaemonSet <release>-kubeletplugin).
EXAMPLE_DRIVER_PLUGIN_LABELS = {'app.kubernetes.io/name': 'dra-example-driver',
                                'app.kubernetes.io/component': 'kubeletplugin'}
# The environment variable of the example chart's plugin container that names the driver it serves.
PLUGIN_DRIVER_ENV = 'DRIVER_NAME'
# Problems of a node that restarting its kubelet plugin pod may mend (it publishes its devices again).
PLUGIN_MENDS = ('node_missing_slice', 'device_count_short', 'driver_plugin_not_ready')
# A kubelet plugin container that ended within this many seconds is reported as a recent restart.
PLUGIN_RESTART_WINDOW = 600
POD_CLAIM_NAME_ANNOTATION = 'resource.kubernetes.io/pod-claim-name'
TERMINATED_PHASES = ('Succeeded', 'Failed')

ERROR = 'error'
WARNING = 'warning'

PROBLEM_TYPES = (
    'node_missing_slice',
    'device_count_short',
    'node_not_ready',
    'driver_plugin_missing',
    'driver_plugin_not_ready',
    'driver_plugin_restarted',
    'pool_inconsistent',
    'claim_reserved_for_missing_pod',
    'claim_allocated_unused',
    'claim_pending',
    'device_double_allocated',
    'claim_device_unknown',
    'device_capacity_exceeded',
    'device_tainted',
)

_UTC = datetime.timezone.utc


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

def parse_time(value):
    """An aware UTC datetime from an RFC 3339 API timestamp (None if missing or unreadable)."""
    if not value:
        return None
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=_UTC)
    text = str(value).strip()
    if text.endswith('Z') or text.endswith('z'):
        text = text[:-1] + '+00:00'
    if len(text) == 25 and text[10] == 'T':
        # The API's own form (2026-10-28T09:12:00Z): fromisoformat reads it on every Python this runs on.
        try:
            return datetime.datetime.fromisoformat(text).astimezone(_UTC)
        except ValueError:
            pass
    match = re.match(r'^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?([+-]\d{2}:?\d{2})?$', text)
    if not match:
        return None
    offset = match.group(3) or '+00:00'
    try:
        parsed = datetime.datetime.strptime(match.group(1) + offset.replace(':', ''), '%Y-%m-%dT%H:%M:%S%z')
    except ValueError:
        return None
    return parsed.astimezone(_UTC)


def format_time(moment):
    """RFC 3339 in UTC with seconds, as the API writes timestamps (None for None)."""
    if moment is None:
        return None
    return moment.astimezone(_UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def format_age(seconds):
    """Short human age as kubectl prints it: 45s, 12m, 3h5m, 12d."""
    if seconds is None:
        return 'unknown time'
    seconds = max(int(seconds), 0)
    if seconds < 120:
        return '%ds' % seconds
    minutes = seconds // 60
    if minutes < 60:
        return '%dm' % minutes
    hours = minutes // 60
    if hours < 48:
        return '%dh%dm' % (hours, minutes % 60) if minutes % 60 else '%dh' % hours
    days = hours // 24
    return '%dd%dh' % (days, hours % 24) if days < 7 and hours % 24 else '%dd' % days


# An age as format_age writes it, within a sentence.
AGE_PATTERN = re.compile(r'\b\d+(?:[dh]\d+[hm]|[smhd])\b')


def plural(count, word, plural_form=None):
    """'1 GPU', '3 GPUs': a count with its noun."""
    return '%d %s' % (count, word if count == 1 else (plural_form or word + 's'))


def join_names(names):
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    if len(names) <= 1:
        return ''.join(names)
    return ', '.join(names[:-1]) + ' and ' + names[-1]


def _problem(kind, severity, obj, reason, **extra):
    problem = {'type': kind, 'severity': severity, 'object': obj, 'reason': reason}
    problem.update(extra)
    return problem


def _device_label(driver, pool, device, pool_node):
    if pool_node:
        return 'device %s on node %s (driver %s)' % (device, pool_node, driver)
    return 'device %s in pool %s (driver %s)' % (device, pool, driver)


# ---------------------------------------------------------------------------
# Claims and the pods that use them (also can-has-gpu's and the explainer's)
# ---------------------------------------------------------------------------

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

    def reservations(self, claim):
        """The pods of the claim's reservedFor: (live pods, [(name, why) for each one gone or terminated]).

        Consumers that are not pods are left out. A pod is found by uid; a new pod with the same name is
        another pod.
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
            alive.append(pod)
        return alive, missing


def claim_pods(claim, pods):
    """The pods (of a list) that use a claim (PodIndex.consumers)."""
    return PodIndex(pods).consumers(claim)


def in_use(claim, pods):
    """Whether a pod that has not finished holds the claim's reservation (PodIndex.reservations)."""
    return bool(PodIndex(pods).reservations(claim)[0])


# ---------------------------------------------------------------------------
# Indexes
# ---------------------------------------------------------------------------

class _Index:
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
            stamp = _event_time(event)
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


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=_UTC)


def _event_time(event):
    series = event.get('series') or {}
    stamps = [parse_time(series.get('lastObservedTime')), parse_time(event.get('lastTimestamp')),
              parse_time(event.get('eventTime')), parse_time(event.get('firstTimestamp')),
              parse_time(object_meta(event).get('creationTimestamp'))]
    stamps = [stamp for stamp in stamps if stamp is not None]
    return max(stamps) if stamps else _EPOCH


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


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

def _node_ready(node):
    if node is None:
        return None
    cond = condition(node, 'Ready')
    return bool(cond and cond.get('status') == 'True')


def _selected(node, selector):
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


def _check_nodes(index, driver, per_node, expected_nodes, node_selector, problems):
    if expected_nodes:
        expected = list(dict.fromkeys(expected_nodes))
    else:
        expected = sorted(name for name, node in index.nodes.items() if _selected(node, node_selector))
    published = defaultdict(set)  # node -> its physical cards
    device_counts = defaultdict(int)
    for pool in index.pools.values():
        if pool['driver'] == driver and pool['node']:
            for card in physical_cards(pool):
                published[pool['node']].add((pool['pool'],) + card)
            device_counts[pool['node']] += len(pool['devices'])
    names = list(expected) + sorted(set(published) - set(expected))
    expected_set = set(expected)
    rows = []
    for name in names:
        node = index.nodes.get(name)
        ready = _node_ready(node)
        count = len(published.get(name, ()))
        want = per_node if name in expected_set else 0
        rows.append({'name': name, 'driver': driver, 'published': count, 'expected': want,
                     'devices': device_counts.get(name, 0),
                     'slices': index.slice_counts.get((driver, name), 0), 'ready': ready})
        obj = 'Node %s' % name
        if name in expected_set and node is None:
            problems.append(_problem(
                'node_missing_slice', ERROR, obj,
                'node %s is expected to publish %s for driver %s, but no Node named %s exists in the cluster; '
                'check the node list given to the health check (option nodes / lab_health_nodes) against '
                '"kubectl get nodes", or join the node.' % (name, plural(want, 'device'), driver, name),
                node=name, driver=driver, published=count, expected=want))
            continue
        if name in expected_set and want > 0 and count == 0:
            why = ''
            if ready is False:
                why = ' The node is NotReady, which is the likely cause.'
            problems.append(_problem(
                'node_missing_slice', ERROR, obj,
                'node %s publishes no ResourceSlice for driver %s, so none of its %s can be allocated and pods '
                'asking for them stay Pending.%s Check that the driver\'s kubelet plugin pod runs on %s '
                '(kubectl get pods -A -o wide --field-selector spec.nodeName=%s) and read its logs; restarting '
                'that pod (playbooks/heal.yml does) republishes the slice.'
                % (name, driver, plural(want, 'device'), why, name, name),
                node=name, driver=driver, published=0, expected=want))
        elif name in expected_set and 0 < count < want:
            problems.append(_problem(
                'device_count_short', ERROR, obj,
                'node %s publishes %d of %d %s devices (%d short), so the lab has fewer GPUs than seats were '
                'planned for. Check the driver\'s device count (kubeletPlugin.numDevices, dralab_devices_per_node) '
                'and the kubelet plugin logs on %s, then restart the plugin pod there.'
                % (name, count, want, driver, want - count, name),
                node=name, driver=driver, published=count, expected=want))
        if node is not None and ready is False:
            cond = condition(node, 'Ready') or {}
            detail = (cond.get('message') or cond.get('reason') or 'no Ready condition reported').rstrip('.')
            problems.append(_problem(
                'node_not_ready', WARNING, obj,
                'node %s is NotReady (%s); its devices stay published but pods cannot start there. Check the '
                'kubelet on %s (systemctl status kubelet; journalctl -u kubelet).' % (name, detail, name),
                node=name))
    return rows, expected


def _plugin_state(pod):
    """(ready, why not ready, restarts, newest termination {'finishedAt', 'exitCode', 'reason'} or None)."""
    status = pod.get('status') or {}
    ready_cond = condition(pod, 'Ready') or {}
    containers = status.get('containerStatuses') or []
    restarts = sum(int(c.get('restartCount') or 0) for c in containers)
    why = []
    for container in containers:
        waiting = (container.get('state') or {}).get('waiting')
        if waiting:
            why.append('%s %s' % (container.get('name'), waiting.get('reason') or 'waiting'))
    if object_meta(pod).get('deletionTimestamp'):
        why.insert(0, 'being deleted')
    if status.get('phase') != 'Running':
        why.insert(0, 'phase %s' % (status.get('phase') or 'unknown'))
    ready = not why and ready_cond.get('status') == 'True'
    if not ready and not why:
        why.append((ready_cond.get('reason') or 'not Ready') if ready_cond else 'no Ready condition')
    ended = [c['lastState']['terminated'] for c in containers
             if ((c.get('lastState') or {}).get('terminated') or {}).get('finishedAt')]
    newest = max(ended, key=lambda t: parse_time(t['finishedAt']) or datetime.datetime.min.replace(tzinfo=_UTC),
                 default=None)
    return ready, ', '.join(why), restarts, newest


def plugin_driver(pod):
    """The driver a kubelet plugin pod serves, from its containers' DRIVER_NAME (the example chart sets it to
    the release's driver), or None when no container names one."""
    for container in (pod.get('spec') or {}).get('containers') or []:
        for env in container.get('env') or []:
            if env.get('name') == PLUGIN_DRIVER_ENV and env.get('value'):
                return env['value']
    return None


def _check_plugins(index, driver, plugin_labels, expected, now, problems):
    """The driver's kubelet plugin pod on every expected node: there, ready, and not just restarted.

    Every release of the example chart labels its plugin pods alike (a GPU release and the NIC release of
    gpu_nic_numa); a pod whose DRIVER_NAME names another driver is not this driver's plugin."""
    if not plugin_labels:
        return {}
    by_node = defaultdict(list)
    for pod in index.pods.by_key.values():
        node_name = (pod.get('spec') or {}).get('nodeName')
        if node_name and _selected(pod, plugin_labels) and plugin_driver(pod) in (None, driver):
            by_node[node_name].append(pod)
    selector = ','.join('%s=%s' % (k, v) if v is not None else k for k, v in sorted(plugin_labels.items()))
    plugin_pods = {}
    for name in expected:
        if name not in index.nodes:
            continue  # reported by _check_nodes
        obj = 'Node %s' % name
        pods = sorted(by_node.get(name, ()), key=lambda p: object_meta(p).get('creationTimestamp') or '')
        if not pods:
            problems.append(_problem(
                'driver_plugin_missing', ERROR, obj,
                'no kubelet plugin pod of driver %s runs on node %s (no pod labelled %s there), so its devices '
                'are neither published nor prepared for pods. Check the DaemonSet and why it has no pod there '
                '(kubectl get daemonsets -A -l %s; a taint or a nodeSelector), then run playbooks/driver.yml.'
                % (driver, name, selector, selector), node=name, driver=driver))
            continue
        pod = pods[-1]
        ready, why, restarts, ended = _plugin_state(pod)
        ref = '%s/%s' % (object_namespace(pod), object_name(pod))
        plugin_pods[name] = ref
        logs = 'kubectl -n %s logs %s --previous' % (object_namespace(pod), object_name(pod))
        if not ready:
            problems.append(_problem(
                'driver_plugin_not_ready', ERROR, obj,
                'the kubelet plugin of driver %s on node %s (pod %s) is not ready (%s; %s), so pods there cannot '
                'get their devices prepared and stay in ContainerCreating. The kubelet restarts it by itself; if it '
                'is not back within a minute, read %s and run playbooks/heal.yml.'
                % (driver, name, ref, why, plural(restarts, 'restart'), logs),
                node=name, driver=driver, pod=ref, restarts=restarts))
            continue
        finished = parse_time((ended or {}).get('finishedAt'))
        if finished is not None and (now - finished).total_seconds() <= PLUGIN_RESTART_WINDOW:
            problems.append(_problem(
                'driver_plugin_restarted', WARNING, obj,
                'the kubelet plugin of driver %s on node %s (pod %s) ended %s ago (exit code %s, %s) and was '
                'restarted (%s in all); it is ready again and its devices are published. If it keeps restarting, '
                'read %s.' % (driver, name, ref, format_age((now - finished).total_seconds()),
                              ended.get('exitCode'), ended.get('reason') or 'no reason given',
                              plural(restarts, 'restart'), logs),
                node=name, driver=driver, pod=ref, restarts=restarts))
    return plugin_pods


def _check_pools(index, problems):
    rows = []
    for key in sorted(index.pools, key=lambda k: (k[0] or '', k[1] or '')):
        pool = index.pools[key]
        stale = len(pool['generations']) > 1
        incomplete = pool['slices_seen'] != pool['resource_slice_count'] or len(pool['slice_counts']) > 1
        consistent = not (stale or incomplete)
        rows.append({'driver': pool['driver'], 'pool': pool['pool'], 'node': pool['node'],
                     'generation': pool['generation'], 'resource_slice_count': pool['resource_slice_count'],
                     'slices_seen': pool['slices_seen'], 'consistent': consistent,
                     'generations': pool['generations'], 'devices': len(pool['devices'])})
        if consistent:
            continue
        where = ' on node %s' % pool['node'] if pool['node'] else ''
        parts = []
        if incomplete:
            parts.append('at its newest generation %d it announces %s (resourceSliceCount %s) but %s present'
                         % (pool['generation'], plural(pool['resource_slice_count'], 'slice'),
                            '/'.join(str(c) for c in pool['slice_counts']),
                            plural(pool['slices_seen'], 'slice is', 'slices are')))
        if stale:
            older = [str(g) for g in pool['generations'][:-1]]
            parts.append('slices of older generation%s %s are still present next to generation %d'
                         % ('s' if len(older) > 1 else '', join_names(older), pool['generation']))
        reason = ('pool %s of driver %s%s is inconsistent: %s. The scheduler only uses the newest generation '
                  'and treats an incomplete pool as unusable, so its devices may not be allocatable. This is normal '
                  'for a few seconds while the driver republishes; if it persists, restart the driver\'s kubelet '
                  'plugin%s so it rewrites the pool, or delete the stale slices '
                  '(kubectl get resourceslices --field-selector spec.driver=%s).'
                  % (pool['pool'], pool['driver'], where, '; '.join(parts), where, pool['driver']))
        problems.append(_problem('pool_inconsistent', ERROR if incomplete else WARNING,
                                 'ResourcePool %s/%s' % (pool['driver'], pool['pool']), reason,
                                 driver=pool['driver'], pool=pool['pool'], node=pool['node']))
    return rows


def _pending_reason(index, claim):
    """Why a claim has no allocation, from its consumer pod's scheduling status (or None if nobody uses it)."""
    consumers = index.pods.consumers(claim)
    consumers.sort(key=lambda p: (p.get('status') or {}).get('phase') in TERMINATED_PHASES)
    for pod in consumers:
        cond = condition(pod, 'PodScheduled')
        if cond and cond.get('status') == 'False' and cond.get('message'):
            return pod, cond['message']
    for pod in consumers:
        event = index.newest_failed_scheduling(pod)
        if event and event.get('message'):
            return pod, event['message']
    if consumers:
        return consumers[0], None
    return None, None


def _requested_classes(claim):
    classes = []
    for request in ((claim.get('spec') or {}).get('devices') or {}).get('requests') or []:
        exactly = request.get('exactly') or {}
        if exactly.get('deviceClassName'):
            classes.append(exactly['deviceClassName'])
        for sub in request.get('firstAvailable') or []:
            if sub.get('deviceClassName'):
                classes.append(sub['deviceClassName'])
    return list(dict.fromkeys(classes))


def _scheduler_hint(message):
    text = (message or '').lower()
    if 'cannot allocate all claims' in text:
        return (' Every matching device is allocated or excluded by the claim\'s selectors: the pod starts when a '
                'GPU is freed (delete finished workloads and the stale claims reported above).')
    if 'resourceclaim' in text and 'not found' in text:
        return ' The pod names a claim that does not exist yet: create it or fix the pod\'s resourceClaims.'
    if 'deviceclass' in text and 'not found' in text:
        return ' The requested DeviceClass does not exist: see kubectl get deviceclasses for the menu.'
    return ''


def _check_claims(index, stale_after, now, problems, explanations=None):
    rows = []
    allocations = defaultdict(list)  # (driver, pool, device) -> [(claim key, admin access)]
    claims_sorted = sorted(index.claims, key=lambda c: (object_namespace(c) or '', object_name(c) or ''))
    for claim in claims_sorted:
        meta = object_meta(claim)
        ns, name = meta.get('namespace'), meta.get('name')
        ref = '%s/%s' % (ns, name)
        obj = 'ResourceClaim %s' % ref
        reserved = (claim.get('status') or {}).get('reservedFor') or []
        state = claim_state(claim)
        created = meta.get('creationTimestamp')
        created_at = parse_time(created)
        age = int((now - created_at).total_seconds()) if created_at else None
        seat = (object_meta(index.namespaces.get(ns) or {}).get('labels') or {}).get(SEAT_LABEL)
        annotations = meta.get('annotations') or {}
        owner_template = bool(POD_CLAIM_NAME_ANNOTATION in annotations
                              or any(o.get('kind') == 'Pod' for o in meta.get('ownerReferences') or []))

        devices = []
        for result in allocated_devices(claim):
            key = (result.get('driver'), result.get('pool'), result.get('device'))
            node = index.pool_node(key[0], key[1])
            devices.append({'driver': key[0], 'pool': key[1], 'device': key[2], 'request': result.get('request'),
                            'node': node, 'consumed_capacity': dict(result.get('consumedCapacity') or {}),
                            'share_id': result.get('shareID')})
            allocations[key].append((ref, bool(result.get('adminAccess')), result.get('consumedCapacity') or {}))
            if key not in index.devices:
                pool_known = (key[0], key[1]) in index.pools
                where = ('pool %s publishes no device %s any more' % (key[1], key[2]) if pool_known
                         else 'no ResourceSlice publishes pool %s any more' % key[1])
                problems.append(_problem(
                    'claim_device_unknown', ERROR, obj,
                    'claim %s is allocated device %s of pool %s (driver %s), but %s (the node may be gone, or the '
                    'driver now publishes fewer devices); pods using the claim cannot be prepared. Delete the claim '
                    '(kubectl -n %s delete resourceclaim %s) and create it again so the scheduler picks a published '
                    'device.' % (ref, key[2], key[1], key[0], where, ns, name),
                    namespace=ns, name=name, driver=key[0], pool=key[1], device=key[2]))
        device_text = join_names(['%s on node %s' % (d['device'], d['node']) if d['node']
                                  else '%s in pool %s' % (d['device'], d['pool']) for d in devices]) or 'its devices'
        held = 'GPU %s' % device_text if len(devices) == 1 else 'devices %s' % device_text

        reserved_names = [consumer.get('name') if consumer.get('resource') == 'pods' and not consumer.get('apiGroup')
                          else '%s/%s' % (consumer.get('resource'), consumer.get('name')) for consumer in reserved]
        live_pods, missing = index.pods.reservations(claim)
        alive = [object_name(pod) for pod in live_pods]

        if missing:
            what = join_names(['pod %s/%s which %s' % (ns, pod_name, why) for pod_name, why in missing])
            if alive:
                problems.append(_problem(
                    'claim_reserved_for_missing_pod', WARNING, obj,
                    'claim %s is still reserved for %s, next to live pod%s %s; the stale entry should be dropped by '
                    'the resource claim controller. If it stays, the claim will not be released when the live pods '
                    'finish: delete it then (kubectl -n %s delete resourceclaim %s).'
                    % (ref, what, 's' if len(alive) > 1 else '', join_names(alive), ns, name),
                    namespace=ns, name=name, pods=[entry[0] for entry in missing]))
            else:
                fix = 'kubectl -n %s delete resourceclaim %s' % (ns, name)
                terminated = [p for p, why in missing if why.startswith('has terminated')]
                if terminated and len(terminated) == len(missing):
                    fix = 'kubectl -n %s delete pod %s; if the reservation stays, kubectl -n %s delete resourceclaim %s' % (
                        ns, ' '.join(terminated), ns, name)
                problems.append(_problem(
                    'claim_reserved_for_missing_pod', ERROR, obj,
                    'claim %s is reserved for %s; the %s stays held until the claim is deleted (%s).'
                    % (ref, what, held, fix),
                    namespace=ns, name=name, pods=[entry[0] for entry in missing]))

        pending_reason = None
        if state == 'allocated' and age is not None and age > stale_after:
            problems.append(_problem(
                'claim_allocated_unused', ERROR, obj,
                'claim %s was created %s ago and holds the %s, but no pod uses it (empty reservedFor), so nobody '
                'else can get that device; if seat %s no longer needs it, delete it (kubectl -n %s delete '
                'resourceclaim %s).' % (ref, format_age(age), held, seat or ns, ns, name),
                namespace=ns, name=name, age_seconds=age))
        elif state == 'pending':
            pod, message = _pending_reason(index, claim)
            missing_classes = [c for c in _requested_classes(claim) if c not in index.device_classes]
            class_text = ''
            if missing_classes:
                class_text = (' It requests DeviceClass %s, which does not exist (kubectl get deviceclasses lists '
                              'the menu).' % join_names(missing_classes))
            if pod is None:
                pending_reason = 'no pod uses this claim yet'
                reason = ('claim %s is pending: no pod uses this claim yet, so the scheduler has not tried to '
                          'allocate a device.%s' % (ref, class_text))
            elif message:
                pending_reason = message
                reason = ('claim %s is pending because pod %s/%s cannot be scheduled: %s%s%s'
                          % (ref, ns, object_name(pod), message.rstrip(), _scheduler_hint(message), class_text))
            else:
                pending_reason = 'pod %s/%s is waiting for the scheduler' % (ns, object_name(pod))
                reason = ('claim %s is pending: pod %s/%s is waiting for the scheduler, which has not reported '
                          'a failure yet.%s' % (ref, ns, object_name(pod), class_text))
            if missing_classes and pod is not None and not message:
                pending_reason = 'DeviceClass %s does not exist' % join_names(missing_classes)
            explained = (explanations or {}).get(ref)
            extra = {}
            if explained:
                reason = '%s Explainer (%s): %s' % (reason.rstrip(), explained['reason'], explained['sentence'])
                extra = {'explain_reason': explained['reason'], 'explain_sentence': explained['sentence'],
                         'allocatable_now': explained['allocatable']}
            problems.append(_problem('claim_pending', WARNING, obj, reason, namespace=ns, name=name, **extra))

        explained = (explanations or {}).get(ref) if state == 'pending' else None
        rows.append({
            'namespace': ns, 'name': name, 'seat': seat, 'state': state, 'devices': devices,
            'reserved_for': reserved_names, 'holder_pods_alive': alive, 'owner_template': owner_template,
            'created': created, 'age_seconds': age, 'pending_reason': pending_reason,
            'explain_reason': explained['reason'] if explained else None,
            'explain_sentence': explained['sentence'] if explained else None,
            'device_status': device_status(claim),
        })
    return rows, allocations


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


def taint_text(taint):
    """key=value:Effect of a device taint."""
    value = '=' + str(taint['value']) if taint.get('value') else ''
    return '%s%s:%s' % (taint.get('key'), value, taint.get('effect'))


def _check_shared_devices(index, allocations, problems):
    """A row per shared device (allowMultipleAllocations) in use: its claims and capacity used/free; an error
    when the claims consume more than it has."""
    rows = []
    for key in sorted(allocations, key=lambda k: tuple(x or '' for x in k)):
        device = index.devices.get(key)
        if device is None or not device.get('allowMultipleAllocations'):
            continue
        shares = [(ref, consumed) for ref, admin, consumed in allocations[key] if not admin]
        holders = [ref for ref, dummy in shares]
        capacity = capacity_rows(device, [consumed for dummy, consumed in shares])
        over = ['%s %s of %s' % (row['name'], row['used'], row['total']) for row in capacity if row['over']]
        driver, pool, name = key
        node = index.pool_node(driver, pool)
        rows.append({'driver': driver, 'pool': pool, 'device': name, 'node': node,
                     'claims': list(dict.fromkeys(holders)),
                     'capacity': dict((row['name'], dict((k, row[k]) for k in ('total', 'used', 'free')))
                                      for row in capacity)})
        if over:
            problems.append(_problem(
                'device_capacity_exceeded', ERROR, 'Device %s/%s/%s' % (driver, pool, name),
                '%s is shared (allowMultipleAllocations) by %s, whose consumed capacity is more than the device has '
                '(%s): their workloads were promised more than the card holds. An allocation is stale or was '
                'written by hand: delete the newest claim (kubectl -n %s delete resourceclaim %s) and check the '
                'kube-scheduler logs.' % (_device_label(driver, pool, name, node), join_names(holders),
                                          '; '.join(over), holders[-1].split('/', 1)[0], holders[-1].split('/', 1)[1]),
                driver=driver, pool=pool, device=name, claims=holders))
    return rows


def _rule_matches(rule, driver, pool, device_name):
    selector = (rule.get('spec') or {}).get('deviceSelector') or {}
    return all(selector.get(field) in (None, value)
               for field, value in (('driver', driver), ('pool', pool), ('device', device_name)))


def device_taints(driver, pool, device_name, device, rules):
    """The taints of a device: its own (rule None) and those of the DeviceTaintRules that select it (rule = name);
    each with key, value, effect, rule (also the explainer's)."""
    taints = [dict(taint, rule=None) for taint in device.get('taints') or []]
    for rule in rules or []:
        if _rule_matches(rule, driver, pool, device_name):
            taints.append(dict((rule.get('spec') or {}).get('taint') or {}, rule=object_name(rule)))
    return [dict((k, taint.get(k)) for k in ('key', 'value', 'effect', 'rule')) for taint in taints]


def _check_taints(index, rules, problems):
    """A row per tainted device (its own taints and those of DeviceTaintRules), and a warning for each."""
    rows = []
    for pool_key in sorted(index.pools, key=lambda k: (k[0] or '', k[1] or '')):
        pool = index.pools[pool_key]
        for device_name in sorted(pool['devices']):
            taints = device_taints(pool['driver'], pool['pool'], device_name, pool['devices'][device_name], rules)
            if not taints:
                continue
            rows.append({'driver': pool['driver'], 'pool': pool['pool'], 'node': pool['node'], 'device': device_name,
                         'taints': taints})
            text = join_names([taint_text(t) + (' (DeviceTaintRule %s)' % t['rule'] if t['rule'] else '')
                               for t in taints])
            problems.append(_problem(
                'device_tainted', WARNING, 'Device %s/%s/%s' % (pool['driver'], pool['pool'], device_name),
                '%s is tainted %s: claims that do not tolerate it do not get it%s.'
                % (_device_label(pool['driver'], pool['pool'], device_name, pool['node']), text,
                   ' (NoExecute also evicts the pods using it)' if any(t['effect'] == 'NoExecute' for t in taints)
                   else ''),
                driver=pool['driver'], pool=pool['pool'], device=device_name, taints=taints))
    return rows


def _check_double_allocations(index, allocations, problems):
    for key in sorted(allocations, key=lambda k: tuple(x or '' for x in k)):
        holders = list(dict.fromkeys(ref for ref, admin, dummy in allocations[key] if not admin))
        if len(holders) < 2:
            continue
        device = index.devices.get(key)
        if device is not None and device.get('allowMultipleAllocations'):
            continue  # _check_shared_devices judges its capacity
        driver, pool, name = key
        node = index.pool_node(driver, pool)
        newest = holders[-1]
        ns, claim_name = newest.split('/', 1)
        problems.append(_problem(
            'device_double_allocated', ERROR, 'Device %s/%s/%s' % (driver, pool, name),
            '%s is allocated to %d claims (%s) but does not allow multiple allocations, so their workloads '
            'share one GPU without knowing it. One allocation is stale or was written by hand: delete the claim '
            'that should not have it (for example kubectl -n %s delete resourceclaim %s) and check the '
            'kube-scheduler logs.' % (_device_label(driver, pool, name, node), len(holders), join_names(holders),
                                      ns, claim_name),
            driver=driver, pool=pool, device=name, claims=holders))


# ---------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------

def analyze(device_classes=None, slices=None, claims=None, pods=None, nodes=None, namespaces=None, events=None,
            driver=DEFAULT_DRIVER, expected_devices_per_node=8, expected_nodes=None, node_selector=None,
            stale_claim_age='1h', now=None, explanations=None, plugin_labels=None, device_taint_rules=None):
    """Judge the DRA state of a cluster; return the health report dict.

    expected_devices_per_node counts physical cards (a partitioned card is one).
    plugin_labels: the labels of the driver's kubelet plugin pods (e.g. EXAMPLE_DRIVER_PLUGIN_LABELS); given,
    every expected node must run a ready one (an error otherwise; a restart in the last 10 minutes warns).
    device_taint_rules: the DeviceTaintRules (resource.k8s.io/v1alpha3), when the API serves them.

    now: aware datetime (default: current UTC time) against which claim ages are measured.
    explanations: {"namespace/name": dra_explain result} for pending claims; each claim_pending problem
    then adds the explainer's reason code and sentence to the scheduler's text.
    """
    now = parse_time(now) if now is not None else datetime.datetime.now(_UTC)
    stale_after = parse_duration(stale_claim_age)
    index = _Index(device_classes, slices, claims, pods, nodes, namespaces, events)

    problems = []
    node_rows, expected = _check_nodes(index, driver, int(expected_devices_per_node), expected_nodes,
                                       node_selector, problems)
    plugin_pods = _check_plugins(index, driver, plugin_labels, expected, now, problems)
    for problem in problems:
        # What restarting the plugin could mend names the plugin pod to restart (playbooks/heal.yml does).
        if problem['type'] in PLUGIN_MENDS and problem.get('node') in plugin_pods:
            problem.setdefault('pod', plugin_pods[problem['node']])
    pool_rows = _check_pools(index, problems)
    claim_rows, allocations = _check_claims(index, stale_after, now, problems, explanations)
    _check_double_allocations(index, allocations, problems)
    shared_rows = _check_shared_devices(index, allocations, problems)
    taint_rows = _check_taints(index, device_taint_rules or [], problems)

    expected_set = set(expected)
    published_keys = set()
    for pool in index.pools.values():
        if pool['driver'] == driver and pool['node']:
            published_keys.update((driver, pool['pool'], device) for device in pool['devices'])
    allocated_keys = set(key for key in allocations if key[0] == driver)
    severity_rank = {ERROR: 0, WARNING: 1}
    problems.sort(key=lambda p: severity_rank.get(p['severity'], 2))
    errors = sum(1 for p in problems if p['severity'] == ERROR)

    summary = {
        'driver': driver,
        'nodes_expected': len(expected_set),
        'nodes_publishing': sum(1 for row in node_rows if row['published'] > 0),
        'nodes_complete': sum(1 for row in node_rows if row['name'] in expected_set and row['published'] == row['expected']),
        'devices_expected': sum(row['expected'] for row in node_rows),
        'devices_published': sum(row['published'] for row in node_rows),
        'devices_allocated': len(allocated_keys),
        'devices_free': len(published_keys - allocated_keys),
        'claims_total': len(claim_rows),
        'claims_pending': sum(1 for row in claim_rows if row['state'] == 'pending'),
        'claims_allocated': sum(1 for row in claim_rows if row['state'] != 'pending'),
        'claims_reserved': sum(1 for row in claim_rows if row['state'] == 'reserved'),
        'devices_shared': len(shared_rows),
        'devices_tainted': sum(1 for row in taint_rows if row['driver'] == driver),
        'errors': errors,
        'warnings': len(problems) - errors,
    }
    return {
        'healthy': errors == 0,
        'summary': summary,
        'nodes': node_rows,
        'pools': pool_rows,
        'claims': claim_rows,
        'problems': problems,
        'device_classes': sorted(index.device_classes),
        'shared_devices': shared_rows,
        'tainted_devices': taint_rows,
    }


# Without detail, more problems than this of one kind (severity, type, explainer reason) become one line,
# which gives the count and the first SHOWN_NAMES objects; so do more nodes than this in the same state.
AGGREGATE_AT = 5
SHOWN_NAMES = 5


def _groups(rows, key):
    """rows grouped by key(row), in the order each key first appears: [[row, ...], ...]."""
    groups = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return list(groups.values())


def _problem_kind(problem):
    return problem['severity'], problem['type'], problem.get('explain_reason')


def _first_names(names, total):
    shown = ', '.join(names[:SHOWN_NAMES])
    return shown + (' and %d more' % (total - SHOWN_NAMES) if total > SHOWN_NAMES else '')


def _node_state(node):
    state = 'not in the cluster' if node['ready'] is None else ('Ready' if node['ready'] else 'NotReady')
    return '%d/%d devices, %d slice(s), %s' % (node['published'], node['expected'], node['slices'], state)


def report_lines(report, detail=True):
    """The health report as the lab_health role prints it: a summary, one line per node, one per problem.

    Without detail, repeated problems (and nodes in the same state) share one line with their count and
    the first few names, so 9,000 pending claims take one line and every kind of problem is still named.
    """
    summary = report['summary']
    lines = [
        'DRA lab %s: %d error(s), %d warning(s)' % ('healthy' if report['healthy'] else 'UNHEALTHY',
                                                    summary['errors'], summary['warnings']),
        'Devices (%s): %d/%d published on %d/%d nodes, %d allocated, %d free' % (
            summary['driver'], summary['devices_published'], summary['devices_expected'],
            summary['nodes_publishing'], summary['nodes_expected'], summary['devices_allocated'],
            summary['devices_free']),
        'Claims: %d total, %d pending, %d allocated (%d in use by pods)' % (
            summary['claims_total'], summary['claims_pending'], summary['claims_allocated'],
            summary['claims_reserved']),
    ]
    if report.get('shared_devices'):
        lines.append('Shared devices (consumable capacity):')
    for row in report.get('shared_devices') or []:
        use = ', '.join('%s %s used, %s free of %s' % (name, item['used'], item['free'], item['total'])
                        for name, item in sorted(row['capacity'].items()))
        lines.append('  %s: %s; %s' % (_device_label(row['driver'], row['pool'], row['device'], row['node']),
                                       plural(len(row['claims']), 'claim'), use or 'no capacity published'))
    lines.append('Nodes:' + ('' if report['nodes'] else ' none'))
    for nodes in _groups(report['nodes'], (lambda node: node['name']) if detail else _node_state):
        if len(nodes) <= AGGREGATE_AT:
            lines.extend('  %s: %s' % (node['name'], _node_state(node)) for node in nodes)
        else:
            lines.append('  %d nodes: %s (%s)' % (len(nodes), _node_state(nodes[0]),
                                                  _first_names([node['name'] for node in nodes], len(nodes))))
    lines.append('Problems:' + ('' if report['problems'] else ' none'))
    for problems in _groups(report['problems'], id if detail else _problem_kind):
        first = problems[0]
        count = sum(problem.get('count', 1) for problem in problems)
        if count <= AGGREGATE_AT and 'objects' not in first:
            lines.extend('  %s %s: %s' % (problem['severity'].upper(), problem['object'], problem['reason'])
                         for problem in problems)
            continue
        objects = first.get('objects') or [problem['object'] for problem in problems]
        lines.append('  %s %d x %s%s: %s. The first: %s' % (
            first['severity'].upper(), count, first['type'],
            ' (%s)' % first['explain_reason'] if first.get('explain_reason') else '',
            _first_names(objects, count), first['reason']))
    return lines


def summarize(report):
    """The report without per-claim detail: claims holding devices only, repeated problems as one each.

    A problem of a kind (see report_lines) that occurs more than AGGREGATE_AT times is kept once, with
    count (how many) and objects (the first SHOWN_NAMES); summary keeps every count.
    """
    problems = []
    for group in _groups(report['problems'], _problem_kind):
        if len(group) <= AGGREGATE_AT:
            problems.extend(group)
            continue
        problems.append(dict(group[0], count=len(group), objects=[p['object'] for p in group[:SHOWN_NAMES]],
                             object='%s and %d more' % (group[0]['object'], len(group) - 1)))
    return dict(report, problems=problems, claims=[claim for claim in report['claims'] if claim['state'] != 'pending'])
