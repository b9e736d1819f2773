# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: seat_password_terms
short_description: Terms for the password lookup, one password file per seat
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns one C(ansible.builtin.password) lookup term per seat, each naming a file of its own,
    C(<directory>/<seat>), so every seat gets its own password, kept across runs.
  - Fails on a relative O(directory) or one with white space (the lookup cannot read it), a length under 8,
    or an invalid seat name.
positional: directory, length, encrypt
options:
  _input:
    description: Seat names, usually from P(dralab.workshop.seat_names#filter).
    type: list
    elements: string
    required: true
  directory:
    description: Absolute folder on the controller that holds the password files.
    type: path
    required: true
  length:
    description: Password length (letters and digits).
    type: integer
    default: 14
  encrypt:
    description:
      - Hash scheme for the lookup to return instead of the plain password, such as C(sha512_crypt).
      - Omit for the plain password (the credential sheet).
    type: string
"""

EXAMPLES = r"""
- name: Read (or create) each seat's password
  ansible.builtin.set_fact:
    seat_passwords: >-
      {{ dict(seats | zip(query('ansible.builtin.password',
         *(seats | dralab.workshop.seat_password_terms(artifacts_dir ~ '/passwords', 14))))) }}

# ['user01', 'user02'] | dralab.workshop.seat_password_terms('/srv/lab/passwords', 14)
#   => ['/srv/lab/passwords/user01 length=14 chars=ascii_letters,digits',
#       '/srv/lab/passwords/user02 length=14 chars=ascii_letters,digits']
"""

RETURN = r"""
_value:
  description: The lookup terms, in the order of the seats.
  type: list
  elements: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.seat.names import password_lookup_terms


def seat_password_terms(seats, directory, length=14, encrypt=None):
    """Return '<directory>/<seat> length=N chars=ascii_letters,digits[ encrypt=E]' for each seat."""
    try:
        return password_lookup_terms(list(seats), directory, length, encrypt)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('dralab.workshop.seat_password_terms: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'seat_password_terms': seat_password_terms}
