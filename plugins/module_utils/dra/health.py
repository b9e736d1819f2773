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
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import scheduler_message
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import (
    DEFAULT_DRIVER,
    ObjectIndex,
    PLUGIN_DRIVER_ENV,
    POD_CLAIM_NAME_ANNOTATION,
    TERMINATED_PHASES,
    allocated_devices,
    capacity_rows,
    claim_state,
    device_status,
    device_taints,
    node_ready,
    node_selected,
    physical_cards,
    taint_text,
)
from ansible_collections.dralab.workshop.plugins.module_utils.dra.pod_claims import pods_waiting
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import device_label, join_names, plural
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import condition, object_meta, object_name, object_namespace
from ansible_collections.dralab.workshop.plugins.module_utils.values import SEAT_LABEL, format_age, parse_duration, parse_time


# Problems of a node that restarting its kubelet plugin pod may mend (it publishes its devices again).
PLUGIN_MENDS = ('node_missing_slice', 'device_count_short', 'driver_plugin_not_ready')


# A kubelet plugin container that ended within this many seconds is reported as a recent restart.
PLUGIN_RESTART_WINDOW = 600


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
    'pod_claim_missing',
    'pod_claim_refused',
    'pod_claim_unreachable',
)


def _problem(kind, severity, obj, reason, **extra):
    problem = {'type': kind, 'severity': severity, 'object': obj, 'reason': reason}
    problem.update(extra)
    return problem


def _check_nodes(index, driver, per_node, expected_nodes, node_selector, problems):
    if expected_nodes:
        expected = list(dict.fromkeys(expected_nodes))
    else:
        expected = sorted(name for name, node in index.nodes.items() if node_selected(node, node_selector))
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
        ready = node_ready(node)
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
    newest = max(ended, key=lambda t: parse_time(t['finishedAt']) or datetime.datetime.min.replace(tzinfo=datetime.timezone.utc),
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
        if node_name and node_selected(pod, plugin_labels) and plugin_driver(pod) in (None, driver):
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
        message = scheduler_message(pod)
        if message:
            return pod, message
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
        live_pods, missing = index.pods.reservations(claim, index.nodes)
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
                gone, until = ' '.join(p for p, _why in missing), 'the claim is deleted'
                if all(why.startswith('has terminated') for _p, why in missing):
                    fix = 'kubectl -n %s delete pod %s; if the reservation stays, kubectl -n %s delete resourceclaim %s' % (
                        ns, gone, ns, name)
                elif all(why.startswith('is being deleted') for _p, why in missing):  # objects.stuck_deleting
                    fix, until = 'kubectl -n %s delete pod %s --force --grace-period=0' % (ns, gone), 'the pod is gone'
                problems.append(_problem(
                    'claim_reserved_for_missing_pod', ERROR, obj,
                    'claim %s is reserved for %s; the %s stays held until %s (%s).' % (ref, what, held, until, fix),
                    namespace=ns, name=name, pods=[entry[0] for entry in missing]))

        pending_reason = scheduler_said = None
        if state == 'allocated' and age is not None and age > stale_after:
            problems.append(_problem(
                'claim_allocated_unused', ERROR, obj,
                'claim %s was created %s ago and holds the %s, but no pod uses it (empty reservedFor), so nobody '
                'else can get that device; if seat %s no longer needs it, delete it (kubectl -n %s delete '
                'resourceclaim %s).' % (ref, format_age(age), held, seat or ns, ns, name),
                namespace=ns, name=name, age_seconds=age))
        elif state == 'pending':
            pod, message = _pending_reason(index, claim)
            scheduler_said = message.strip() if message else None
            missing_classes = [c for c in _requested_classes(claim) if c not in index.device_classes]
            class_text = ''
            if missing_classes:
                class_text = (' It requests DeviceClass %s, which does not exist (kubectl get deviceclasses lists '
                              'the menu).' % join_names(missing_classes))
            # The scheduler's message is evidence (scheduler_said), never part of the sentence: its words
            # ("cannot allocate all claims") are the same for a claim that waits and for one that never fits.
            if pod is None:
                pending_reason, who = 'no pod uses this claim yet', 'no pod uses it'
                why = 'the scheduler has not tried to allocate a device.'
            else:
                pod_ref = '%s/%s' % (ns, object_name(pod))
                pending_reason = message or 'pod %s is waiting for the scheduler' % pod_ref
                who = 'pod %s %s' % (pod_ref, 'cannot be scheduled' if message else 'waits for the scheduler')
                why = ('the devices were not explained; see what the scheduler said.' if message
                       else 'the scheduler has not reported a failure yet.')
            if missing_classes and pod is not None and not message:
                pending_reason = 'DeviceClass %s does not exist' % join_names(missing_classes)
            explained = (explanations or {}).get(ref)
            extra = {'scheduler_said': scheduler_said}
            if explained:
                reason = 'claim %s is pending (%s) and %s: %s' % (ref, who, explained['headline'],
                                                                  explained['sentence'])
                extra.update(explain_reason=explained['reason'], explain_sentence=explained['sentence'],
                             allocatable_now=explained['allocatable'], verdict=explained['verdict'],
                             action=explained['action'])
            else:
                reason = 'claim %s is pending (%s): %s%s' % (ref, who, why, class_text)
            problems.append(_problem('claim_pending', WARNING, obj, reason, namespace=ns, name=name, **extra))

        explained = (explanations or {}).get(ref) if state == 'pending' else None
        rows.append({
            'namespace': ns, 'name': name, 'seat': seat, 'state': state, 'devices': devices,
            'reserved_for': reserved_names, 'holder_pods_alive': alive, 'owner_template': owner_template,
            'created': created, 'age_seconds': age, 'pending_reason': pending_reason,
            'explain_reason': explained['reason'] if explained else None,
            'explain_sentence': explained['sentence'] if explained else None,
            'verdict': explained['verdict'] if explained else None,
            'headline': explained['headline'] if explained else None,
            'scheduler_said': scheduler_said,
            'device_status': device_status(claim),
        })
    return rows, allocations


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
                'kube-scheduler logs.' % (device_label(driver, pool, name, node), join_names(holders),
                                          '; '.join(over), holders[-1].split('/', 1)[0], holders[-1].split('/', 1)[1]),
                driver=driver, pool=pool, device=name, claims=holders))
    return rows


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
                % (device_label(pool['driver'], pool['pool'], device_name, pool['node']), text,
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
            'kube-scheduler logs.' % (device_label(driver, pool, name, node), len(holders), join_names(holders),
                                      ns, claim_name),
            driver=driver, pool=pool, device=name, claims=holders))


def analyze(device_classes=None, slices=None, claims=None, pods=None, nodes=None, namespaces=None, events=None,
            driver=DEFAULT_DRIVER, expected_devices_per_node=8, expected_nodes=None, node_selector=None,
            stale_claim_age='1h', now=None, explanations=None, plugin_labels=None, device_taint_rules=None,
            claim_templates=None):
    """Judge the DRA state of a cluster; return the health report dict.

    expected_devices_per_node counts physical cards (a partitioned card is one).
    plugin_labels: the labels of the driver's kubelet plugin pods (e.g. EXAMPLE_DRIVER_PLUGIN_LABELS); given,
    every expected node must run a ready one (an error otherwise; a restart in the last 10 minutes warns).
    device_taint_rules: the DeviceTaintRules (resource.k8s.io/v1alpha3), when the API serves them.

    now: aware datetime (default: current UTC time) against which claim ages are measured.
    explanations: {"namespace/name": dra_explain result} for pending claims; each claim_pending problem then
    says the explainer's diagnosis (dra/diagnosis.py), the scheduler's text kept apart in scheduler_said.
    claim_templates: the ResourceClaimTemplates (None: not read, so pods are not judged on them); a pod that waits
    for a claim or template that does not exist is a pod_claim_missing warning, one whose claim from a template the
    API refused to make pod_claim_refused (with the refusal of the controller's event), one whose claim is
    allocated on nodes it cannot go to pod_claim_unreachable (dra/pod_claims.py).
    """
    now = parse_time(now) if now is not None else datetime.datetime.now(datetime.timezone.utc)
    stale_after = parse_duration(stale_claim_age)
    index = ObjectIndex(device_classes, slices, claims, pods, nodes, namespaces, events)

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
    for found in pods_waiting(pods, claims, claim_templates, nodes, events, now):
        extra = {'pod_claim_missing': dict(missing_kind=found.get('kind'), missing=found.get('missing'),
                                           elsewhere=found.get('elsewhere')),
                 'pod_claim_refused': dict(template=found.get('template'), refusal=found.get('refusal')),
                 'pod_claim_unreachable': dict(claim=found.get('claim'), nodes=found.get('nodes'),
                                               claim_holders=found.get('holders'))}[found['problem']]
        problems.append(_problem(found['problem'], WARNING, 'Pod %s/%s' % (found['namespace'], found['pod']),
                                 found['sentence'], namespace=found['namespace'], name=found['pod'],
                                 verdict=found['verdict'], action=found['action'], **extra))

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
