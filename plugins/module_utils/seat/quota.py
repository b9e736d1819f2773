# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Disk quotas of the seats' file system on a login host (btrfs quota groups, one subvolume per seat).

The seats' homes and the shared temporary folders live on one btrfs file
system of their own (role workshop_users, storage.yml), each home and each
shared folder a subvolume; its quota group limits the bytes it references, so
no seat can fill the disk of the login host (the control plane's, when logins
share it). btrfs because its quotas need nothing beyond the file system (ext4
and XFS user quotas need quota support that not every kernel has built in).
"""

from __future__ import annotations

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_quantity


def space_bytes(text):
    """Bytes of a quantity such as 1Gi (whole bytes, rounded up); ValueError naming the value otherwise."""
    try:
        value = parse_quantity(str(text))
    except ValueError:
        raise ValueError('disk quota %r is not a quantity such as 1Gi or 500Mi' % (text,)) from None
    if value <= 0:
        raise ValueError('disk quota %r must be more than 0' % (text,))
    return -(-value.numerator // value.denominator)


def parse_qgroups(text):
    """{subvolume path: {'referenced': bytes, 'limit': bytes or None}} from `btrfs qgroup show --raw -re PATH`.

    Paths are relative to the file system's top; the top itself (<toplevel>)
    and quota groups of deleted subvolumes (<stale>) are left out.
    """
    groups = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or '/' not in fields[0] or not fields[1].isdigit():
            continue
        path = ' '.join(fields[5:])
        if path.startswith('<'):
            continue
        limit = None if fields[3] == 'none' else int(fields[3])
        groups[path] = {'referenced': int(fields[1]), 'limit': limit}
    return groups


def plan(groups, wanted):
    """Subvolumes of wanted (path -> bytes) whose limit differs; missing ones raise ValueError naming them."""
    missing = sorted(path for path in wanted if path not in groups)
    if missing:
        raise ValueError('no btrfs subvolume with a quota group for %s: each must be a subvolume of the seats\' '
                         'file system (role workshop_users makes them)' % ', '.join(missing))
    return sorted(path for path, limit in wanted.items() if groups[path]['limit'] != limit)
