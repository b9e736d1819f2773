# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""seat_quota: which device holds the seats' file system, and which seats' limits need setting.

The quotactl calls themselves run on the lab's login hosts (tests/lab/test_seat_host.py, the disk-fill attack).
"""

from __future__ import annotations

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils import seat_quota

MOUNTINFO = """\
22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
95 22 7:0 / /home/seats rw,nosuid,nodev,relatime shared:40 - ext4 /dev/loop0 rw,quota,usrquota,discard
96 22 7:0 /.shared/tmp /tmp rw,nosuid,nodev,relatime shared:40 - ext4 /dev/loop0 rw,quota,usrquota,discard
97 22 0:50 / /mnt/with\\040space rw - tmpfs tmp\\040fs rw
"""


def test_mount_source_of_the_seats_file_system():
    assert seat_quota.mount_source("/home/seats", MOUNTINFO) == ("/dev/loop0", "ext4")
    assert seat_quota.mount_source("/home/seats/", MOUNTINFO) == ("/dev/loop0", "ext4")
    assert seat_quota.mount_source("/tmp", MOUNTINFO) == ("/dev/loop0", "ext4")
    assert seat_quota.mount_source("/mnt/with space", MOUNTINFO) == ("tmp fs", "tmpfs")
    assert seat_quota.mount_source("/home", MOUNTINFO) is None


def test_limits_and_plan():
    assert seat_quota.space_bytes("1Gi") == 2 ** 30
    assert seat_quota.space_bytes("1.5Ki") == 1536
    assert seat_quota.limits_wanted(2 ** 30, 50000) == (2 ** 20, 50000)
    assert seat_quota.limits_wanted(1025, 1) == (2, 1)
    current = {"user01": (2 ** 20, 50000), "user02": (0, 0), "user03": (2 ** 20, 10)}
    assert seat_quota.plan(current, (2 ** 20, 50000)) == ["user02", "user03"]


@pytest.mark.parametrize("text", ["lots", "", "-", "1 Gi"])
def test_a_quota_that_is_no_quantity_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="disk quota .* is not a quantity"):
        seat_quota.space_bytes(text)


def test_negative_limits_are_refused():
    with pytest.raises(ValueError, match="must not be negative"):
        seat_quota.limits_wanted(-1, 5)
