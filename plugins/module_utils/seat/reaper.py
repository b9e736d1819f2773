# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lease reaper's plan: which claims of the seat namespaces it releases now, and why.

Pure: the reaper (tools/can_has_gpu/reaper.py) reads the namespaces, claims and
pods, asks reaper_plan, and deletes what the plan names.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.dra import objects as dra_objects
from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, format_time
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.seat.lease import lease_end, seconds_left


def reaper_plan(seat_namespaces, claims, pods, now, lease_max, idle_after=None, idle_since=None):
    """What the reaper releases now: one entry per claim (seat, namespace, claim, devices, pods, reason).

    seat_namespaces maps each seat namespace (decided by the namespace's labels, which a seat cannot
    change) to its seat; claims elsewhere are never planned. lease_max is the lab's maximum lease in
    seconds. idle_after (seconds, None = off) also releases allocated claims that no live pod has used
    for that long; idle_since (claim uid -> first time seen idle) is updated in place.
    """
    actions = []
    idle_seen = set()
    index = dra_objects.PodIndex(pods)
    for claim in claims:
        meta = object_meta(claim)
        namespace = meta.get('namespace')
        if namespace not in seat_namespaces or meta.get('deletionTimestamp'):
            continue
        devices = [r.get('device') for r in dra_objects.allocated_devices(claim)]
        left = seconds_left(claim, lease_max, now)
        reason = None
        if left is not None and left <= 0:
            reason = 'lease ended %s' % format_time(lease_end(claim, lease_max))
        elif idle_after is not None and devices and not index.reservations(claim)[0]:
            uid = meta.get('uid') or '%s/%s' % (namespace, meta.get('name'))
            idle_seen.add(uid)
            first = (idle_since if idle_since is not None else {}).setdefault(uid, now)
            if (now - first).total_seconds() >= idle_after:
                reason = 'allocated and unused for %s' % format_age((now - first).total_seconds())
        if reason:
            actions.append({'seat': seat_namespaces[namespace], 'namespace': namespace, 'claim': meta.get('name'),
                            'devices': devices,
                            'pods': sorted(object_meta(p).get('name') for p in index.consumers(claim)),
                            'reason': reason})
    if idle_since is not None:
        for uid in list(idle_since):
            if uid not in idle_seen:
                del idle_since[uid]
    return actions
