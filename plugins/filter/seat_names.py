# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: seat_names
short_description: Names of the workshop seats
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the seat names O(prefix) followed by the seat number zero-padded to O(width) digits, from 1 to the count.
  - O(width) is a minimum, so seat 100 of C(user) with width 2 is C(user100).
  - Fails when the count or the width is negative or not an integer.
positional: prefix, width
options:
  _input:
    description: Number of seats, usually the lab-wide C(dralab_seats). A string of digits is accepted.
    type: integer
    required: true
  prefix:
    description: Text before the number, usually C(dralab_seat_prefix).
    type: string
    default: user
  width:
    description: Minimum number of digits, usually C(dralab_seat_width).
    type: integer
    default: 2
"""

EXAMPLES = r"""
- name: Show the seat names
  ansible.builtin.debug:
    msg: "{{ dralab_seats | dralab.workshop.seat_names(dralab_seat_prefix, dralab_seat_width) }}"

# 3 | dralab.workshop.seat_names          => ['user01', 'user02', 'user03']
# 2 | dralab.workshop.seat_names('gpu', 3) => ['gpu001', 'gpu002']
"""

RETURN = r"""
_value:
  description: The seat names, in order.
  type: list
  elements: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import generate_seat_names


def seat_names(count, prefix='user', width=2):
    """Return [prefix01, prefix02, ...] for count seats."""
    try:
        return generate_seat_names(count, prefix, width)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.seat_names: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'seat_names': seat_names}
