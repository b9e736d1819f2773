# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.seat_password_terms import (
    FilterModule, seat_password_terms)


def test_one_file_per_seat():
    assert seat_password_terms(['user01', 'user02'], '/srv/lab/passwords/', 14) == [
        '/srv/lab/passwords/user01 length=14 chars=ascii_letters,digits',
        '/srv/lab/passwords/user02 length=14 chars=ascii_letters,digits',
    ]


def test_encrypt_and_string_length():
    assert seat_password_terms(['gpu001'], '/p', '20', 'sha512_crypt') == [
        '/p/gpu001 length=20 chars=ascii_letters,digits encrypt=sha512_crypt']


def test_no_seats():
    assert seat_password_terms([], '/p') == []


@pytest.mark.parametrize('args, message', [
    ((['user01'], 'passwords'), "directory 'passwords' is not an absolute path"),
    ((['user01'], '/my lab/passwords'), "directory '/my lab/passwords' contains white space"),
    ((['user01'], '/p', 6), 'length 6 is shorter than 8 characters'),
    ((['user01'], '/p', 'long'), "length 'long' is not an integer"),
    ((['user01'], '/p', 14, 'sha512 rounds=1'), "encrypt 'sha512 rounds=1' is not a hash scheme name"),
    ((['User 1'], '/p'), "seat name: 'User 1' is not a valid Linux user name"),
])
def test_bad_input_names_the_field(args, message):
    with pytest.raises(AnsibleFilterError, match='^dralab.workshop.seat_password_terms: ' + message.replace('(', r'\(')):
        seat_password_terms(*args)


def test_registered():
    assert FilterModule().filters()['seat_password_terms'] is seat_password_terms
