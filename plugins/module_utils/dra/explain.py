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
- matchAttribute constraints;
- one node for the whole claim: node-local slices, nodeSelector / allNodes
  slices, node readiness, unschedulable nodes and NoSchedule/NoExecute taints
  (tolerated only by what the consumer pod tolerates), the consumer pod's
  nodeName and nodeSelector;
- for a claim not created yet (no uid), the namespace's ResourceQuota.

- shared devices (allowMultipleAllocations, consumable capacity): a shared
  device is free for a request while what it asks (capacity.requests, else the
  device's requestPolicy default, else all of it) fits beside the
  consumedCapacity of the claims that hold it;
- device taints (the device's own and those of DeviceTaintRules) with effect
  NoSchedule or NoExecute, tolerated only by the request's tolerations.

Not modeled (listed in every answer under `not_modeled` when it matters):
partitionable devices (consumesCounters), the rounding of capacity requests to
a requestPolicy's step, two requests of one claim sharing one device,
distinctAttribute constraints, node affinity, CPU/memory fit of the pod and CEL
functions dra_cel does not evaluate.
"""

from __future__ import annotations

import datetime
import json
import re
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import (
    PodIndex,
    TERMINATED_PHASES,
    build_pools,
    capacity_rows,
    device_taints,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import join_names, plural
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta, object_name
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import (
    CLAIM_COUNT_KEY,
    SEAT_LABEL,
    device_quota_key,
)
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_quantity, parse_quantity

UNTOLERATED_EFFECTS = ('NoSchedule', 'NoExecute')

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

# allocationMode All counts this many devices against quota (resourceapi.AllocationResultsMaxSize).
ALL_MODE_QUOTA_COUNT = 32
SEARCH_LIMIT = 200000
HOLDERS_IN_SENTENCE = 3

_NATURAL = re.compile(r'(\d+)')


def natural_key(text):
    return [int(part) if part.isdigit() else part for part in _NATURAL.split(text or '')]


# ---------------------------------------------------------------------------
# Node selection
# ---------------------------------------------------------------------------

def _requirement_matches(requirement, values_of):
    key, operator = requirement.get('key'), requirement.get('operator')
    values = [str(v) for v in requirement.get('values') or []]
    present, value = values_of(key)
    if operator == 'In':
        return present and value in values
    if operator == 'NotIn':
        return not present or value not in values
    if operator == 'Exists':
        return present
    if operator == 'DoesNotExist':
        return not present
    if operator in ('Gt', 'Lt') and present and values:
        try:
            left, right = int(value), int(values[0])
        except ValueError:
            return False
        return left > right if operator == 'Gt' else left < right
    return False


def node_selector_matches(selector, node):
    """Whether a v1 NodeSelector (nodeSelectorTerms, ORed) selects a Node object."""
    labels = object_meta(node).get('labels') or {}
    fields = {'metadata.name': object_name(node)}

    def label(key):
        return (key in labels, str(labels.get(key, '')))

    def field(key):
        return (key in fields, str(fields.get(key, '')))

    for term in (selector or {}).get('nodeSelectorTerms') or []:
        expressions = term.get('matchExpressions') or []
        field_reqs = term.get('matchFields') or []
        if not expressions and not field_reqs:
            continue
        if all(_requirement_matches(r, label) for r in expressions) and \
                all(_requirement_matches(r, field) for r in field_reqs):
            return True
    return False


def _tolerated(taint, tolerations):
    for toleration in tolerations or []:
        if toleration.get('effect') and toleration.get('effect') != taint.get('effect'):
            continue
        operator = toleration.get('operator') or 'Equal'
        if not toleration.get('key'):
            if operator == 'Exists':
                return True
            continue
        if toleration.get('key') != taint.get('key'):
            continue
        if operator == 'Exists' or str(toleration.get('value') or '') == str(taint.get('value') or ''):
            return True
    return False


# What the DefaultTolerationSeconds admission plugin adds to every pod that has none of its own: a claim
# whose pod does not exist yet is judged as that pod will be created.
DEFAULT_TOLERATIONS = (
    {'key': 'node.kubernetes.io/not-ready', 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': 300},
    {'key': 'node.kubernetes.io/unreachable', 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': 300},
)


def node_blocker(node, pod=None):
    """Why a pod cannot run on a node (a short phrase), or None if it can."""
    cond = next((c for c in (node.get('status') or {}).get('conditions') or [] if c.get('type') == 'Ready'), None)
    if not cond or cond.get('status') != 'True':
        return 'NotReady'
    spec = node.get('spec') or {}
    if spec.get('unschedulable'):
        return 'cordoned (unschedulable)'
    tolerations = DEFAULT_TOLERATIONS if pod is None else (pod.get('spec') or {}).get('tolerations') or []
    for taint in spec.get('taints') or []:
        if taint.get('effect') in ('NoSchedule', 'NoExecute') and not _tolerated(taint, tolerations):
            value = '=' + taint['value'] if taint.get('value') else ''
            return 'tainted %s%s:%s' % (taint.get('key'), value, taint.get('effect'))
    if pod is not None:
        pod_spec = pod.get('spec') or {}
        wanted = pod_spec.get('nodeName')
        if wanted and wanted != object_name(node):
            return 'not the pod\'s nodeName %s' % wanted
        labels = object_meta(node).get('labels') or {}
        for key, value in (pod_spec.get('nodeSelector') or {}).items():
            if str(labels.get(key)) != str(value) or key not in labels:
                return 'not selected by the pod\'s nodeSelector %s=%s' % (key, value)
    return None


# ---------------------------------------------------------------------------
# Device index
# ---------------------------------------------------------------------------

class _Device:
    __slots__ = ('key', 'driver', 'pool', 'name', 'spec', 'node', 'all_nodes', 'node_selector', 'variable', 'taints')

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

    def __init__(self, device_classes=(), slices=(), claims=(), pods=(), nodes=(), quotas=(), namespaces=(),
                 now=None, device_taint_rules=()):
        self.now = parse_time(now) if now is not None else datetime.datetime.now(_UTC)
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
        self.devices.sort(key=lambda d: (d.node or '', d.driver or '', d.pool or '', natural_key(d.name)))
        self.device_by_key = dict((d.key, d) for d in self.devices)
        notes = set()
        for device in self.devices:
            if device.spec.get('consumesCounters'):
                notes.add('partitionable devices (consumesCounters)')
        self.device_features_not_modeled = sorted(notes)

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

    def share_fits(self, device, requests):
        """Whether a share asking requests ({capacity: quantity}) fits on a shared device beside its holders."""
        for row in capacity_rows(device.spec, self.consumed.get(device.key, [])):
            entry = (device.spec.get('capacity') or {}).get(row['name']) or {}
            asked = requests.get(row['name'])
            if asked is None:
                asked = ((entry.get('requestPolicy') or {}).get('default')) or entry.get('value')
            try:
                if parse_quantity(asked) > parse_quantity(entry.get('value')) - parse_quantity(row['used']):
                    return False
            except ValueError:
                return False
        return True

    def _holder(self, claim, key):
        meta = object_meta(claim)
        ns = meta.get('namespace')
        created = parse_time(meta.get('creationTimestamp'))
        age = int((self.now - created).total_seconds()) if created else None
        device = self.device_by_key.get(key)
        return {
            'device': key[2], 'driver': key[0], 'pool': key[1], 'node': device.node if device else None,
            'namespace': ns, 'seat': self.seats.get(ns), 'claim': '%s/%s' % (ns, meta.get('name')),
            'age_seconds': age, 'age': format_age(age) if age is not None else None,
            'reserved_for': [r.get('name') for r in (claim.get('status') or {}).get('reservedFor') or []],
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
                self._selector_cache[key] = dra_cel.evaluate(expression, self._variable(device))
            except dra_cel.CelError as exc:
                self._selector_cache[key] = exc
        return self._selector_cache[key]

    def _match_all(self, expressions, devices):
        """(matching devices, first error as (expression, device, message) or None)."""
        matching = []
        for device in devices:
            ok = True
            for expression in expressions:
                result = self._selector_match(expression, device)
                if isinstance(result, dra_cel.CelError):
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
            expressions = _expressions((dc.get('spec') or {}).get('selectors'))
            self._class_cache[class_name] = self._match_all(expressions, self.devices)
        return self._class_cache[class_name]

    # -- one claim ----------------------------------------------------------

    def explain(self, claim):
        return _ClaimExplanation(self, claim).run()

    def explain_pending(self):
        """Explanations of every claim without an allocation, in namespace/name order.

        Claims of the cluster (they have a uid, so no quota check applies) that ask for the same devices
        and whose pods may run on the same nodes get the same answer: it is worked out once per such
        kind of claim (9,000 pending claims from one template cost one search), and each claim's own
        answer shares its parts.
        """
        pending = [c for c in self.claims if not (c.get('status') or {}).get('allocation')]
        pending.sort(key=lambda c: (object_meta(c).get('namespace') or '', object_meta(c).get('name') or ''))
        answers, known = [], {}
        for claim in pending:
            key = self._same_answer_key(claim)
            if key is None or key not in known:
                answer = self.explain(claim)
                if key is not None:
                    known[key] = answer
            else:
                meta = object_meta(claim)
                answer = dict(known[key], claim='%s/%s' % (meta.get('namespace'), meta.get('name')),
                              namespace=meta.get('namespace'), name=meta.get('name'),
                              seat=self.seats.get(meta.get('namespace')))
            answers.append(answer)
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


def _expressions(selectors):
    return [((s or {}).get('cel') or {}).get('expression') for s in selectors or [] if (s or {}).get('cel')]


def _alternatives(request):
    """[(name, spec)] of a request: itself for `exactly`, else its firstAvailable subrequests."""
    name = request.get('name')
    if request.get('firstAvailable'):
        return [('%s/%s' % (name, sub.get('name')), sub) for sub in request['firstAvailable']]
    return [(name, request.get('exactly') or {})]


def _noun(class_name, count=2):
    word = 'GPU' if 'gpu' in (class_name or '').lower() else 'device'
    return word if count == 1 else word + 's'


class _ClaimExplanation:
    def __init__(self, explainer, claim):
        self.x = explainer
        self.claim = claim
        meta = object_meta(claim)
        self.ns, self.name = meta.get('namespace'), meta.get('name')
        self.ref = '%s/%s' % (self.ns, self.name)
        self.spec = (claim.get('spec') or {}).get('devices') or {}
        self.requests = self.spec.get('requests') or []
        self.constraints = self.spec.get('constraints') or []
        pods = explainer.pods.consumers(claim)
        live = [p for p in pods if (p.get('status') or {}).get('phase') not in TERMINATED_PHASES]
        self.pod = (live or pods or [None])[0]
        self.not_modeled = []
        self.rows = []

    def result(self, allocatable, reason, sentence, **extra):
        out = {
            'claim': self.ref, 'namespace': self.ns, 'name': self.name, 'seat': self.x.seats.get(self.ns),
            'allocatable': allocatable, 'reason': reason, 'sentence': sentence, 'requests': self.rows,
            'not_modeled': sorted(set(self.not_modeled)),
        }
        out.update(extra)
        return out

    def run(self):
        allocation = (self.claim.get('status') or {}).get('allocation')
        if allocation:
            return self._allocated(allocation)
        # Static problems first: classes and selectors.
        for request in self.requests:
            for alt_name, alt in _alternatives(request):
                class_name = alt.get('deviceClassName')
                if class_name not in self.x.classes:
                    menu = join_names(sorted(self.x.classes)) or 'none'
                    return self.result(False, 'no_such_class',
                                       'request %s asks for DeviceClass %s, which does not exist (the classes are: '
                                       '%s).' % (alt_name, class_name, menu), device_class=class_name)
                for expression in _expressions((self.x.classes[class_name].get('spec') or {}).get('selectors')) + \
                        _expressions(alt.get('selectors')):
                    problem = dra_cel.compile_problem(expression)
                    if problem:
                        return self.result(False, 'invalid_selector', 'request %s: %s.' % (alt_name, problem))
        self._note_unmodeled()
        plans = self._plans()
        for plan in plans:
            if plan['error']:
                expression, device, message = plan['error']
                return self.result(False, 'selector_runtime_error',
                                   'request %s: selector %r fails on %s (%s); the scheduler stops allocating this '
                                   'claim at such an error.' % (plan['name'], expression, device.label(), message))
        self.rows = [self._row(plan) for plan in plans]
        quota = self._quota_problem()
        solution, steps = self._solve(plans)
        if solution is not None:
            if quota:
                return self.result(False, 'quota_exceeded', quota)
            picked = join_names(['%s on %s' % (d.name, d.node) if d.node else d.name for d in solution['devices'][:3]])
            return self.result(True, 'allocatable', 'can be allocated now (for example %s).' % picked,
                               node=solution['node'])
        if steps is None:
            return self.result(False, 'search_limit', 'too many combinations of devices to decide whether the '
                                                      'claim can be allocated; the scheduler may still find one.')
        return self._why_not(plans)

    # -- pieces -------------------------------------------------------------

    def _allocated(self, allocation):
        devices = []
        for result in (allocation.get('devices') or {}).get('results') or []:
            key = (result.get('driver'), result.get('pool'), result.get('device'))
            device = self.x.device_by_key.get(key)
            devices.append('%s on %s' % (key[2], device.node) if device and device.node else key[2])
        return self.result(False, 'allocated', 'already allocated: %s.' % (join_names(devices) or 'no devices'))

    def _note_unmodeled(self):
        for constraint in self.constraints:
            if constraint.get('distinctAttribute'):
                self.not_modeled.append('distinctAttribute constraints')
        self.not_modeled.extend(self.x.device_features_not_modeled)
        if self.pod is not None and ((self.pod.get('spec') or {}).get('affinity') or {}).get('nodeAffinity'):
            self.not_modeled.append('node affinity of the pod')

    def _plans(self):
        """Per request (and firstAvailable alternative): the devices matching class and selectors."""
        plans = []
        for index, request in enumerate(self.requests):
            for order, (alt_name, alt) in enumerate(_alternatives(request)):
                class_name = alt.get('deviceClassName')
                class_matching, error = self.x.class_devices(class_name)
                plan = {'index': index, 'request': request.get('name'), 'name': alt_name, 'order': order,
                        'alternatives': len(_alternatives(request)), 'class': class_name,
                        'mode': alt.get('allocationMode') or 'ExactCount',
                        'count': int(alt.get('count') or 1), 'admin': bool(alt.get('adminAccess')),
                        'class_matching': class_matching, 'matching': [], 'error': error,
                        'expressions': _expressions(alt.get('selectors')), 'tainted': [],
                        'capacity': dict(((alt.get('capacity') or {}).get('requests') or {}).items())}
                if error is None:
                    plan['matching'], plan['error'] = self.x._match_all(plan['expressions'], class_matching)
                    tolerations = alt.get('tolerations') or []
                    plan['tainted'] = [d for d in plan['matching']
                                       if any(not _tolerated(t, tolerations) for t in d.taints)]
                    plan['matching'] = [d for d in plan['matching'] if d not in plan['tainted']]
                plans.append(plan)
        return plans

    def _free(self, plan, device):
        if plan['admin'] or not self.x.in_use.get(device.key):
            return True
        return bool(device.spec.get('allowMultipleAllocations')) and self.x.share_fits(device, plan['capacity'])

    def _usable_nodes(self):
        """[(node name, node object or None)] where the claim's pod could run, and {node: why not} for the rest."""
        blocked = {}
        if self.x.nodes:
            usable = []
            for name in sorted(self.x.nodes, key=natural_key):
                why = node_blocker(self.x.nodes[name], self.pod)
                if why:
                    blocked[name] = why
                else:
                    usable.append((name, self.x.nodes[name]))
            return usable, blocked
        # No Node objects given: every node that publishes devices counts as usable.
        names = sorted(set(d.node for d in self.x.devices if d.node), key=natural_key)
        self.not_modeled.append('node readiness (no Node objects given)')
        return [(name, None) for name in names], blocked

    def _row(self, plan):
        free = [d for d in plan['matching'] if self._free(plan, d)]
        holders = []
        for device in plan['matching']:
            if not plan['admin']:
                holders.extend(self.x.in_use.get(device.key) or [])
        holders.sort(key=lambda h: (natural_key(h['node'] or ''), natural_key(h['device'])))
        return {
            'name': plan['name'], 'request': plan['request'], 'device_class': plan['class'],
            'allocation_mode': plan['mode'], 'count': plan['count'] if plan['mode'] == 'ExactCount' else None,
            'admin_access': plan['admin'], 'first_available_order': plan['order'] if plan['alternatives'] > 1 else None,
            'devices_in_class': len(plan['class_matching']), 'devices_matching': len(plan['matching']),
            'devices_free': len(free), 'holders': holders,
        }

    # -- the allocation search ----------------------------------------------

    def _solve(self, plans, free_only=True):
        """({'node', 'devices'}, steps) when some node can take the whole claim, else (None, steps); steps None = gave up."""
        usable, _blocked = self._usable_nodes()
        by_request = defaultdict(list)
        for plan in plans:
            by_request[plan['index']].append(plan)
        budget = [SEARCH_LIMIT]
        for node_name, node_obj in usable:
            per_plan = {}
            for plan in plans:
                per_plan[plan['name']] = [d for d in plan['matching'] if d.reachable_from(node_name, node_obj)]
            picked = self._search(by_request, 0, per_plan, [], [], free_only, budget)
            if budget[0] <= 0:
                return None, None
            if picked is not None:
                return {'node': node_name, 'devices': [d for _plan, d in picked]}, SEARCH_LIMIT - budget[0]
        return None, SEARCH_LIMIT - budget[0]

    def _search(self, by_request, index, per_plan, chosen, used, free_only, budget):
        if index >= len(self.requests):
            return list(chosen)
        for plan in by_request.get(index, ()):
            candidates = per_plan[plan['name']]
            if plan['mode'] == 'All':
                if not candidates or (plan['class'] and any(d.key[:2] in self.x.incomplete_pools for d in candidates)):
                    continue
                if free_only and not all(self._free(plan, d) for d in candidates):
                    continue
                if any(d.key in used for d in candidates if not plan['admin']):
                    continue
                picks = [(plan, d) for d in candidates]
                if not self._constraints_ok(chosen + picks):
                    continue
                found = self._search(by_request, index + 1, per_plan, chosen + picks,
                                     used + [d.key for d in candidates], free_only, budget)
                if found is not None:
                    return found
                continue
            found = self._pick(plan, candidates, 0, plan['count'], by_request, index, per_plan, chosen, used,
                               free_only, budget)
            if found is not None:
                return found
        return None

    def _pick(self, plan, candidates, start, remaining, by_request, index, per_plan, chosen, used, free_only, budget):
        if remaining == 0:
            return self._search(by_request, index + 1, per_plan, chosen, used, free_only, budget)
        for position in range(start, len(candidates)):
            budget[0] -= 1
            if budget[0] <= 0:
                return None
            device = candidates[position]
            if device.key in used or (free_only and not self._free(plan, device)):
                continue
            if len(candidates) - position < remaining:
                return None
            attempt = chosen + [(plan, device)]
            if not self._constraints_ok(attempt):
                continue
            found = self._pick(plan, candidates, position + 1, remaining - 1, by_request, index, per_plan, attempt,
                               used + [device.key], free_only, budget)
            if found is not None:
                return found
        return None

    def _constraints_ok(self, picks):
        for constraint in self.constraints:
            attribute = constraint.get('matchAttribute')
            if not attribute:
                continue
            names = constraint.get('requests') or []
            seen = None
            for plan, device in picks:
                if names and plan['request'] not in names and plan['name'] not in names:
                    continue
                value = _attribute(device, attribute)
                if value is None:
                    return False
                if seen is None:
                    seen = value
                elif value != seen:
                    return False
        return True

    # -- quota --------------------------------------------------------------

    def _quota_problem(self):
        """For a claim not created yet (no uid): the quota it would exceed, as a sentence; else None."""
        if object_meta(self.claim).get('uid') or not self.x.quotas.get(self.ns):
            return None
        wanted = defaultdict(int)
        for request in self.requests:
            per_class = defaultdict(int)
            for _alt_name, alt in _alternatives(request):
                count = ALL_MODE_QUOTA_COUNT if alt.get('allocationMode') == 'All' else int(alt.get('count') or 1)
                per_class[alt.get('deviceClassName')] = max(per_class[alt.get('deviceClassName')], count)
            for class_name, count in per_class.items():
                wanted[device_quota_key(class_name)] += count
        wanted[CLAIM_COUNT_KEY] += 1
        for quota in self.x.quotas[self.ns]:
            hard = (quota.get('status') or {}).get('hard') or (quota.get('spec') or {}).get('hard') or {}
            used = (quota.get('status') or {}).get('used') or {}
            for key, amount in sorted(wanted.items()):
                if key not in hard:
                    continue
                limit, current = _int_quantity(hard[key]), _int_quantity(used.get(key, '0'))
                if current + amount > limit:
                    what = 'claims' if key == CLAIM_COUNT_KEY else 'devices of class %s' % key.split('.deviceclass')[0]
                    return ('the quota of namespace %s allows %d %s and %d are in use, so %d more do not fit; release '
                            'a claim first.' % (self.ns, limit, what, current, amount))
        return None

    # -- why not ------------------------------------------------------------

    def _why_not(self, plans):
        usable, blocked = self._usable_nodes()
        by_request = defaultdict(list)
        for plan in plans:
            by_request[plan['index']].append(plan)
        failing = []
        for index in sorted(by_request):
            alone = self._alone(by_request[index], usable, blocked)
            if alone is not None:
                failing.append(alone)
        if failing:
            reason, sentence = failing[0]
            return self.result(False, reason, sentence)
        ever, _steps = self._solve(plans, free_only=False)
        when = ('not now: enough of them exist, but some are in use' if ever is not None
                else 'and no node has such devices even when all are free')
        constraints, self.constraints = self.constraints, []
        without, _steps = self._solve(plans)
        self.constraints = constraints
        if without is not None and any(c.get('matchAttribute') for c in constraints):
            attrs = join_names(sorted(set(c['matchAttribute'] for c in self.constraints if c.get('matchAttribute'))))
            return self.result(False, 'constraint_unsatisfiable',
                               'each request could be served alone, but the requests must get devices with the same '
                               '%s (matchAttribute) on one node, %s.' % (attrs, when))
        return self.result(False, 'requests_do_not_fit',
                           'each request could be served alone, but all of them must fit on one node together, %s.'
                           % when)

    def _alone(self, alternatives, usable, blocked):
        """(reason, sentence) when this request cannot be served even alone, else None."""
        verdicts = [self._alone_one(plan, usable, blocked) for plan in alternatives]
        if all(v is not None for v in verdicts):
            if len(verdicts) == 1:
                return verdicts[0]
            return (verdicts[-1][0], 'none of the %d alternatives of request %s can be served: %s' % (
                len(verdicts), alternatives[0]['request'],
                '; '.join('%s: %s' % (p['name'], v[1].rstrip('.')) for p, v in zip(alternatives, verdicts)) + '.'))
        return None

    def _alone_one(self, plan, usable, blocked):
        noun = _noun(plan['class'])
        want = plan['count'] if plan['mode'] == 'ExactCount' else 1
        label = 'request %s' % plan['name'] if len(self.requests) > 1 or plan['alternatives'] > 1 else 'the claim'
        if not plan['matching'] and plan['tainted']:
            return 'all_matching_tainted', self._tainted_sentence(plan, label)
        if not plan['matching']:
            return 'no_matching_device', self._no_match_sentence(plan, label)
        all_nodes = [(name, self.x.nodes.get(name)) for name in sorted(
            set(d.node for d in self.x.devices if d.node) | set(self.x.nodes), key=natural_key)]

        def per_node(nodes, free_only):
            counts = {}
            for node_name, node_obj in nodes:
                devices = [d for d in plan['matching'] if d.reachable_from(node_name, node_obj)]
                if free_only:
                    devices = [d for d in devices if self._free(plan, d)]
                counts[node_name] = len(devices)
            return counts

        anywhere = per_node(all_nodes, False)
        best = max(anywhere.values()) if anywhere else 0
        if plan['mode'] == 'ExactCount' and best < want:
            return 'too_few_per_node', (
                '%s asks for %d %s on one node, but at most %d matching %s on any node (%d match in the '
                'lab).' % (label, want, noun, best, _noun(plan['class'], best) + (' is' if best == 1 else ' are'),
                           len(plan['matching'])))
        if plan['mode'] == 'All':
            pools = sorted(set('%s/%s' % d.key[:2] for d in plan['matching'] if d.key[:2] in self.x.incomplete_pools))
            if pools:
                return 'pool_incomplete', ('%s asks for all matching %s, but pool %s is being republished; try again '
                                           'in a few seconds.' % (label, noun, join_names(pools)))
        on_usable = per_node(usable, False)
        if not on_usable or max(on_usable.values()) < want:
            where = sorted(set(d.node for d in plan['matching'] if d.node), key=natural_key)
            why = join_names(['%s is %s' % (n, blocked[n]) for n in where if n in blocked]) or \
                'no usable node can reach them'
            return 'nodes_not_ready', ('the %s matching %s are on nodes the pod cannot use: %s.' % (
                len(plan['matching']), noun, why))
        free = per_node(usable, True)
        if plan['mode'] == 'All':
            if any(free[n] == on_usable[n] and on_usable[n] > 0 for n in on_usable):
                return None
        elif max(free.values()) >= want:
            return None
        if plan['mode'] == 'ExactCount' and blocked:
            free_anywhere = per_node(all_nodes, True)
            if max(free_anywhere.values()) >= want:
                spare = [d for d in plan['matching'] if self._free(plan, d) and d.node in blocked]
                shown = ', '.join(d.label() for d in spare[:HOLDERS_IN_SENTENCE])
                if len(spare) > HOLDERS_IN_SENTENCE:
                    shown += ' ...'
                nodes = sorted(set(d.node for d in spare), key=natural_key)
                return 'nodes_not_ready', (
                    'the free matching %s (%s) are on nodes the pod cannot use: %s; the others are in use.'
                    % (noun, shown, join_names(['%s is %s' % (n, blocked[n]) for n in nodes])))
        return 'all_matching_in_use', self._in_use_sentence(plan, label, want, free, noun)

    def _in_use_sentence(self, plan, label, want, free, noun):
        holders = self._row(plan)['holders']
        shown = ['%s on %s by %s for %s' % (h['device'], h['node'] or h['pool'], h['seat'] or h['namespace'],
                                            h['age'] or 'unknown time') for h in holders[:HOLDERS_IN_SENTENCE]]
        more = len(holders) - len(shown)
        listed = ', '.join(shown) + (', and %d more' % more if more > 0 else '')
        total = len(plan['matching'])
        free_total = sum(1 for d in plan['matching'] if self._free(plan, d))
        if plan['mode'] == 'All':
            return ('%s asks for all %d matching %s, and %d of them are in use: %s.'
                    % (label, total, noun, total - free_total, listed))
        if free_total == 0:
            head = '%d %s match%s; all are in use' % (total, _noun(plan['class'], total), 'es' if total == 1 else '')
            if total == 1:
                head = '1 %s matches; it is in use' % _noun(plan['class'], 1)
            return '%s: %s.' % (head, listed)
        best_node = max(free, key=lambda n: free[n]) if free else None
        return ('%s asks for %d %s on one node; %d of the %d matching are free, but at most %d on one node (%s); in '
                'use: %s.' % (label, want, noun, free_total, total, free.get(best_node, 0), best_node, listed))

    def _tainted_sentence(self, plan, label):
        devices = plan['tainted']
        shown = ', '.join(d.label() for d in devices[:HOLDERS_IN_SENTENCE]) + (' ...' if len(devices) > 3 else '')
        taints = []
        for device in devices:
            for taint in device.taints:
                text = '%s%s:%s' % (taint['key'], '=%s' % taint['value'] if taint.get('value') else '', taint['effect'])
                text += ' (DeviceTaintRule %s)' % taint['rule'] if taint['rule'] else ''
                if text not in taints:
                    taints.append(text)
        return ('the %d %s matching %s (%s) %s tainted %s, which %s does not tolerate: ask the instructor when '
                'the taint is lifted, or add a toleration to the request.'
                % (len(devices), _noun(plan['class'], len(devices)), label, shown,
                   'is' if len(devices) == 1 else 'are', join_names(taints), label))

    def _no_match_sentence(self, plan, label):
        noun = _noun(plan['class'])
        class_devices = plan['class_matching']
        if not class_devices:
            return ('no published device belongs to DeviceClass %s (%s published in the lab).'
                    % (plan['class'], plural(len(self.x.devices), 'device')))
        zero = []
        for expression in plan['expressions']:
            matching, _error = self.x._match_all([expression], class_devices)
            if not matching:
                zero.append(expression)
        if zero:
            return 'no %s %s (%s)' % (_noun(plan['class'], 1), _describe(zero[0]), _hint(zero[0], class_devices)) + '.'
        return ('no %s matches all selectors of %s together (each matches some of the %d %s of class %s).'
                % (noun, label, len(class_devices), noun, plan['class']))


# ---------------------------------------------------------------------------
# Sentences about selectors
# ---------------------------------------------------------------------------

_CAPACITY_CMP = re.compile(
    r"^\s*device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)\.compareTo\(\s*quantity\(['\"]([^'\"]+)['\"]\)\s*\)"
    r"\s*(>=|>|<=|<|==|!=)\s*(-?\d+)\s*$")
_CAPACITY_METHOD = re.compile(
    r"^\s*(!?)\s*device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)\.(isGreaterThan|isLessThan)\(\s*quantity\(['\"]([^'\"]+)"
    r"['\"]\)\s*\)\s*$")
_LOWER_BOUND = re.compile(r'>=?|isGreaterThan')
_ATTRIBUTE_REF = re.compile(r"device\.attributes\[['\"]([^'\"]+)['\"]\]\.(\w+)")
_CAPACITY_REF = re.compile(r"device\.capacity\[['\"]([^'\"]+)['\"]\]\.(\w+)")


def _describe(expression):
    """'has memory >= 100Gi' for the common capacity comparisons, else 'matches `expression`'."""
    match = _CAPACITY_CMP.match(expression)
    if match:
        _domain, name, value, op, number = match.groups()
        number = int(number)
        ops = {(0, '>='): '>=', (0, '<='): '<=', (0, '=='): '=', (0, '>'): '>', (0, '<'): '<', (-1, '>'): '>=',
               (1, '<'): '<=', (1, '=='): '>', (-1, '=='): '<', (0, '!='): '!=', (1, '>='): '>', (-1, '<='): '<'}
        if (number, op) in ops:
            return 'has %s %s %s' % (name, ops[(number, op)], value)
    match = _CAPACITY_METHOD.match(expression)
    if match:
        negate, _domain, name, method, value = match.groups()
        op = {'isGreaterThan': ('>', '<='), 'isLessThan': ('<', '>=')}[method][1 if negate else 0]
        return 'has %s %s %s' % (name, op, value)
    return 'matches %s' % expression


def _hint(expression, devices):
    """What the devices offer for the capacities/attributes the expression reads: 'the largest has 80Gi'."""
    parts = []
    for domain, name in sorted(set(_CAPACITY_REF.findall(expression))):
        values = []
        for device in devices:
            for key, entry in (device.spec.get('capacity') or {}).items():
                if dra_cel.qualified_name(key, device.driver) == (domain, name):
                    try:
                        values.append(parse_quantity(str((entry or {}).get('value'))))
                    except ValueError:
                        pass
        if values:
            parts.append('the largest has %s, the smallest %s' % (
                format_quantity(max(values)), format_quantity(min(values)))
                if min(values) != max(values) and _LOWER_BOUND.search(expression) is None
                else 'the largest has %s' % format_quantity(max(values)))
    for domain, name in sorted(set(_ATTRIBUTE_REF.findall(expression))):
        values = set()
        for device in devices:
            value = _attribute(device, '%s/%s' % (domain, name))
            if value is not None:
                values.add(str(value[1]))
        if values:
            shown = sorted(values, key=natural_key)
            text = ', '.join(shown[:6]) + (' ...' if len(shown) > 6 else '')
            parts.append('%s offered: %s' % (name, text))
        else:
            parts.append('no device has attribute %s/%s' % (domain, name))
    if not parts:
        parts.append('%s checked' % plural(len(devices), 'device'))
    return '; '.join(parts)


def _attribute(device, qualified):
    """The plain value of a device attribute by qualified name (domain/id), or None."""
    domain, ident = dra_cel.qualified_name(qualified, device.driver)
    for key, attribute in (device.spec.get('attributes') or {}).items():
        if dra_cel.qualified_name(key, device.driver) == (domain, ident) and isinstance(attribute, dict):
            for kind in ('int', 'bool', 'string', 'version'):
                if attribute.get(kind) is not None:
                    return (kind, attribute[kind])
    return None


def _int_quantity(value):
    try:
        return int(parse_quantity(str(value)))
    except ValueError:
        return 0


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------

def explain_claim(claim, *, device_classes, slices, claims, pods=(), nodes=(), quotas=(), namespaces=(), now=None,
                  device_taint_rules=()):
    """Why one claim is (not) allocatable right now.

    claim: a ResourceClaim dict (a claim not created yet, without metadata.uid, is also checked against the
    namespace's ResourceQuota). The other arguments are the cluster's objects as plain dicts; `claims` are all
    ResourceClaims (their allocations mark devices in use), `quotas` ResourceQuotas, `namespaces` give seats
    (label dralab.workshop/seat). now: time for ages (RFC 3339 string or aware datetime; default: now).
    device_taint_rules: DeviceTaintRules (resource.k8s.io/v1alpha3), whose taints count like the devices' own.

    Returns a dict:
      claim         "namespace/name"; also namespace, name and seat
      allocatable   True when the scheduler could allocate the claim right now
      reason        a code of REASONS (allocated, allocatable, no_such_class, no_matching_device, ...)
      sentence      one sentence a participant understands
      requests      per request (one row per firstAvailable subrequest): name, request, device_class,
                    allocation_mode, count (None for All), admin_access, first_available_order,
                    devices_in_class, devices_matching (class and request selectors), devices_free,
                    holders (device, driver, pool, node, namespace, seat, claim, age_seconds, age, reserved_for)
      not_modeled   what the answer did not take into account (see the module docstring)
      node          for an allocatable claim, a node where it fits
    """
    return Explainer(device_classes=device_classes, slices=slices, claims=claims, pods=pods, nodes=nodes,
                     quotas=quotas, namespaces=namespaces, now=now,
                     device_taint_rules=device_taint_rules).explain(claim)


def explain_pending(*, device_classes, slices, claims, pods=(), nodes=(), quotas=(), namespaces=(), now=None,
                    device_taint_rules=()):
    """Explanations of every pending claim (no allocation), indexing the cluster once."""
    return Explainer(device_classes=device_classes, slices=slices, claims=claims, pods=pods, nodes=nodes,
                     quotas=quotas, namespaces=namespaces, now=now,
                     device_taint_rules=device_taint_rules).explain_pending()
