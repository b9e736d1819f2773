# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One pending claim explained: the search the kube-scheduler's DRA allocator makes for it (requests,
firstAvailable subrequests, matchAttribute constraints, one node for the whole claim, the namespace's quota),
replayed over the devices the Explainer (dra/explain.py) indexed, and its cause in one sentence; dra/diagnosis.py
turns that into the verdict, the action and the sentence everybody is told."""

from __future__ import annotations

from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.dra import cel as dra_cel
from ansible_collections.dralab.workshop.plugins.module_utils.dra.diagnosis import (
    ADVICE,
    HOLDERS_IN_SENTENCE,
    REASON_VERDICTS,
    diagnose,
    holders_text,
    other_scheduler,
    pod_blockers,
    scheduler_message,
)
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import TERMINATED_PHASES
from ansible_collections.dralab.workshop.plugins.module_utils.dra.placement import ByNode, node_blocker, tolerated
from ansible_collections.dralab.workshop.plugins.module_utils.dra.selectors import describe_selector, device_attribute, int_quantity, selector_hint
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import join_names, natural_key, plural
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import CLAIM_COUNT_KEY, device_quota_key


# allocationMode All counts this many devices against quota (resourceapi.AllocationResultsMaxSize).
ALL_MODE_QUOTA_COUNT = 32


SEARCH_LIMIT = 200000


# Why a node is closed to the pod because of the pod's own spec (dra/placement.py node_blocker): the pod can change it.
POD_BLOCKERS = ("not the pod's nodeName", "not selected by the pod's nodeSelector", "not selected by the pod's node affinity")


def _finding(reason, cause, verdict=None, advice=None, holders=()):
    """Why a request (or the claim) cannot be served: the reason code, its cause, and what dra/diagnosis.py needs
    beyond the reason code (a verdict or an advice of its own, the holders of the devices it waits for)."""
    return {'reason': reason, 'cause': cause, 'verdict': verdict, 'advice': advice, 'holders': list(holders)}


def request_expressions(selectors):
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


class ClaimExplanation:
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
        self._usable = None
        self.outcome = None

    def result(self, allocatable, reason, cause, finding=None, **extra):
        """The answer: the reason code and its cause, with the diagnosis (verdict, action, advice, sentence)."""
        self.outcome = (allocatable, reason, cause, finding, extra)
        finding = finding or {}
        out = {
            'claim': self.ref, 'namespace': self.ns, 'name': self.name, 'seat': self.x.seats.get(self.ns),
            'allocatable': allocatable, 'reason': reason, 'requests': self.rows,
            'not_modeled': sorted(set(self.not_modeled)),
        }
        gates = [g.get('name') for g in ((self.pod or {}).get('spec') or {}).get('schedulingGates') or []]
        pod_ref = '%s/%s' % (self.ns, object_meta(self.pod).get('name'))
        gated = (pod_ref, gates) if gates else None
        scheduler = (pod_ref, other_scheduler(self.pod)) if other_scheduler(self.pod) else None
        blockers = pod_blockers(scheduler_message(self.pod))
        out.update(diagnose(reason, cause, advice=finding.get('advice'), verdict=finding.get('verdict'),
                            holders=finding.get('holders') or (), has_pod=self.pod is not None, now=self.x.now,
                            gated=gated, scheduler=scheduler, unschedulable=(pod_ref, blockers) if blockers else None))
        out.update(extra)
        return out

    def answer_as(self, other):
        """This claim's answer from the search of other, a claim that asks for the same devices and whose pod may
        go to the same nodes: its findings, in the words of this claim and its own pod (gates, scheduler)."""
        self.rows, self.not_modeled = other.rows, list(other.not_modeled)
        allocatable, reason, cause, finding, extra = other.outcome
        return self.result(allocatable, reason, cause, finding, **extra)

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
                for expression in request_expressions((self.x.classes[class_name].get('spec') or {}).get('selectors')) + \
                        request_expressions(alt.get('selectors')):
                    problem = dra_cel.compile_problem(expression, self.x.consumable_capacity)
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
                               node=solution['node'], devices=[list(d.key) for d in solution['devices']])
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
        if self.pod is not None and (((self.pod.get('spec') or {}).get('affinity') or {}).get('nodeAffinity') or {}).get(
                'preferredDuringSchedulingIgnoredDuringExecution'):
            self.not_modeled.append('preferred node affinity of the pod')

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
                        'expressions': request_expressions(alt.get('selectors')), 'tainted': [], 'too_small': [],
                        'capacity': dict(((alt.get('capacity') or {}).get('requests') or {}).items())}
                if error is None:
                    plan['matching'], plan['error'] = self.x._match_all(plan['expressions'], class_matching)
                    tolerations = alt.get('tolerations') or []
                    plan['tainted'] = [d for d in plan['matching']
                                       if any(not tolerated(t, tolerations) for t in d.taints)]
                    plan['matching'] = [d for d in plan['matching'] if d not in plan['tainted']]
                    if plan['capacity'] and not plan['admin']:
                        # A share larger than a device could ever give: the scheduler never picks that device.
                        plan['too_small'] = [d for d in plan['matching'] if self.x.capacity_short(d, plan['capacity'])]
                        plan['matching'] = [d for d in plan['matching'] if d not in plan['too_small']]
                plans.append(plan)
        return plans

    def _free(self, plan, device):
        if plan['admin']:
            return True
        if not self.x.in_use.get(device.key):
            return self.x.counters_fit([device])
        return bool(device.spec.get('allowMultipleAllocations')) and self.x.share_fits(device, plan['capacity'])

    def _usable_nodes(self):
        """[(node name, node object or None)] where the claim's pod could run, and {node: why not} for the rest
        (worked out once per claim)."""
        if self._usable is None:
            self._usable = self._find_usable_nodes()
        return self._usable

    def _find_usable_nodes(self):
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
        holders, seen = [], set()
        free_keys = set(d.key for d in free)
        for device in plan['matching']:
            if plan['admin']:
                continue
            # A device kept out by its counters alone (not in use itself) is held by the holders of its card.
            blocking = self.x.in_use.get(device.key) or []
            if not blocking and device.key not in free_keys:
                blocking = self.x.counter_holders_of(device)
            for holder in blocking:
                if (holder['claim'], holder['pool'], holder['device']) not in seen:
                    seen.add((holder['claim'], holder['pool'], holder['device']))
                    holders.append(holder)
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
        grouped = dict((plan['name'], ByNode(plan['matching'])) for plan in plans)
        for node_name, node_obj in usable:
            per_plan = dict((name, devices.reachable_from(node_name, node_obj)) for name, devices in grouped.items())
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
                if not self._constraints_ok(chosen + picks) or not self._counters_ok(chosen + picks, free_only):
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
            if not self._constraints_ok(attempt) or not self._counters_ok(attempt, free_only):
                continue
            found = self._pick(plan, candidates, position + 1, remaining - 1, by_request, index, per_plan, attempt,
                               used + [device.key], free_only, budget)
            if found is not None:
                return found
        return None

    def _counters_ok(self, picks, free_only):
        """The devices one claim gets fit together in their counter sets (beside the allocated ones, when free_only)."""
        return self.x.counters_fit([device for plan, device in picks if not plan['admin']], beside_allocated=free_only)

    def _constraints_ok(self, picks):
        """matchAttribute: every device of the named requests has the attribute, all with one value; distinctAttribute:
        every one has it, each with a value of its own."""
        for constraint in self.constraints:
            match, distinct = constraint.get('matchAttribute'), constraint.get('distinctAttribute')
            if not match and not distinct:
                continue
            names = constraint.get('requests') or []
            values = []
            for plan, device in picks:
                if names and plan['request'] not in names and plan['name'] not in names:
                    continue
                value = device_attribute(device, match or distinct)
                if value is None or (match and values and value != values[0]) or (distinct and value in values):
                    return False
                values.append(value)
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
                limit, current = int_quantity(hard[key]), int_quantity(used.get(key, '0'))
                if current + amount > limit:
                    what = 'claims' if key == CLAIM_COUNT_KEY else 'devices of class %s' % key.split('.deviceclass')[0]
                    return ('the quota of namespace %s allows %d %s and %d are in use, so %d more do not fit.'
                            % (self.ns, limit, what, current, amount))
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
        # Whether the claim fits once every device is free: what tells one that waits from one that never fits.
        ever, steps = self._solve(plans, free_only=False)
        if failing:
            # A request that never fits makes the claim never fit, whatever the others wait for.
            order = ('never_fits', 'over_quota', 'blocked', 'waits')
            found = min(failing, key=lambda f: order.index(_verdict(f)) if _verdict(f) in order else len(order))
            if _verdict(found) != 'waits' or ever is not None or steps is None:
                return self.result(False, found['reason'], found['cause'], found)
            # Each request waits for devices in use, but together they would not fit even once all are free.
        elif steps is None:
            return self.result(False, 'search_limit', 'too many combinations of devices to decide whether the '
                                                      'claim can be allocated; the scheduler may still find one.')
        holders = []
        if ever is not None:
            seen = set()
            for row in self.rows:
                for holder in row['holders']:
                    if (holder['claim'], holder['device'], holder['pool']) not in seen:
                        seen.add((holder['claim'], holder['device'], holder['pool']))
                        holders.append(holder)
        when = ('not now: enough of them exist, but some are in use: %s' % holders_text(holders) if ever is not None
                else 'and no node has such devices even when all are free')
        verdict = 'waits' if ever is not None else 'never_fits'
        constraints, self.constraints = self.constraints, []
        # Would the requests fit without the constraints: now when they fit once free, else once free.
        without, _steps = self._solve(plans, free_only=ever is not None)
        self.constraints = constraints
        if without is not None and any(c.get('matchAttribute') or c.get('distinctAttribute') for c in constraints):
            rules, used = [], []
            for kind, words in (('matchAttribute', 'the same %s'), ('distinctAttribute', 'a different %s each')):
                attrs = sorted(set(c[kind] for c in self.constraints if c.get(kind)))
                if attrs:
                    rules.append('%s (%s)' % (words % join_names(attrs), kind))
                    used.append(kind)
            kinds = ' or '.join(used)
            # Only distinct values are met by fewer devices; the same value by other selectors (ADVICE's default).
            advice = None
            if verdict == 'never_fits' and 'distinctAttribute' in kinds:
                advice = 'Change the request: drop the %s constraint, or ask for fewer devices in one claim.' % kinds
            return self.result(False, 'constraint_unsatisfiable',
                               'each request could be served alone, but the requests must get devices with %s on one '
                               'node, %s.' % (' and '.join(rules), when),
                               _finding('constraint_unsatisfiable', '', verdict, advice=advice, holders=holders))
        return self.result(False, 'requests_do_not_fit',
                           'each request could be served alone, but all of them must fit on one node together, %s.'
                           % when, _finding('requests_do_not_fit', '', verdict, holders=holders))

    def _alone(self, alternatives, usable, blocked):
        """A finding (_finding) when this request cannot be served even alone, else None."""
        verdicts = [self._alone_one(plan, usable, blocked) for plan in alternatives]
        if all(v is not None for v in verdicts):
            if len(verdicts) == 1:
                return verdicts[0]
            # The request waits when one of its alternatives waits (for devices in use, or the instructor).
            kinds = [_verdict(v) for v in verdicts]
            verdict = next((k for k in ('waits', 'blocked', 'over_quota') if k in kinds), 'never_fits')
            deciding = verdicts[kinds.index(verdict)] if verdict in kinds else verdicts[-1]
            advice = None if verdict == 'waits' else deciding['advice'] or ADVICE.get(deciding['reason'])
            return _finding(verdicts[-1]['reason'], 'none of the %d alternatives of request %s can be served: %s' % (
                len(verdicts), alternatives[0]['request'],
                '; '.join('%s: %s' % (p['name'], v['cause'].rstrip('.')) for p, v in zip(alternatives, verdicts)) + '.'),
                verdict, advice, holders=[h for v in verdicts if _verdict(v) == 'waits' for h in v['holders']])
        return None

    def _alone_one(self, plan, usable, blocked):
        noun = _noun(plan['class'])
        want = plan['count'] if plan['mode'] == 'ExactCount' else 1
        label = 'request %s' % plan['name'] if len(self.requests) > 1 or plan['alternatives'] > 1 else 'the claim'
        if not plan['matching'] and plan['tainted']:
            return _finding('all_matching_tainted', self._tainted_sentence(plan, label))
        if not plan['matching'] and plan['too_small']:
            return self._too_small(plan, label)
        if not plan['matching']:
            return self._no_match(plan, label)
        all_nodes = [(name, self.x.nodes.get(name)) for name in sorted(
            set(d.node for d in self.x.devices if d.node) | set(self.x.nodes), key=natural_key)]

        grouped = ByNode(plan['matching'])

        def per_node(nodes, free_only):
            counts = {}
            for node_name, node_obj in nodes:
                devices = grouped.reachable_from(node_name, node_obj)
                if free_only:
                    devices = [d for d in devices if self._free(plan, d)]
                counts[node_name] = len(devices)
            return counts

        anywhere = per_node(all_nodes, False)
        best = max(anywhere.values()) if anywhere else 0
        if plan['mode'] == 'ExactCount' and best < want:
            return _finding('too_few_per_node', (
                '%s asks for %d %s on one node, but at most %d matching %s on any node (%d match in the '
                'lab).' % (label, want, noun, best, _noun(plan['class'], best) + (' is' if best == 1 else ' are'),
                           len(plan['matching']))),
                advice='Change the request: ask for at most %d %s in one claim (the most one node has).'
                % (best, _noun(plan['class'], best)) if best else None)
        if plan['mode'] == 'All':
            pools = sorted(set('%s/%s' % d.key[:2] for d in plan['matching'] if d.key[:2] in self.x.incomplete_pools))
            if pools:
                return _finding('pool_incomplete', '%s asks for all matching %s, but pool %s is being republished.'
                                % (label, noun, join_names(pools)))
        on_usable = per_node(usable, False)
        if not on_usable or max(on_usable.values()) < want:
            where = sorted(set(d.node for d in plan['matching'] if d.node), key=natural_key)
            reasons = [blocked[n] for n in where if n in blocked]
            why = join_names(['%s is %s' % (n, blocked[n]) for n in where if n in blocked]) or \
                'no usable node can reach them'
            count = len(plan['matching'])
            cause = 'the %s matching %s %s on nodes the pod cannot use: %s.' % (
                count, _noun(plan['class'], count), 'is' if count == 1 else 'are', why)
            if reasons and all(r.startswith(POD_BLOCKERS) for r in reasons):
                return _finding('nodes_not_ready', cause, 'never_fits', 'Change the pod: its nodeName, '
                                'nodeSelector or node affinity keeps it off the nodes that have these devices.')
            return _finding('nodes_not_ready', cause)
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
                return _finding('nodes_not_ready', (
                    'the free matching %s (%s) are on nodes the pod cannot use: %s; the others are in use.'
                    % (noun, shown, join_names(['%s is %s' % (n, blocked[n]) for n in nodes]))))
        # A holder on a node the pod cannot use now: its release would not let the pod start there. The holders
        # whose release helps are named first.
        holders = sorted((dict(h, node_blocked=blocked[h['node']]) if h.get('node') in blocked else h
                          for h in self._row(plan)['holders']), key=lambda h: bool(h.get('node_blocked')))
        return _finding('all_matching_in_use', self._in_use_sentence(plan, label, want, free, noun, holders),
                        holders=holders)

    def _in_use_sentence(self, plan, label, want, free, noun, holders):
        listed = holders_text(holders)
        total = len(plan['matching'])
        free_total = sum(1 for d in plan['matching'] if self._free(plan, d))
        if plan['mode'] == 'All':
            return ('%s asks for all %d matching %s, and %d of them are in use: %s.'
                    % (label, total, noun, total - free_total, listed))
        if free_total == 0:
            # Partitions (or a card whole) kept out by the counters of a card that is in use, not in use themselves.
            through_card = sum(1 for d in plan['matching'] if not self.x.in_use.get(d.key))
            state = ('their cards are all in use' if through_card == total else
                     'all are in use, themselves or through their card' if through_card else 'all are in use')
            head = '%d %s match%s; %s' % (total, _noun(plan['class'], total), 'es' if total == 1 else '', state)
            if total == 1:
                state = 'its card is in use' if through_card else 'it is in use'
                head = '1 %s matches; %s' % (_noun(plan['class'], 1), state)
            return '%s: %s.' % (head, listed)
        best_node = max(free, key=lambda n: free[n]) if free else None
        return ('%s asks for %d %s on one node; %d of the %d matching are free, but at most %d on one node (%s); in '
                'use: %s.' % (label, want, noun, free_total, total, free.get(best_node, 0), best_node, listed))

    def _tainted_sentence(self, plan, label):
        devices = plan['tainted']
        shown = ', '.join(d.label() for d in devices[:HOLDERS_IN_SENTENCE]) + (' ...' if len(devices) > HOLDERS_IN_SENTENCE else '')
        taints = []
        for device in devices:
            for taint in device.taints:
                text = '%s%s:%s' % (taint['key'], '=%s' % taint['value'] if taint.get('value') else '', taint['effect'])
                text += ' (DeviceTaintRule %s)' % taint['rule'] if taint['rule'] else ''
                if text not in taints:
                    taints.append(text)
        return ('the %d %s matching %s (%s) %s tainted %s, which %s does not tolerate.'
                % (len(devices), _noun(plan['class'], len(devices)), label, shown,
                   'is' if len(devices) == 1 else 'are', join_names(taints), label))

    def _too_small(self, plan, label):
        shorts = [self.x.capacity_short(d, plan['capacity']) for d in plan['too_small']]
        name = shorts[0][0]
        offered = [most for short_name, most in shorts if short_name == name and most is not None]
        noun = _noun(plan['class'], 1)
        if not offered:
            return _finding('no_matching_device', 'no %s of class %s has a capacity %s, which %s asks for.'
                            % (noun, plan['class'], name, label),
                            advice='Change the request: ask only for the capacities the devices have.')
        largest = max(offered, key=int_quantity)
        return _finding('no_matching_device', 'no %s has room for what %s asks: %s %s (the largest has %s).'
                        % (noun, label, name, plan['capacity'][name], largest),
                        advice='Change the request: ask for at most %s of %s.' % (largest, name))

    def _no_match(self, plan, label):
        noun = _noun(plan['class'])
        class_devices = plan['class_matching']
        if not class_devices:
            cause = 'no published device belongs to DeviceClass %s (%s published in the lab).' % (
                plan['class'], plural(len(self.x.devices), 'device'))
            if not self.x.devices:  # nothing is published: the lab's driver, not the request
                return _finding('no_matching_device', cause, 'blocked', 'Ask the instructor: the lab publishes no '
                                'device (is the DRA driver running?).')
            return _finding('no_matching_device', cause, advice='Change the request: name a DeviceClass whose devices '
                            'are published (kubectl get deviceclasses), or ask the instructor why %s has none.'
                            % plan['class'])
        zero = []
        for expression in plan['expressions']:
            matching, _error = self.x._match_all([expression], class_devices)
            if not matching:
                zero.append(expression)
        if zero:
            return _finding('no_matching_device', 'no %s %s (%s).' % (
                _noun(plan['class'], 1), describe_selector(zero[0]), selector_hint(zero[0], class_devices)),
                advice='Change the request: ask for no more than the devices offer.')
        return _finding('no_matching_device', 'no %s matches all selectors of %s together (each matches some of the '
                        '%d %s of class %s).' % (noun, label, len(class_devices), noun, plan['class']),
                        advice='Change the request: drop or relax one of its selectors.')


def _verdict(finding):
    """The verdict a finding leads to (dra/diagnosis.py): its own, else its reason code's."""
    return finding['verdict'] or REASON_VERDICTS.get(finding['reason'])
