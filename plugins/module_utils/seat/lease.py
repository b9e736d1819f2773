# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a seat's GPU lease ends: the one rule, for can-has-gpu, the lease reaper and the board.

A claim's lease ends at the earlier of its lease-expires annotation and its
creation time plus the lab's maximum lease. The annotation is in the seat's
reach (a seat may edit it), the creation time is not: no claim in a seat
namespace outlives the maximum, whoever made it and however it is annotated.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_time

# The annotations can-has-gpu puts on a claim: when the lease ends (RFC 3339) and what was asked for (--for).
LEASE_EXPIRES = 'dralab.workshop/lease-expires'
LEASE_FOR = 'dralab.workshop/lease-for'


def lease_end(claim, max_seconds):
    """When the claim's lease ends (aware datetime), or None without a creation time or an annotation."""
    meta = (claim or {}).get('metadata') or {}
    created = parse_time(meta.get('creationTimestamp'))
    asked = parse_time((meta.get('annotations') or {}).get(LEASE_EXPIRES))
    if created is None:
        return asked
    cap = created + datetime.timedelta(seconds=int(max_seconds))
    return min(asked, cap) if asked is not None else cap
