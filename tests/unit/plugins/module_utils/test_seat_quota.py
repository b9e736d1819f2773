# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_quota: the btrfs quota groups of the seats' file system, and which limits need setting.

The btrfs commands themselves run on the lab's login hosts (tests/lab/test_seat_host.py, the disk-fill attack).
"""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.seat import quota as seat_quota

# `btrfs qgroup show --raw -re /home/seats` (btrfs-progs 6.2, trailing blanks trimmed) after a handover
# removed user03's old home.
QGROUPS = """\
Qgroupid    Referenced    Exclusive  Max referenced  Max exclusive   Path
--------    ----------    ---------  --------------  -------------   ----
0/5              16384        16384            none           none   <toplevel>
0/256            40960        40960       268435456           none   user01
0/257                0            0            none           none   user02
0/258             8192         8192       268435456           none   .shared-tmp
0/259                0            0            none           none   <stale>
"""


def test_parse_qgroups():
    assert seat_quota.parse_qgroups(QGROUPS) == {
        "user01": {"referenced": 40960, "limit": 268435456},
        "user02": {"referenced": 0, "limit": None},
        ".shared-tmp": {"referenced": 8192, "limit": 268435456},
    }


def test_plan_sets_only_the_limits_that_differ():
    groups = seat_quota.parse_qgroups(QGROUPS)
    wanted = {"user01": 2 ** 28, "user02": 2 ** 28, ".shared-tmp": 2 ** 29}
    assert seat_quota.plan(groups, wanted) == [".shared-tmp", "user02"]
    assert seat_quota.plan(groups, {"user01": 2 ** 28}) == []


def test_a_home_that_is_no_subvolume_is_named():
    with pytest.raises(ValueError, match="no btrfs subvolume with a quota group for user03, user04"):
        seat_quota.plan(seat_quota.parse_qgroups(QGROUPS), {"user04": 1, "user03": 1, "user01": 1})


def test_space_bytes():
    assert seat_quota.space_bytes("1Gi") == 2 ** 30
    assert seat_quota.space_bytes("1.5Ki") == 1536
    assert seat_quota.space_bytes("256Mi") == 2 ** 28


@pytest.mark.parametrize("text", ["lots", "", "-", "1 Gi", "0", "-1Gi"])
def test_a_quota_that_is_no_positive_quantity_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="disk quota"):
        seat_quota.space_bytes(text)
