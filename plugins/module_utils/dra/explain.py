# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why is a ResourceClaim pending? Answered from the published devices.

Pure functions over plain dicts as the API serves them (resource.k8s.io/v1
DeviceClasses, ResourceSlices, ResourceClaims; v1 Pods, Nodes, Namespaces,
ResourceQuotas). The Explainer indexes every input once, so explaining all
pending claims of a lab is linear in claims x devices of one node, not
quadratic in claims.

It replays what the kube-scheduler's DRA allocator (Kubernetes 1.35,
k8s.io/dynamic-resource-allocation/structured) decides for one claim against
the current state:
- DeviceClass and request selectors (CEL, via dra_cel), per request;
- ExactCount and All, firstAvailable subrequests, adminAccess;
- devices already allocated to other claims (status.allocation);
- matchAttribute and distinctAttribute constraints;
- one node for the whole claim: node-local slices, nodeSelector / allNodes
  slices, node readiness, unschedulable nodes and NoSchedule/NoExecute taints
  (tolerated only by what the consumer pod tolerates), the consumer pod's
  nodeName, nodeSelector and required node affinity;
- for a claim not created yet (no uid), the namespace's ResourceQuota.

- shared devices (allowMultipleAllocations, consumable capacity): a shared
  device is free for a request while what it asks (capacity.requests, else the
  device's requestPolicy default, else all of it; raised to the policy's
  minimum, step or next valid value: objects.share_consumed) fits beside the
  consumedCapacity of the claims that hold it;
- device taints (the device's own and those of DeviceTaintRules) with effect
  NoSchedule or NoExecute, tolerated only by the request's tolerations;
- partitionable devices: a device that consumes counters (consumesCounters) is
  free only while what it consumes fits in its pool's counter sets
  (sharedCounters) beside what the allocated devices consume, and the devices
  one claim gets must fit together; a device kept out by its counters is held
  by the holders of the devices that consume them (the card whole, or its
  other partitions).

Not modeled (listed in every answer under `not_modeled` when it matters):
two requests of one claim sharing one device,
preferred node affinity, CPU/memory fit of the pod (the scheduler's own words
tell when they keep the pod off every node: dra/diagnosis.py pod_blockers) and
CEL functions dra_cel does not evaluate.
"""

from __future__ import annotations

import datetime
import json
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel_types
from ansible_collections.dralab.workshop.plugins.module_utils.dra.explain_claim import ClaimExplanation, request_expressions
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import (
    PodIndex,
    TERMINATED_PHASES,
    build_pools,
    capacity_rows,
    device_taints,
    share_consumed,
)
from ansible_collections.dralab.workshop.plugins.module_utils.dra.placement import UNTOLERATED_EFFECTS, node_selector_matches
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import natural_key
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta, object_name
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import lease_end
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    SEAT_LABEL,
    format_age,
    format_time,
    parse_duration,
    parse_quantity,
    parse_time,
)


_UTC = datetime.timezone.utc


# Reason codes, most specific first in the order they are decided.
REASONS = (
    'allocated',               # the claim has an allocation
    'allocatable',             # the scheduler can allocate it now
    'no_such_class',           # a request names a DeviceClass that does not exist
    'invalid_selector',        # a CEL selector does not compile
    'selector_runtime_error',  # a CEL selector fails on a device (the scheduler gives up on the claim)
    'no_matching_device',      # no published device matches class + selectors
    'too_few_per_node',        # matching devices exist, but no node has as many as requested
    'pool_incomplete',         # allocationMode All while a pool is being republished
    'nodes_not_ready',         # the matching devices are only on nodes where the pod cannot run
    'all_matching_tainted',    # devices match, but every one is tainted and the request does not tolerate it
    'all_matching_in_use',     # enough devices match, but too few are free on one usable node
    'constraint_unsatisfiable',  # each request alone fits, matchAttribute cannot be met together
    'requests_do_not_fit',     # each request alone fits, not all of them on one node together
    'quota_exceeded',          # a claim not created yet would exceed the namespace's ResourceQuota
    'search_limit',            # too many combinations to decide
)


def _quantities(counters):
    """{counter: value} of a counters mapping ({name: {value: quantity}}), unparsable values left out."""
    out = {}
    for name, entry in (counters or {}).items():
        try:
            out[name] = parse_quantity((entry or {}).get('value'))
        except ValueError:
            continue
    return out


class _Device:
    __slots__ = ('key', 'driver', 'pool', 'name', 'spec', 'node', 'all_nodes', 'node_selector', 'variable', 'taints',
                 'consumes')

    def __init__(self, driver, pool, spec, slice_spec):
        self.driver, self.pool, self.name, self.spec = driver, pool, spec.get('name'), spec
        self.key = (driver, pool, self.name)
        if slice_spec.get('perDeviceNodeSelection'):
            self.node = spec.get('nodeName')
            self.all_nodes = bool(spec.get('allNodes'))
            self.node_selector = spec.get('nodeSelector')
        else:
            self.node = slice_spec.get('nodeName')
            self.all_nodes = bool(slice_spec.get('allNodes'))
            self.node_selector = slice_spec.get('nodeSelector')
        self.variable = None
        self.taints = []
        # [((driver, pool, counter set), {counter: quantity})]: what the device consumes (consumesCounters), parsed
        # once (the allocation search asks it for every candidate).
        self.consumes = [((driver, pool, item.get('counterSet')), _quantities(item.get('counters')))
                         for item in spec.get('consumesCounters') or []]

    def reachable_from(self, node_name, node_obj):
        if self.node:
            return self.node == node_name
        if self.all_nodes:
            return True
        if self.node_selector:
            return node_obj is not None and node_selector_matches(self.node_selector, node_obj)
        return False

    def label(self):
        return '%s on %s' % (self.name, self.node) if self.node else '%s in pool %s' % (self.name, self.pool)


class Explainer:
    """Indexes a cluster state once; explain(claim) answers for one claim, explain_pending() for all pending."""

    # The selectors explained are stored in the cluster: the API server checked them in its CEL environment, which
    # has device.allowMultipleAllocations only with DRAConsumableCapacity on. So the explainer's environment has it
    # always (a DeviceClass of shared GPUs selects on it).
    consumable_capacity = True

    def __init__(self, device_classes=(), slices=(), claims=(), pods=(), nodes=(), quotas=(), namespaces=(),
                 now=None, device_taint_rules=(), lease_max=None):
        self.now = parse_time(now) if now is not None else datetime.datetime.now(_UTC)
        self.lease_max = parse_duration(lease_max) if lease_max is not None else None
        self.taint_rules = list(device_taint_rules or [])
        self.classes = dict((object_name(dc), dc) for dc in device_classes or [])
        self.claims = list(claims or [])
        self.nodes = dict((object_name(node), node) for node in nodes or [])
        self.seats = {}
        for ns in namespaces or []:
            seat = (object_meta(ns).get('labels') or {}).get(SEAT_LABEL)
            if seat:
                self.seats[object_name(ns)] = seat
        self.quotas = defaultdict(list)
        for quota in quotas or []:
            self.quotas[object_meta(quota).get('namespace')].append(quota)
        self.pods = PodIndex(pods)
        self._index_devices(slices or [])
        self._index_allocations()
        self._class_cache = {}
        self._selector_cache = {}

    # -- indexes ------------------------------------------------------------

    def _index_devices(self, slices):
        pools = build_pools(slices)
        self.devices = []
        self.counter_sets = {}  # (driver, pool, counter set) -> {counter: quantity}
        self.incomplete_pools = set()
        for (driver, pool_name), pool in pools.items():
            if pool['slices_seen'] != pool['resource_slice_count'] or len(pool['slice_counts']) > 1:
                self.incomplete_pools.add((driver, pool_name))
        for rslice in slices:
            spec = rslice.get('spec') or {}
            pool_spec = spec.get('pool') or {}
            key = (spec.get('driver'), pool_spec.get('name'))
            pool = pools.get(key)
            if pool is None or int(pool_spec.get('generation') or 0) != pool['generation']:
                continue
            for device in spec.get('devices') or []:
                entry = _Device(key[0], key[1], device, spec)
                entry.taints = [t for t in device_taints(key[0], key[1], entry.name, device, self.taint_rules)
                                if t['effect'] in UNTOLERATED_EFFECTS]
                self.devices.append(entry)
            for counter_set in spec.get('sharedCounters') or []:
                self.counter_sets[key + (counter_set.get('name'),)] = _quantities(counter_set.get('counters'))
        self.devices.sort(key=lambda d: (d.node or '', d.driver or '', d.pool or '', natural_key(d.name)))
        self.device_by_key = dict((d.key, d) for d in self.devices)

    def _index_allocations(self):
        self.in_use = defaultdict(list)  # device key -> holders (dicts), admin-access allocations left out
        self.consumed = defaultdict(list)  # device key -> consumedCapacity of each holder
        for claim in self.claims:
            allocation = (claim.get('status') or {}).get('allocation') or {}
            for result in (allocation.get('devices') or {}).get('results') or []:
                if result.get('adminAccess'):
                    continue
                key = (result.get('driver'), result.get('pool'), result.get('device'))
                self.in_use[key].append(self._holder(claim, key))
                self.consumed[key].append(result.get('consumedCapacity') or {})
        # What the devices in use consume of their counter sets (once per device, however many claims share it).
        self.counters_used = defaultdict(lambda: defaultdict(int))
        self.counter_holders = defaultdict(list)
        for key, holders in self.in_use.items():
            device = self.device_by_key.get(key)
            for set_key, counters in device.consumes if device else ():
                for name, value in counters.items():
                    self.counters_used[set_key][name] += value
                self.counter_holders[set_key].extend(holders)

    def counters_fit(self, devices, beside_allocated=True):
        """Whether devices (not yet allocated) fit together in the counter sets they consume, beside what the
        allocated devices consume (beside_allocated), or in an empty lab. A counter set no slice publishes limits
        nothing here (its pool is incomplete, which is told on its own)."""
        need = defaultdict(lambda: defaultdict(int))
        for device in devices:
            if beside_allocated and device.key in self.in_use:
                continue
            for set_key, counters in device.consumes:
                for name, value in counters.items():
                    need[set_key][name] += value
        for set_key, counters in need.items():
            total = self.counter_sets.get(set_key)
            if total is None:
                continue
            used = self.counters_used.get(set_key, {}) if beside_allocated else {}
            if any(used.get(name, 0) + value > total.get(name, 0) for name, value in counters.items()):
                return False
        return True

    def counter_holders_of(self, device):
        """The holders of the devices that consume the counters this device needs (the card whole, or its other
        partitions)."""
        holders = []
        for set_key, _counters in device.consumes:
            holders.extend(self.counter_holders.get(set_key, ()))
        return holders

    def share_fits(self, device, requests):
        """Whether a share asking requests ({capacity: quantity}) fits on a shared device beside its holders."""
        for row in capacity_rows(device.spec, self.consumed.get(device.key, [])):
            entry = (device.spec.get('capacity') or {}).get(row['name']) or {}
            try:
                if share_consumed(entry, requests.get(row['name'])) > \
                        parse_quantity(entry.get('value')) - parse_quantity(row['used']):
                    return False
            except ValueError:
                return False
        return True

    def capacity_short(self, device, requests):
        """(capacity, what the device has at most) for the first capacity a request asks ({capacity: quantity}) more of
        than the device could ever give (its value, or its requestPolicy's validRange max or largest valid value), else
        None. A capacity the device does not have at all gives (capacity, None)."""
        for name in sorted(requests):
            entry = (device.spec.get('capacity') or {}).get(name)
            if entry is None:
                return name, None
            policy = entry.get('requestPolicy') or {}
            most = (policy.get('validRange') or {}).get('max') or \
                (max(policy['validValues'], key=parse_quantity) if policy.get('validValues') else None) or \
                entry.get('value')
            try:
                # What the policy's minimum, step or valid values raise the amount asked to (never less than it).
                if share_consumed(entry, requests[name]) > parse_quantity(most):
                    return name, most
            except ValueError:
                continue
        return None

    def _holder(self, claim, key):
        meta = object_meta(claim)
        ns = meta.get('namespace')
        created = parse_time(meta.get('creationTimestamp'))
        age = int((self.now - created).total_seconds()) if created else None
        device = self.device_by_key.get(key)
        seat = self.seats.get(ns)
        return {
            'device': key[2], 'driver': key[0], 'pool': key[1], 'node': device.node if device else None,
            'namespace': ns, 'seat': seat, 'claim': '%s/%s' % (ns, meta.get('name')),
            'age_seconds': age, 'age': format_age(age) if age is not None else None,
            'lease_until': format_time(lease_end(claim, self.lease_max)) if seat else None,
            'reserved_for': [r.get('name') for r in (claim.get('status') or {}).get('reservedFor') or []],
            # Its pods stuck being deleted on a node that is NotReady or gone: the claim stays reserved for them.
            'stuck': [dict(pod=name, why=why) for name, why in self.pods.reservations(claim, self.nodes)[1]
                      if why.startswith('is being deleted')] if self.nodes else [],
        }

    # -- matching -----------------------------------------------------------

    def _variable(self, device):
        if device.variable is None:
            device.variable = dra_cel.device_variable(device.spec, device.driver)
        return device.variable

    def _selector_match(self, expression, device):
        """True/False, or a CelError instance (cached per expression and device)."""
        key = (expression, device.key)
        if key not in self._selector_cache:
            try:
                self._selector_cache[key] = dra_cel.evaluate(expression, self._variable(device),
                                                             self.consumable_capacity)
            except cel_types.CelError as exc:
                self._selector_cache[key] = exc
        return self._selector_cache[key]

    def _match_all(self, expressions, devices):
        """(matching devices, first error as (expression, device, message) or None)."""
        matching = []
        for device in devices:
            ok = True
            for expression in expressions:
                result = self._selector_match(expression, device)
                if isinstance(result, cel_types.CelError):
                    return matching, (expression, device, str(result))
                if not result:
                    ok = False
                    break
            if ok:
                matching.append(device)
        return matching, None

    def class_devices(self, class_name):
        """(devices matching the DeviceClass selectors, error) for an existing class."""
        if class_name not in self._class_cache:
            dc = self.classes[class_name]
            expressions = request_expressions((dc.get('spec') or {}).get('selectors'))
            self._class_cache[class_name] = self._match_all(expressions, self.devices)
        return self._class_cache[class_name]

    # -- one claim ----------------------------------------------------------

    def explain(self, claim):
        return ClaimExplanation(self, claim).run()

    def explain_pending(self):
        """Explanations of every claim without an allocation, in namespace/name order.

        Claims of the cluster (they have a uid, so no quota check applies) that ask for the same devices
        and whose pods may run on the same nodes get the same findings: the search is done once per such
        kind of claim (9,000 pending claims from one template cost one search), and each claim's answer is
        worded from them for the claim and its own pod (its gates, its scheduler, what the scheduler said of it).
        """
        pending = [c for c in self.claims if not (c.get('status') or {}).get('allocation')]
        pending.sort(key=lambda c: (object_meta(c).get('namespace') or '', object_meta(c).get('name') or ''))
        answers, known = [], {}
        for claim in pending:
            key = self._same_answer_key(claim)
            explanation = ClaimExplanation(self, claim)
            if key is not None and key in known:
                answers.append(explanation.answer_as(known[key]))
                continue
            answers.append(explanation.run())
            if key is not None:
                known[key] = explanation
        return answers

    def _same_answer_key(self, claim):
        """What a pending claim's answer depends on besides the cluster's devices, or None (answer it alone)."""
        if not object_meta(claim).get('uid'):
            return None
        consumers = self.pods.consumers(claim)
        live = [p for p in consumers if (p.get('status') or {}).get('phase') not in TERMINATED_PHASES]
        pod = (live or consumers or [None])[0]
        spec = None if pod is None else dict((k, (pod.get('spec') or {}).get(k))
                                             for k in ('tolerations', 'nodeName', 'nodeSelector', 'affinity'))
        return json.dumps([(claim.get('spec') or {}).get('devices'), spec], sort_keys=True, default=str)


def explain_claim(claim, *, device_classes, slices, claims, pods=(), nodes=(), quotas=(), namespaces=(), now=None,
                  device_taint_rules=(), lease_max=None):
    """Why one claim is (not) allocatable right now.

    claim: a ResourceClaim dict (a claim not created yet, without metadata.uid, is also checked against the
    namespace's ResourceQuota). The other arguments are the cluster's objects as plain dicts; `claims` are all
    ResourceClaims (their allocations mark devices in use), `quotas` ResourceQuotas, `namespaces` give seats
    (label dralab.workshop/seat). now: time for ages (RFC 3339 string or aware datetime; default: now).
    device_taint_rules: DeviceTaintRules (resource.k8s.io/v1alpha3), whose taints count like the devices' own.
    lease_max: the lab's longest lease (seconds or a duration), which caps the lease end named for a seat's claim
    (seat/lease.py lease_end); None: only the claim's lease annotation counts.

    Returns a dict:
      claim         "namespace/name"; also namespace, name and seat
      allocatable   True when the scheduler could allocate the claim right now
      reason        a code of REASONS (allocated, allocatable, no_such_class, no_matching_device, ...)
      cause         why, in one sentence
      verdict, action, headline, advice, sentence, first_lease_end, first_lease_claim
                    the diagnosis (dra/diagnosis.py): never_fits, waits, ...; what to do; sentence = cause + advice,
                    the words dra_health, the board and can-has-gpu all say
      requests      per request (one row per firstAvailable subrequest): name, request, device_class,
                    allocation_mode, count (None for All), admin_access, first_available_order,
                    devices_in_class, devices_matching (class and request selectors), devices_free,
                    holders (device, driver, pool, node, namespace, seat, claim, age_seconds, age, lease_until
                    (a seat's claim), reserved_for)
      not_modeled   what the answer did not take into account (see the module docstring)
      node          for an allocatable claim, a node where it fits
      devices       for an allocatable claim, the devices it could get there: [driver, pool, device] each
    """
    return Explainer(device_classes=device_classes, slices=slices, claims=claims, pods=pods, nodes=nodes,
                     quotas=quotas, namespaces=namespaces, now=now, device_taint_rules=device_taint_rules,
                     lease_max=lease_max).explain(claim)


def explain_pending(*, device_classes, slices, claims, pods=(), nodes=(), quotas=(), namespaces=(), now=None,
                    device_taint_rules=(), lease_max=None):
    """Explanations of every pending claim (no allocation), indexing the cluster once."""
    return Explainer(device_classes=device_classes, slices=slices, claims=claims, pods=pods, nodes=nodes,
                     quotas=quotas, namespaces=namespaces, now=now, device_taint_rules=device_taint_rules,
                     lease_max=lease_max).explain_pending()
