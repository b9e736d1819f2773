# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The instructor's GPU board as data: device -> claim -> seat (-> person), what waits and why.

A pure function over the objects dra_collect reads (plain dicts as the API
serves them) and the judgement board_build made of them: claim states, holder
pods, problems and pending reasons come from dra_health.analyze() and
dra_explain.explain_pending(); arrange() lays their answers out per node, per
device and per seat, adds the lease (seat_lease) and capacity of shared
devices, and takes the seat of a namespace from the Namespace's labels
(seat_model.seat_of), never from labels a seat can set.

A waiting claim has its diagnosis (dra/diagnosis.py: verdict, headline, the sentence) and, apart, what the
scheduler said about its pod. The state holds absolute times (RFC 3339), never ages: a tile's `since` and
`lease_until`, a seat's `last_activity`, and in the sentences of the waiting
claims and the problems a {'since': time} part where an age stands
(board_sentences). The same lab state gives the same board whatever the clock
says, apart from `generated` (same_state looks past it); the page
(board_page) shows ages and lease left against its clock.

arrange() gives the instructor's board, with the names of people when a seat ->
person mapping is given; public() the projector's: the same without them, and the
GPU waitlist without who waits. No credential is ever part of a board.
"""

from __future__ import annotations

import copy
from collections import defaultdict

from ansible_collections.dralab.workshop.plugins.module_utils.board.sentences import Sentences
from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.dra.words import natural_key
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import lease_end
from ansible_collections.dralab.workshop.plugins.module_utils.seat.waitlist import seat_namespaces
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_time, parse_duration, parse_time

FORMAT = 1
INSTRUCTOR = 'instructor'
PUBLIC = 'public'
# Tile states, in the order they win: a tainted device is tainted whoever holds it.
STATES = ('tainted', 'in_use', 'allocated', 'free')


def _key(obj):
    meta = object_meta(obj)
    return meta.get('namespace'), meta.get('name')


def _capacity(spec, holders):
    """[{name, total, used, free}] of a shared device's capacities (consumedCapacity of its holders)."""
    return [dict((k, row[k]) for k in ('name', 'total', 'used', 'free'))
            for row in dra_objects.capacity_rows(spec, [holder['consumed'] for holder in holders])]


def _memory(spec):
    for name, entry in sorted((spec.get('capacity') or {}).items()):
        if name.split('/')[-1] == 'memory':
            return (entry or {}).get('value')
    return None


def arrange(objects, report, explanations, now, driver=dra_objects.DEFAULT_DRIVER, lease_max='8h', people=None,
            activity=None, title='DRA lab'):
    """The instructor's board of one lab state, from board_build.build().

    objects: {kind: [object]} (board_build.OBJECT_KINDS); report: dra_health.analyze's answer for them at now;
    explanations: dra_explain.explain_pending's answers for them at now; now: aware datetime;
    people: {seat: person name} (instructor only); activity: {namespace: RFC 3339 time} of changes seen
    that left no object behind (a deleted claim), merged into the seats' last activity.

    Returns a dict (JSON-ready): format, view, title, generated, summary, nodes (each with its device
    tiles), pending, problems, seats, line (the GPU waitlist: the report's, seat/waitlist.py lab_line).
    """
    lease_seconds = parse_duration(lease_max)
    people = dict(people or {})
    sentences = Sentences(objects, explanations, now)
    taints_by_device = dict(((row['pool'], row['device']), [dra_objects.taint_text(t) for t in row['taints']])
                            for row in report['tainted_devices'] if row['driver'] == driver)

    seats = seat_namespaces(objects['namespaces'])
    claims_by_key = dict((_key(claim), claim) for claim in objects['claims'])

    holders = defaultdict(list)  # (pool, device) -> holders
    for row in report['claims']:
        claim = claims_by_key.get((row['namespace'], row['name'])) or {}
        results = (((claim.get('status') or {}).get('allocation') or {}).get('devices') or {}).get('results') or []
        consumed = dict(((r.get('pool'), r.get('device')), r.get('consumedCapacity') or {}) for r in results)
        end = lease_end(claim, lease_seconds) if row['namespace'] in seats else None
        for device in row['devices']:
            if device['driver'] != driver:
                continue
            key = (device['pool'], device['device'])
            holders[key].append({
                'seat': seats.get(row['namespace']), 'namespace': row['namespace'], 'claim': row['name'],
                'in_use': bool(row['holder_pods_alive']), 'pods': list(row['holder_pods_alive']),
                'since': row['created'], 'lease_until': format_time(end),
                'consumed': dict(consumed.get(key) or {})})

    node_rows = dict((row['name'], row) for row in report['nodes'])
    tiles_by_node = defaultdict(list)
    for pool in dra_objects.build_pools(objects['slices']).values():
        if pool['driver'] != driver:
            continue
        node = pool['node'] or pool['pool']
        for name in sorted(pool['devices'], key=natural_key):
            spec = pool['devices'][name]
            mine = sorted(holders.get((pool['pool'], name), ()), key=lambda h: (h['namespace'] or '', h['claim']))
            taints = taints_by_device.get((pool['pool'], name), [])
            state = ('tainted' if taints else 'in_use' if any(h['in_use'] for h in mine)
                     else 'allocated' if mine else 'free')
            shared = bool(spec.get('allowMultipleAllocations'))
            tiles_by_node[node].append({
                'device': name, 'pool': pool['pool'], 'node': node, 'state': state, 'taints': taints,
                'memory': _memory(spec), 'shared': shared, 'capacity': _capacity(spec, mine) if shared else [],
                'holders': [dict((k, v) for k, v in h.items() if k != 'consumed') for h in mine]})
    node_names = list(node_rows) + sorted(set(tiles_by_node) - set(node_rows), key=natural_key)
    board_nodes = []
    for name in node_names:
        row = node_rows.get(name) or {}
        board_nodes.append({'name': name, 'ready': row.get('ready'), 'published': row.get('published', 0),
                            'expected': row.get('expected', 0), 'devices': tiles_by_node.get(name, [])})

    pending = []
    for row in report['claims']:
        if row['state'] != 'pending':
            continue
        pending.append({'seat': seats.get(row['namespace']), 'namespace': row['namespace'], 'claim': row['name'],
                        'since': row['created'], 'reason': row['explain_reason'] or 'pending',
                        'verdict': row['verdict'], 'headline': row['headline'],
                        'sentence': sentences.pending(row), 'scheduler_said': row['scheduler_said']})

    board_seats = _seats(seats, report['claims'], objects['claims'] + objects['pods'], people, activity or {},
                         driver)
    tiles = [tile for node in board_nodes for tile in node['devices']]
    summary = dict(('devices_%s' % state, sum(1 for t in tiles if t['state'] == state)) for state in STATES)
    line = report['waitlist']
    summary.update(devices=len(tiles), pending=len(pending), waiting=len(line), errors=report['summary']['errors'],
                   warnings=report['summary']['warnings'], seats=len(board_seats),
                   seats_holding=sum(1 for s in board_seats if s['holds']))
    return {
        'format': FORMAT, 'view': INSTRUCTOR, 'title': title, 'generated': format_time(now),
        'driver': driver, 'healthy': report['healthy'], 'summary': summary, 'nodes': board_nodes,
        'pending': pending,
        'problems': [dict(dict((k, p.get(k)) for k in ('severity', 'type', 'object', 'verdict', 'scheduler_said')),
                          reason=sentences.problem(p)) for p in report['problems']],
        'seats': board_seats,
        'line': line,
    }


def _seats(seats, claim_rows, objects, people, activity, driver):
    """One row per seat: the devices it holds, its pending claims, its last activity, its person.

    holds counts the board's devices (driver's: the GPUs); devices lists them and, named with their driver,
    what the seat's claims hold of other drivers (the NIC beside a GPU of gpu_nic_numa)."""
    latest = {}
    for obj in objects:
        namespace = object_meta(obj).get('namespace')
        stamp = parse_time(object_meta(obj).get('creationTimestamp'))
        if namespace in seats and stamp is not None and (namespace not in latest or stamp > latest[namespace]):
            latest[namespace] = stamp
    for namespace, value in activity.items():
        stamp = parse_time(value)
        if namespace in seats and stamp is not None and (namespace not in latest or stamp > latest[namespace]):
            latest[namespace] = stamp
    held = defaultdict(list)
    companions = defaultdict(list)
    waiting = defaultdict(int)
    for row in claim_rows:
        if row['namespace'] not in seats:
            continue
        if row['state'] == 'pending':
            waiting[row['namespace']] += 1
        for device in row['devices']:
            where = '%s on %s' % (device['device'], device['node'] or device['pool'])
            if device['driver'] == driver:
                held[row['namespace']].append(where)
            else:
                companions[row['namespace']].append('%s (%s)' % (where, device['driver']))
    rows = []
    for namespace, seat in sorted(seats.items(), key=lambda item: natural_key(item[1])):
        rows.append({'seat': seat, 'namespace': namespace, 'person': people.get(seat),
                     'holds': len(held[namespace]), 'devices': held[namespace] + companions[namespace],
                     'pending': waiting[namespace],
                     'last_activity': format_time(latest.get(namespace))})
    return rows


def public(board):
    """The projector's board: the instructor's without the names of people."""
    shown = copy.deepcopy(board)
    shown['view'] = PUBLIC
    for row in shown.get('seats') or []:
        row.pop('person', None)
    for row in shown.get('line') or []:  # who waits is the seat's own business: the room sees the line
        row.pop('seat', None)
        row.pop('namespace', None)
        row.pop('estimate_seat', None)
    return shown


def same_state(first, second):
    """Whether two boards show the same lab: everything but their `generated` times (a board holds no age)."""
    def strip(board):
        return dict((k, v) for k, v in (board or {}).items() if k != 'generated')
    return strip(first) == strip(second)
