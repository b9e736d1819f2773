# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A seat's GPU lease: when it ends (the one rule), how long one may be asked for, how much is left.

A claim's lease ends at the earlier of its lease-expires annotation and its
creation time plus the lab's maximum lease. The annotation is in the seat's
reach (a seat may edit it), the creation time is not: no claim in a seat
namespace outlives the maximum, whoever made it and however it is annotated.
can-has-gpu, the lease reaper (seat/reaper.py) and the board all ask here.
"""

from __future__ import annotations

import datetime

from ansible_collections.dralab.workshop.plugins.module_utils.values import format_age, parse_time
from ansible_collections.dralab.workshop.plugins.module_utils.k8s.meta import object_meta
from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration

# The annotations can-has-gpu puts on a claim: when the lease ends (RFC 3339) and what was asked for (--for).
LEASE_EXPIRES = 'dralab.workshop/lease-expires'
LEASE_FOR = 'dralab.workshop/lease-for'


class LeaseError(ValueError):
    """A lease request the lab does not allow (the message says what to ask for instead)."""


def lease_end(claim, max_seconds):
    """When the claim's lease ends (aware datetime), or None without a creation time or an annotation.

    max_seconds None: the lab's maximum is not known, only the annotation counts."""
    meta = object_meta(claim)
    created = parse_time(meta.get('creationTimestamp'))
    asked = parse_time((meta.get('annotations') or {}).get(LEASE_EXPIRES))
    if created is None or max_seconds is None:
        return asked
    cap = created + datetime.timedelta(seconds=int(max_seconds))
    return min(asked, cap) if asked is not None else cap


def lease_seconds(requested, default, maximum):
    """Seconds of a lease asked for with --for (None: the lab's default, capped by the maximum)."""
    max_seconds = parse_duration(maximum)
    if requested is None:
        return min(parse_duration(default), max_seconds)
    try:
        seconds = parse_duration(requested)
    except ValueError:
        raise LeaseError('--for %s is not a duration: write it like 30m, 2h or 1h30m.' % requested) from None
    if seconds < 60:
        raise LeaseError('--for %s is too short: a lease lasts at least 1m.' % requested)
    if seconds > max_seconds:
        longest = format_age(max_seconds)
        raise LeaseError('--for %s is longer than this lab allows: the longest lease is %s; ask for --for %s or less.'
                         % (requested, longest, longest))
    return seconds


def seconds_left(claim, max_seconds, now):
    """Whole seconds until the claim's lease ends (negative once it has), None when unknown."""
    end = lease_end(claim, max_seconds)
    return None if end is None else int((end - now).total_seconds())


def describe_left(seconds):
    """What is left of a lease, in words: unknown, expired, or an age in whole minutes rounded up."""
    if seconds is None:
        return 'unknown'
    if seconds <= 0:
        return 'expired'
    return format_age(seconds + 59 if seconds >= 120 else seconds)


def age_seconds(obj, now):
    """Whole seconds since the object was created (never negative), None without a creation time."""
    created = parse_time(object_meta(obj).get('creationTimestamp'))
    return None if created is None else max(int((now - created).total_seconds()), 0)
