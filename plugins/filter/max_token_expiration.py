# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: max_token_expiration
short_description: The API server's longest service-account token for a duration such as 8h
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the value of kube-apiserver's C(--service-account-max-token-expiration) for a duration (usually the
    event's), that is its seconds with an C(s), at least V(3600s), the shortest the API server accepts.
  - Accepts the forms of P(dralab.workshop.duration_seconds#filter) and fails, naming the value, on anything else.
  - With an event O(end), the duration is not used; the longest token covers the event window, from O(lead) before
    O(start) to O(end) and 15 minutes more, so seat tokens issued the day before last until the end.
options:
  _input:
    description: The duration, usually the lab-wide C(dralab_event_duration).
    type: raw
    required: true
  start:
    description: When the event starts (C(dralab_event_start)), RFC 3339 with a UTC offset; needed with O(end).
    type: str
    default: ''
  end:
    description: When the event ends (C(dralab_event_end)); empty for no event window.
    type: str
    default: ''
  lead:
    description: How long before O(start) seat tokens may be issued (C(dralab_event_lead)), a duration.
    type: raw
    default: 0
"""

EXAMPLES = r"""
# '8h' | dralab.workshop.max_token_expiration   => '28800s'
# '30m' | dralab.workshop.max_token_expiration  => '3600s'
# '8h' | dralab.workshop.max_token_expiration('2026-10-28T09:00:00+02:00', '2026-10-28T17:00:00+02:00', '2d')
#   => '202500s' (2d + 8h + 15m)
"""

RETURN = r"""
_value:
  description: Seconds followed by C(s).
  type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.seat.event import token_lifetime_cap
from ansible_collections.dralab.workshop.plugins.module_utils.values import max_token_expiration as _max


def max_token_expiration(value, start='', end='', lead=0):
    """Return kube-apiserver's --service-account-max-token-expiration for value, or for the event window."""
    try:
        return _max(token_lifetime_cap(value, start, end, lead))
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.max_token_expiration: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'max_token_expiration': max_token_expiration}
