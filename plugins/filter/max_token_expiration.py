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
options:
  _input:
    description: The duration, usually the lab-wide C(dralab_event_duration).
    type: raw
    required: true
"""

EXAMPLES = r"""
# '8h' | dralab.workshop.max_token_expiration   => '28800s'
# '30m' | dralab.workshop.max_token_expiration  => '3600s'
"""

RETURN = r"""
_value:
  description: Seconds followed by C(s).
  type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.values import max_token_expiration as _max


def max_token_expiration(value):
    """Return kube-apiserver's --service-account-max-token-expiration for value."""
    try:
        return _max(value)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.max_token_expiration: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'max_token_expiration': max_token_expiration}
