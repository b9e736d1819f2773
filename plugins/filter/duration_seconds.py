# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: duration_seconds
short_description: Convert a duration such as 8h or 1h30m to seconds
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the number of seconds in a duration.
  - Accepts an integer (seconds), a string of digits (seconds), or amounts with the units C(w), C(d), C(h), C(m)
    and C(s), largest first, each at most once, for example V(8h), V(90m), V(2d), V(1h30m), V(3600s).
  - Fails, naming the value, on anything else.
options:
  _input:
    description: The duration, usually the lab-wide C(dralab_event_duration).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Compute the seat token lifetime
  ansible.builtin.set_fact:
    workshop_users_token_seconds: "{{ dralab_event_duration | dralab.workshop.duration_seconds }}"

# '8h' | dralab.workshop.duration_seconds    => 28800
# '1h30m' | dralab.workshop.duration_seconds => 5400
# 3600 | dralab.workshop.duration_seconds    => 3600
"""

RETURN = r"""
_value:
  description: The duration in seconds.
  type: integer
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_duration


def duration_seconds(value):
    """Return the number of seconds in value."""
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.duration_seconds: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'duration_seconds': duration_seconds}
