# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: stored_password
short_description: The password lookup, with hashes at the system's cost, writing nothing in check mode
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Takes the terms of C(ansible.builtin.password) (P(dralab.workshop.seat_password_terms#filter) makes them) and
    keeps the same password store, one file per password (C(PASSWORD salt=SALT[ ident=IDENT])).
  - A term without C(encrypt) returns what C(ansible.builtin.password) returns (outside check mode it is that
    lookup, which creates a missing file).
  - A term with C(encrypt) returns the password's hash with the stored salt (and ident), at the cost the shadow
    tools give a hash of that scheme (C(sha512_crypt) and C(sha256_crypt) 5000 rounds, as C(chpasswd) and
    C(passwd) do), not at the builtin lookup's passlib cost (656,000 rounds, 0.2 s a hash), since the passwords are
    random (14 letters and digits, 83 bits), so a costlier hash protects nothing here, and 300 seats hash in
    a fraction of a second. Outside check mode a missing password, salt or ident is added to the file first,
    as the builtin lookup adds it.
  - In check mode (C(ansible_check_mode)) it only reads the files. A password whose file holds all the term
    needs is returned as outside check mode; one that would be created or completed is returned as C(!), which
    is neither a password nor a hash, so a task that sets it reports a change. Nothing is written on the
    controller, not even the builtin lookup's lock file or a missing folder.
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
from ansible.plugins.lookup.password import (
    _format_content,
    _gen_candidate_chars,
    _get_lock,
    _parse_content,
    _read_password_file,
    _release_lock,
    _write_password_file,
)
from ansible.utils.encrypt import BaseHash, do_encrypt, random_password, random_salt

NOT_STORED = '!'
# The rounds the shadow tools use for these schemes (login.defs' SHA_CRYPT_MIN_ROUNDS default); other schemes keep
# the cost the builtin lookup gives them.
SYSTEM_ROUNDS = {'sha512_crypt': 5000, 'sha256_crypt': 5000}


def read_entry(path):
    """(password, salt, ident) of a store file, or None when there is none."""
    content = _read_password_file(to_bytes(path, errors='surrogate_or_strict'))
    return None if content is None else _parse_content(content)


def complete(entry, encrypt, ident):
    """The entry's (password, salt, ident) when it holds all a hash of encrypt needs, else None."""
    if entry is None:
        return None
    password, salt, stored_ident = entry
    if stored_ident and ident and stored_ident != ident:
        raise AnsibleError('The ident parameter provided (%s) does not match the stored one (%s).' % (ident, stored_ident))
    ident = stored_ident or ident
    implicit_ident = getattr(BaseHash.algorithms.get(encrypt), 'implicit_ident', None)
    if not salt or (not ident and implicit_ident):
        return None
    return password, salt, ident


def hashed(password, encrypt, salt, ident):
    return do_encrypt(password, encrypt, salt=salt, ident=ident, rounds=SYSTEM_ROUNDS.get(encrypt))


def stored_value(path, encrypt, ident):
    """What the lookup returns for path without writing it, or NOT_STORED when it would write."""
    entry = read_entry(path)
    if not encrypt:
        return NOT_STORED if entry is None else entry[0]
    found = complete(entry, encrypt, ident)
    return NOT_STORED if found is None else hashed(found[0], encrypt, found[1], found[2])


def completed_entry(path, params):
    """Add what the file lacks for a hash of params' scheme (password, salt, ident), as the builtin lookup does, under
    its lock; returns (password, salt, ident)."""
    encrypt, ident = params['encrypt'], params['ident']
    b_path = to_bytes(path, errors='surrogate_or_strict')
    first_process, lockfile = _get_lock(b_path)
    try:
        entry = read_entry(path)
        found = complete(entry, encrypt, ident)
        if found is not None:
            return found
        password, salt, stored_ident = entry if entry is not None else (None, None, None)
        if password is None:
            password = random_password(params['length'], _gen_candidate_chars(params['chars']), params['seed'])
        algorithm = BaseHash.algorithms.get(encrypt)
        if not salt:
            salt = random_salt(algorithm.salt_size) if algorithm else random_salt()
        ident = stored_ident or ident or getattr(algorithm, 'implicit_ident', None)
        if first_process:
            _write_password_file(b_path, _format_content(password, salt, encrypt=encrypt, ident=ident))
        return password, salt, ident
    finally:
        if first_process:
            _release_lock(lockfile)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        builtin = lookup_loader.get('ansible.builtin.password', loader=self._loader, templar=self._templar)
        check_mode = bool((variables or {}).get('ansible_check_mode'))
        values = []
        for term in terms:
            builtin.set_options(var_options=variables, direct=kwargs)
            relpath, params = builtin._parse_parameters(term)
            path = self._loader.path_dwim(relpath)
            if path == '/dev/null' or (not params['encrypt'] and not check_mode):
                values.extend(builtin.run([term], variables=variables, **kwargs))
            elif check_mode:
                values.append(stored_value(path, params['encrypt'], params['ident']))
            else:
                password, salt, ident = completed_entry(path, params)
                values.append(hashed(password, params['encrypt'], salt, ident))
        return values
