# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU waitlist: who waits for which class, in what order, who gets the next GPU, and when.

A seat in line is a holder pod that `can-has-gpu reserve` made with the scheduling gate WAITLIST_GATE and the
request it waits for in its REQUEST_ANNOTATION; its claim does not exist yet, so a place in line holds no
device, no quota and no lease. The pod's creation time (set by the API server, which a seat cannot change) is
its place. The keeper (the lease reaper, tools/can_has_gpu/reaper.py) asks keeper_plan on every pass and
carries it out: it removes the gate of each seat whose turn has come (a matching device is free for it, every
seat before it in its class has been served), and deletes the pod of a seat that left (its can-has-gpu no
longer renews RENEWED_ANNOTATION) or that let its turn pass (no claim made within the turn). The seat's
can-has-gpu, which watches its pod, makes the claim when the gate is gone, and the scheduler allocates it.

Only the keeper may remove the gate (seat/policies.py, dralab-seat-waitlist-gate). Pure: the plan is computed on
the objects as the API serves them, so unit tests call it on recorded objects.
"""

from __future__ import annotations

import json

from ansible_collections.dralab.workshop.plugins.module_utils.dra.explain import Explainer
from ansible_collections.dralab.workshop.plugins.module_utils.dra.health import ERROR
from ansible_collections.dralab.workshop.plugins.module_utils.dra.objects import allocated_devices, has_gate
from ansible_collections.dralab.workshop.plugins.module_utils import lab_settings
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import join_names, plural
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.seat.model import seat_of
from ansible_collections.dralab.workshop.plugins.module_utils.values import (
    WAITLIST_GATE, format_age, format_time, parse_duration, parse_time)

# On a pod in line: what its claim will ask for, as JSON {"deviceClassName", "count", "selectors": [CEL, ...],
# "capacity": {name: quantity} (a share of a shared GPU; optional)}.
REQUEST_ANNOTATION = 'dralab.workshop/waiting-for'
# On a pod in line: when its can-has-gpu last said it still waits (RFC 3339); renewed every RENEW_SECONDS.
RENEWED_ANNOTATION = 'dralab.workshop/waiting-renewed'
RENEW_SECONDS = 20
# A pod in line whose renewal is older than this has lost its can-has-gpu (a killed session): it leaves the line.
STALE_SECONDS = 75
# How long a seat has, once its gate is removed, to make its claim (can-has-gpu does it within a second):
# the lab's dralab_waitlist_turn, at least MIN_TURN_SECONDS.
DEFAULT_TURN_SECONDS = parse_duration(lab_settings.default('dralab_waitlist_turn'))
MIN_TURN_SECONDS = 5
# A place renewed longer ago than this is one the keeper, which drops it STALE_SECONDS after its last renewal and
# passes every 5 s, has not seen: the keeper is not running (dra_health's waitlist_not_kept).
KEEPER_SILENT_SECONDS = STALE_SECONDS + 60
NOT_KEPT = 'waitlist_not_kept'
SHOWN_SEATS = 5
# The request of the claim a pod in line will make (can-has-gpu's objects.py names it the same).
REQUEST_NAME = 'gpu'


def gated(pod):
    return has_gate(pod, WAITLIST_GATE)


def pod_claim(pod):
    """The name of the claim the pod's first resourceClaims entry names, else None."""
    refs = (pod.get('spec') or {}).get('resourceClaims') or []
    return refs[0].get('resourceClaimName') if refs else None


def waited_request(pod):
    """The request a pod in line waits for ({'deviceClassName', 'count', 'selectors'}), or None when unreadable."""
    try:
        asked = json.loads((object_meta(pod).get('annotations') or {}).get(REQUEST_ANNOTATION) or '')
    except ValueError:
        return None
    if not isinstance(asked, dict) or not isinstance(asked.get('deviceClassName'), str):
        return None
    count, selectors, capacity = asked.get('count', 1), asked.get('selectors') or [], asked.get('capacity') or {}
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return None
    if not isinstance(selectors, list) or not all(isinstance(s, str) for s in selectors):
        return None
    if not isinstance(capacity, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in capacity.items()):
        return None
    return {'deviceClassName': asked['deviceClassName'], 'count': count, 'selectors': selectors, 'capacity': capacity}


def claim_spec(request):
    """The spec of the claim a request in line makes (can-has-gpu's claim_body and the keeper's trial agree)."""
    exactly = {'deviceClassName': request['deviceClassName'], 'allocationMode': 'ExactCount',
               'count': request['count']}
    if request.get('selectors'):
        exactly['selectors'] = [{'cel': {'expression': s}} for s in request['selectors']]
    if request.get('capacity'):
        exactly['capacity'] = {'requests': dict(request['capacity'])}
    return {'devices': {'requests': [{'name': REQUEST_NAME, 'exactly': exactly}]}}


def waiting_entries(seat_namespaces, pods):
    """Every seat in line, first come first: dicts with namespace, seat, pod, claim, device_class, count, selectors,
    since (the pod's creation) and renewed (its last renewal, else its creation). A gated pod of no seat namespace,
    one being deleted, or one whose request cannot be read is in no line."""
    entries = []
    for pod in pods:
        meta = object_meta(pod)
        namespace = meta.get('namespace')
        if namespace not in seat_namespaces or meta.get('deletionTimestamp') or not gated(pod):
            continue
        request, claim = waited_request(pod), pod_claim(pod)
        if request is None or not claim:
            continue
        since = meta.get('creationTimestamp')
        renewed = parse_time((meta.get('annotations') or {}).get(RENEWED_ANNOTATION)) or parse_time(since)
        entries.append({'namespace': namespace, 'seat': seat_namespaces[namespace], 'pod': meta.get('name'),
                        'claim': claim, 'device_class': request['deviceClassName'], 'count': request['count'],
                        'selectors': request['selectors'], 'capacity': request['capacity'], 'since': since,
                        'renewed': renewed,
                        'uid': meta.get('uid')})
    entries.sort(key=lambda e: (parse_time(e['since']) or 0, e['namespace'], e['pod']))
    return entries


def trial_claim(entry, devices=None):
    """The claim an entry would make, as the explainer reads it; with devices ([(driver, pool, device)]) allocated
    to them (a turn given but not yet taken holds them in the keeper's count)."""
    claim = {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
             'metadata': {'name': entry['claim'], 'namespace': entry['namespace']},
             'spec': claim_spec({'deviceClassName': entry['device_class'], 'count': entry['count'],
                                 'selectors': entry['selectors'], 'capacity': entry.get('capacity')})}
    if devices:
        claim['metadata']['uid'] = 'turn-%s' % entry['uid']
        share = {'consumedCapacity': dict(entry['capacity'])} if entry.get('capacity') else {}
        claim['status'] = {'allocation': {'devices': {'results': [
            dict({'request': REQUEST_NAME, 'driver': d[0], 'pool': d[1], 'device': d[2]}, **share)
            for d in devices]}}}
    return claim


def _explainer(objects, claims, now, lease_max):
    return Explainer(device_classes=objects.get('device_classes') or (), slices=objects.get('slices') or (),
                     claims=claims, pods=objects.get('pods') or (), nodes=objects.get('nodes') or (),
                     quotas=objects.get('quotas') or (), namespaces=objects.get('namespaces') or (), now=now,
                     device_taint_rules=objects.get('device_taint_rules') or (), lease_max=lease_max)


def _lease_ends(answer):
    """(lease end, seat, claim) of the seat claims that hold what the answer's request could use, earliest first."""
    found = []
    for row in answer.get('requests') or []:
        for holder in row.get('holders') or []:
            end = parse_time(holder.get('lease_until'))
            if end is not None and holder.get('seat') and not holder.get('stuck'):
                found.append((end, holder['seat'], holder.get('claim')))
    return sorted(set(found))


def keeper_plan(objects, now, turns, lease_max=None, turn_seconds=DEFAULT_TURN_SECONDS, stale_seconds=STALE_SECONDS):
    """What the keeper does now, and the line as the seats are told it.

    objects: the cluster's objects as the explainer takes them (device_classes, slices, claims, pods, nodes, quotas,
    namespaces, device_taint_rules) and seat_namespaces ({namespace: seat}). turns: {(namespace, pod): {'given':
    aware datetime, 'devices': [(driver, pool, device)], 'entry': the entry given the turn}}, the turns the keeper
    gave and that are not yet taken; updated in place. Returns {'give': [entry + devices], 'drop': [entry + reason],
    'line': [entry + position + estimate]}: give = remove the gate; drop = delete the pod.
    """
    seats = objects.get('seat_namespaces') or {}
    existing = {(object_meta(c).get('namespace'), object_meta(c).get('name')): c for c in objects.get('claims') or []}
    pods = {(object_meta(p).get('namespace'), object_meta(p).get('name')): p for p in objects.get('pods') or []}
    drop, held = [], {}
    for key, turn in sorted(turns.items()):
        claim = existing.get((key[0], turn['entry']['claim']))
        pod = pods.get(key)
        late = (now - turn['given']).total_seconds() > turn_seconds
        if pod is None or object_meta(pod).get('deletionTimestamp') or (claim is not None and allocated_devices(claim)):
            del turns[key]  # taken (the scheduler has allocated the claim) or gone
            continue
        if late:
            del turns[key]
            if claim is None:
                drop.append(dict(turn['entry'], reason='did not take its turn within %ds' % turn_seconds))
            continue
        # Until the scheduler allocates the claim, the devices of the turn count as held.
        held[(key[0], turn['entry']['claim'])] = trial_claim(turn['entry'], turn['devices'])
    entries = waiting_entries(seats, objects.get('pods') or [])
    waiting = []
    for entry in entries:
        if (now - entry['renewed']).total_seconds() > stale_seconds:
            drop.append(dict(entry, reason='its can-has-gpu stopped renewing its place (last %s)'
                             % format_time(entry['renewed'])))
        elif (entry['namespace'], entry['claim']) in existing:
            drop.append(dict(entry, reason='a claim %s exists already' % entry['claim']))
        else:
            waiting.append(entry)
    give, line, positions = [], [], {}

    def lab_claims():
        return [c for key, c in existing.items() if key not in held] + list(held.values())

    explainer = _explainer(objects, lab_claims(), now, lease_max)
    for entry in waiting:
        answer = explainer.explain(trial_claim(entry))
        if answer.get('reason') == 'quota_exceeded' or any(k[0] == entry['namespace'] for k in held):
            # The seat holds what its quota allows (or its turn is open): its other places wait for it, behind
            # nobody and ahead of nobody.
            line.append(dict(entry, position=None, verdict=answer.get('verdict'), reason='seat_at_quota',
                             estimate=None, estimate_seat=None, estimate_claim=None))
            continue
        if answer.get('reason') == 'allocatable' and answer.get('devices'):
            devices = [tuple(d) for d in answer['devices']]
            give.append(dict(entry, devices=devices))
            turns[(entry['namespace'], entry['pod'])] = {'given': now, 'devices': devices, 'entry': entry}
            held[(entry['namespace'], entry['claim'])] = trial_claim(entry, devices)
            explainer = _explainer(objects, lab_claims(), now, lease_max)
            continue
        position = positions[entry['device_class']] = positions.get(entry['device_class'], 0) + 1
        ends = _lease_ends(answer)
        ahead = sum(e['count'] for e in line if e['device_class'] == entry['device_class']
                    and e['position'] is not None) + entry['count']
        estimate = ends[ahead - 1] if 0 < ahead <= len(ends) else None
        line.append(dict(entry, position=position, verdict=answer.get('verdict'), reason=answer.get('reason'),
                         estimate=format_time(estimate[0]) if estimate else None,
                         estimate_seat=estimate[1] if estimate else None,
                         estimate_claim=estimate[2] if estimate else None))
    return {'give': give, 'drop': drop, 'line': line}


def line_rows(line):
    """The line as every seat may read it (the occupancy ConfigMap): seat, namespace, class, count, position, since,
    estimate, the seat whose lease end the estimate is, and the pod (the seat's own can-has-gpu finds itself)."""
    keys = ('seat', 'namespace', 'pod', 'device_class', 'count', 'capacity', 'position', 'since', 'estimate',
            'estimate_seat')
    return [{k: e.get(k) for k in keys} for e in line]


def seat_namespaces(namespaces):
    """{namespace: seat} of the seat namespaces among Namespace objects that are not being deleted."""
    return dict((object_meta(ns).get('name'), seat_of(ns)) for ns in namespaces or []
                if seat_of(ns) and not object_meta(ns).get('deletionTimestamp'))


def lab_line(objects, now, lease_max=None, seats=None):
    """The GPU waitlist as the instructor reads it (the board, dra_health), first come first per class: seat,
    namespace, class, count, position (None: the seat holds what its quota allows; 0: its turn, a GPU is free for
    it), since, and the lease end it waits for with whose lease it is; keeper_plan's line, with no turn open.
    objects: as keeper_plan takes them; seats: {namespace: seat} (default: from objects['namespaces'])."""
    seats = seat_namespaces(objects.get('namespaces')) if seats is None else seats
    plan = keeper_plan(dict(objects, seat_namespaces=seats), now, {}, lease_max)
    keys = ('seat', 'namespace', 'device_class', 'count', 'since')
    rows = [dict(((k, e[k]) for k in keys), position=0, estimate=None, estimate_seat=None) for e in plan['give']]
    rows += [dict(((k, e[k]) for k in keys), position=e['position'], estimate=e['estimate'],
                  estimate_seat=e['estimate_seat']) for e in plan['line']]
    rows.sort(key=lambda r: (r['device_class'], r['position'] is None, r['position'] or 0, r['since'] or ''))
    return rows


def line_problems(objects, now, seats=None):
    """dra_health's problem when places in line outlive what the keeper allows them (KEEPER_SILENT_SECONDS after
    their last renewal): the keeper is not running, so nobody in line gets a turn. [] or one error."""
    seats = seat_namespaces(objects.get('namespaces')) if seats is None else seats
    silent = [e for e in waiting_entries(seats, objects.get('pods') or [])
              if (now - e['renewed']).total_seconds() > KEEPER_SILENT_SECONDS]
    if not silent:
        return []
    oldest = max((now - e['renewed']).total_seconds() for e in silent)
    names = sorted(set(e['seat'] for e in silent))
    shown = names[:SHOWN_SEATS] + (['%d more' % (len(names) - SHOWN_SEATS)] if len(names) > SHOWN_SEATS else [])
    reason = ('%s in the GPU waitlist (%s) %s still there %s after %s last renewal, but the keeper drops a place '
              '%ds after it: the keeper (the lease reaper) is not running, so no seat in line gets a turn. Run '
              '`sudo systemctl status dralab-lease-reaper` and `journalctl -u dralab-lease-reaper` on the first '
              'control-plane node, and `sudo systemctl restart dralab-lease-reaper` there'
              % (plural(len(silent), 'place'), join_names(shown),
                 'is' if len(silent) == 1 else 'are', format_age(oldest), 'its' if len(silent) == 1 else 'their',
                 STALE_SECONDS))
    return [{'type': NOT_KEPT, 'severity': ERROR, 'object': 'GPU waitlist', 'reason': reason,
             'pods': ['%s/%s' % (e['namespace'], e['pod']) for e in silent]}]
