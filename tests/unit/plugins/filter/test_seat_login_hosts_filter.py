# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.filter.seat_login_hosts import FilterModule, seat_login_hosts


def test_filter():
    assert FilterModule().filters()['seat_login_hosts'] is seat_login_hosts
    assert seat_login_hosts(['user01', 'user02', 'user03'], ['login2', 'login1']) == {
        'user01': 'login1', 'user02': 'login2', 'user03': 'login1'}
    assert seat_login_hosts(['user01', 'user02'], ['login1', 'login2'], {'user01': 'login2'}) == {
        'user01': 'login2', 'user02': 'login2'}
    assert seat_login_hosts(['user01'], []) == {}
    assert seat_login_hosts(['user01'], None, None) == {}


def test_bad_override_names_the_setting():
    with pytest.raises(AnsibleFilterError) as refused:
        seat_login_hosts(['user01'], ['login1'], {'user01': 'cp1'})
    assert str(refused.value) == ("dralab.workshop.seat_login_hosts: dralab_seat_login_hosts: 'cp1' of seat user01 "
                                  "is not a login host (login hosts: login1)")
