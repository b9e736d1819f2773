# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""stored_password keeps ansible.builtin.password's store, hashes at the shadow tools' cost, and in check mode returns
the same without writing."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleError
from passlib.hash import sha512_crypt
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader

from ansible_collections.dralab.workshop.plugins.lookup.stored_password import NOT_STORED, stored_value


def lookup(name):
    return lookup_loader.get(name, loader=DataLoader(), templar=None)


def run(terms, check_mode):
    return lookup('dralab.workshop.stored_password').run(terms, variables={'ansible_check_mode': check_mode})


def test_a_plain_password_is_the_builtins_in_and_out_of_check_mode(tmp_path):
    term = '%s/user01 length=14' % tmp_path
    stored = lookup('ansible.builtin.password').run([term], variables={})
    content = (tmp_path / 'user01').read_bytes()
    assert run([term], check_mode=True) == stored == run([term], check_mode=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['user01']
    assert (tmp_path / 'user01').read_bytes() == content


def test_a_hash_has_the_stored_salt_and_the_shadow_tools_rounds(tmp_path):
    term = '%s/user01 length=14 chars=ascii_letters,digits encrypt=sha512_crypt' % tmp_path
    [first] = run([term], check_mode=False)
    password, salt = (tmp_path / 'user01').read_text().rstrip('\n').split(' salt=')
    assert len(password) == 14 and password.isalnum() and len(salt) == 16
    assert sha512_crypt.from_string(first).rounds == 5000 and sha512_crypt.verify(password, first)
    content = (tmp_path / 'user01').read_bytes()
    assert run([term], check_mode=False) == [first] == run([term], check_mode=True)
    assert (tmp_path / 'user01').read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ['user01'], 'a lock file was left'


def test_a_store_the_builtin_lookup_wrote_keeps_its_password_and_salt(tmp_path):
    term = '%s/user01 length=14 encrypt=sha512_crypt' % tmp_path
    [builtin_hash] = lookup('ansible.builtin.password').run([term], variables={})
    password = (tmp_path / 'user01').read_text().split(' salt=')[0]
    [ours] = run([term], check_mode=False)
    ours_parsed, builtin_parsed = sha512_crypt.from_string(ours), sha512_crypt.from_string(builtin_hash)
    assert (ours_parsed.salt, ours_parsed.rounds, builtin_parsed.rounds) == (builtin_parsed.salt, 5000, 656000)
    assert sha512_crypt.verify(password, ours) and sha512_crypt.verify(password, builtin_hash)


def test_check_mode_writes_nothing_the_builtin_would_write(tmp_path):
    (tmp_path / 'plain').write_text('secret\n')
    (tmp_path / 'no-ident').write_text('secret salt=abcdefghijklmnopqrstuv\n')
    terms = ['%s/missing' % tmp_path, '%s/plain encrypt=sha512_crypt' % tmp_path,
             '%s/no-ident encrypt=bcrypt' % tmp_path, '%s/plain' % tmp_path]
    assert run(terms, check_mode=True) == [NOT_STORED, NOT_STORED, NOT_STORED, 'secret']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['no-ident', 'plain']
    assert (tmp_path / 'plain').read_text() == 'secret\n'
    # Outside check mode they are written as the builtin lookup writes them (bcrypt left out: passlib cannot hash
    # with bcrypt 5 here).
    assert NOT_STORED not in run(terms[:2], check_mode=False)
    assert (tmp_path / 'plain').read_text().startswith('secret salt=')
    assert (tmp_path / 'missing').exists() and ' salt=' in (tmp_path / 'plain').read_text()


def test_a_stored_ident_that_differs_from_the_asked_one_fails_as_the_builtin_does(tmp_path):
    (tmp_path / 'user01').write_text('secret salt=abcdefghijklmnopqrstuv ident=2a\n')
    with pytest.raises(AnsibleError, match='does not match the stored one'):
        stored_value(str(tmp_path / 'user01'), 'bcrypt', '2b')
