# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The event window: until when seat tokens must last, and the API server's longest token from the same settings.

dralab_event_start and dralab_event_end (RFC 3339 with a UTC offset, both or neither) say when the workshop runs.
With them, a seat token lasts until the end plus END_MARGIN, whenever users.yml issues it (the day before
included), and kube-apiserver's longest token (--service-account-max-token-expiration) is dralab_event_lead +
the event + END_MARGIN: long enough for a token issued up to dralab_event_lead before the start.
Without them, seat tokens and the API server's longest token last dralab_event_duration (from when users.yml runs).
"""

from __future__ import annotations

import datetime
import math

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration, parse_event_time

# A seat token outlives the event's end by this much: a workshop that runs a little late keeps its kubectl.
END_MARGIN = 900


def valid_until(end):
    """When the seat tokens of an event that ends at end (aware datetime) expire."""
    return end + datetime.timedelta(seconds=END_MARGIN)


def token_seconds(end, now):
    """The lifetime (whole seconds, rounded up) a token issued at now needs to last until valid_until(end)."""
    return int(math.ceil((valid_until(end) - now).total_seconds()))


def window_seconds(start, end, lead_seconds):
    """The longest token the event needs: from lead_seconds before its start to valid_until(end)."""
    return int(lead_seconds + (end - start).total_seconds() + END_MARGIN)


def token_lifetime_cap(duration, start='', end='', lead=''):
    """Seconds of the API server's longest token for the settings (before kube-apiserver's 1 h floor): the event
    window's (window_seconds) when an end is given, else the event duration. Raises ValueError on bad input."""
    end_time = parse_event_time(end)
    if end_time is None:
        return parse_duration(duration)
    start_time = parse_event_time(start)
    if start_time is None:
        raise ValueError('dralab_event_end is set without dralab_event_start')
    if end_time <= start_time:
        raise ValueError('dralab_event_end %s is not after dralab_event_start %s' % (end, start))
    return window_seconds(start_time, end_time, parse_duration(lead))
