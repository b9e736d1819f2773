# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The seats' names and their password files.

The names come from the seat count, prefix and width (filter seat_names, the
preflight); each seat's Linux password lives in a file of its own (filter
seat_password_terms, roles workshop_users and lab_board). Pure: the rule for
one name is values.seat_name_problem.
"""

from __future__ import annotations

import re

from ansible_collections.dralab.workshop.plugins.module_utils.values import bounded_int, seat_name_problem, show


def generate_seat_names(count, prefix='user', width=2):
    """Seat names prefix + the number zero-padded to at least width digits, from 1 to count."""
    count = bounded_int('count', count, 0, 'is negative')
    width = bounded_int('width', width, 0, 'is negative')
    if not isinstance(prefix, str):
        raise ValueError('prefix %s is not a string' % show(prefix))
    return ['%s%0*d' % (prefix, width, number) for number in range(1, count + 1)]


def password_lookup_terms(seats, directory, length, encrypt=None):
    """One ansible.builtin.password lookup term per seat: a file of its own under directory."""
    if not isinstance(directory, str) or not directory.startswith('/'):
        raise ValueError('directory %s is not an absolute path' % show(directory))
    if any(ch.isspace() for ch in directory):
        raise ValueError('directory %s contains white space, which the password lookup cannot read'
                         % show(directory))
    length = bounded_int('length', length, 8, 'is shorter than 8 characters')
    if encrypt is not None and not re.match(r'^[a-z0-9_]+$', str(encrypt)):
        raise ValueError('encrypt %s is not a hash scheme name such as sha512_crypt' % show(encrypt))
    terms = []
    for seat in seats:
        problem = seat_name_problem(seat)
        if problem:
            raise ValueError('seat name: %s' % problem)
        term = '%s/%s length=%d chars=ascii_letters,digits' % (directory.rstrip('/'), seat, length)
        terms.append(term + (' encrypt=%s' % encrypt if encrypt else ''))
    return terms
