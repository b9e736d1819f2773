# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: seat_login_hosts
short_description: The login host of each workshop seat
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns a mapping of each seat name to the one login host where it gets its Linux account, in seat order.
  - Seat number k (its position in the list, from 0) goes to login host k mod n of the login hosts sorted by name, so
    the hosts' seat counts differ by at most one, and seats appended to the list leave every other seat on its host.
    Adding or removing a login host moves seats.
  - O(overrides) (usually C(dralab_seat_login_hosts)) give particular seats another host; they do not shift the
    other seats.
  - Returns an empty mapping when there are no login hosts.
  - Fails on an override of a name that is not a seat, or to a host that is not a login host.
positional: login_hosts, overrides
options:
  _input:
    description: The seat names, in order (usually C(workshop_users_seat_names)).
    type: list
    elements: string
    required: true
  login_hosts:
    description: The login hosts (usually C(dralab_login_hosts)).
    type: list
    elements: string
    required: true
  overrides:
    description: Seat name to login host, over the rotation.
    type: dict
    default: {}
"""

EXAMPLES = r"""
# ['user01', 'user02', 'user03'] | dralab.workshop.seat_login_hosts(['login2', 'login1'])
#   => {'user01': 'login1', 'user02': 'login2', 'user03': 'login1'}
# ['user01', 'user02', 'user03'] | dralab.workshop.seat_login_hosts(['login1', 'login2'], {'user03': 'login2'})
#   => {'user01': 'login1', 'user02': 'login2', 'user03': 'login2'}
- name: Show where each seat logs in
  ansible.builtin.debug:
    msg: "{{ workshop_users_seat_names | dralab.workshop.seat_login_hosts(dralab_login_hosts, dralab_seat_login_hosts) }}"
"""

RETURN = r"""
_value:
  description: Seat name to its login host, in seat order.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.seat.login_hosts import assign_login_hosts


def seat_login_hosts(seats, login_hosts, overrides=None):
    """Return {seat: login host} for the seats."""
    try:
        return assign_login_hosts(list(seats), list(login_hosts or []), overrides or {})
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.seat_login_hosts: dralab_seat_login_hosts: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'seat_login_hosts': seat_login_hosts}
