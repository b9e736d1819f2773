# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: stored_password
short_description: The password lookup, writing nothing in check mode
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Takes the terms of C(ansible.builtin.password) (P(dralab.workshop.seat_password_terms#filter) makes them) and
    returns what that lookup returns.
  - Outside check mode it is that lookup, which creates a missing password file and adds the salt (and the ident)
    to a file that lacks them when O(_terms) ask for a hash.
  - In check mode (C(ansible_check_mode)) it only reads the files. A password whose file holds all the term needs
    is returned as C(ansible.builtin.password) would return it; one that the builtin lookup would create or
    complete is returned as C(!), which is neither a password nor a hash, so a task that sets it reports a change.
    Nothing is written on the controller, not even the builtin lookup's lock file or a missing folder.
options:
  _terms:
    description: Terms of C(ansible.builtin.password), C(PATH key=value ...).
    type: list
    elements: string
    required: true
"""

EXAMPLES = r"""
- name: Hash the seat passwords (check mode creates none)
  ansible.builtin.set_fact:
    seat_hashes: >-
      {{ dict(seats | zip(query('dralab.workshop.stored_password',
         *(seats | dralab.workshop.seat_password_terms(artifacts_dir ~ '/passwords', 14, 'sha512_crypt'))))) }}
  no_log: true
"""

RETURN = r"""
_raw:
  description: One password (or hash) per term, C(!) in check mode for one that is not stored yet.
  type: list
  elements: string
"""

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_bytes
from ansible.plugins.loader import lookup_loader
from ansible.plugins.lookup import LookupBase
from ansible.plugins.lookup.password import _parse_content, _read_password_file
from ansible.utils.encrypt import BaseHash, do_encrypt

NOT_STORED = '!'


def stored_value(path, encrypt, ident):
    """What ansible.builtin.password returns for path without writing it, or NOT_STORED when it would write."""
    content = _read_password_file(to_bytes(path, errors='surrogate_or_strict'))
    if content is None:
        return NOT_STORED
    password, salt, stored_ident = _parse_content(content)
    if not encrypt:
        return password
    if stored_ident and ident and stored_ident != ident:
        raise AnsibleError('The ident parameter provided (%s) does not match the stored one (%s).' % (ident, stored_ident))
    ident = stored_ident or ident
    implicit_ident = getattr(BaseHash.algorithms.get(encrypt), 'implicit_ident', None)
    if not salt or (not ident and implicit_ident):
        return NOT_STORED
    return do_encrypt(password, encrypt, salt=salt, ident=ident)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        builtin = lookup_loader.get('ansible.builtin.password', loader=self._loader, templar=self._templar)
        if not (variables or {}).get('ansible_check_mode'):
            return builtin.run(terms, variables=variables, **kwargs)
        values = []
        for term in terms:
            builtin.set_options(var_options=variables, direct=kwargs)
            relpath, params = builtin._parse_parameters(term)
            path = self._loader.path_dwim(relpath)
            if path == '/dev/null':  # a new password each time, written nowhere
                values.extend(builtin.run([term], variables=variables, **kwargs))
            else:
                values.append(stored_value(path, params['encrypt'], params['ident']))
        return values
