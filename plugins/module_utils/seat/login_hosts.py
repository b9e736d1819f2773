# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which login host each seat logs in on (filter seat_login_hosts, the preflight, role workshop_users).

Seat number k (its position in the seat list, from 0) goes to login host
k mod n of the login hosts sorted by name: the hosts' seat counts differ by at
most one, the same settings give the same hosts on every run, and seats added
at the end of the list (dralab_seats 72 -> 73) leave every other seat where it
was. Adding or removing a login host, or a seat in the middle of an explicit
dralab_seat_names list, moves seats: set those by hand in the overrides
(dralab_seat_login_hosts: seat -> host), which win over the rotation and do not
shift the other seats. Pure.
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import show


def override_problems(seats, login_hosts, overrides):
    """What is wrong with the overrides (seat -> login host), one sentence each: [] when they are usable."""
    if overrides is None:
        return []
    if not isinstance(overrides, dict):
        return ['%s is not a mapping of seat names to login hosts' % show(overrides)]
    problems = []
    for seat in sorted(overrides, key=str):
        host = overrides[seat]
        if seat not in seats:
            problems.append('%s is not a seat of this lab (seats: %s)' % (show(seat), describe(seats)))
        elif host not in login_hosts:
            problems.append('%s of seat %s is not a login host (login hosts: %s)'
                            % (show(host), seat, describe(login_hosts) or 'none'))
    return problems


def describe(names):
    """A list of names for a message, at most the first and last few."""
    names = [str(name) for name in names]
    return ', '.join(names) if len(names) <= 6 else '%s, ..., %s' % (', '.join(names[:3]), ', '.join(names[-2:]))


def assign_login_hosts(seats, login_hosts, overrides=None):
    """Each seat's login host, in seat order: round-robin over the sorted login hosts, the overrides on top.

    No login hosts gives {} (seats get no Linux account). Raises ValueError on an
    override of an unknown seat or to a host that is not a login host.
    """
    problems = override_problems(seats, login_hosts, overrides)
    if problems:
        raise ValueError('; '.join(problems))
    hosts = sorted(set(login_hosts), key=str)
    if not hosts:
        return {}
    overrides = overrides or {}
    return dict((seat, overrides.get(seat, hosts[index % len(hosts)])) for index, seat in enumerate(seats))
