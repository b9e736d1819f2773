# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-seat disk quotas on the seats' file system of a login host (Linux quotactl, user quotas).

The seats' homes and the shared temporary folders live on one ext4 file
system of their own (role workshop_users, storage.yml), mounted with
usrquota; each seat gets a hard limit of bytes and of files there, so no
seat can fill the disk of the login host (the control plane's, when logins
share it). The syscall wrapper needs no tool of the host (no quota package).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

from ansible_collections.dralab.workshop.plugins.module_utils.values import parse_quantity

# <linux/quota.h>
_Q_GETQUOTA = 0x800007
_Q_SETQUOTA = 0x800008
_USRQUOTA = 0
_QIF_BLIMITS = 1
_QIF_ILIMITS = 4
QUOTA_BLOCK = 1024  # dqb_bhardlimit counts 1 KiB blocks


class _DqBlk(ctypes.Structure):
    _fields_ = [('dqb_bhardlimit', ctypes.c_uint64), ('dqb_bsoftlimit', ctypes.c_uint64),
                ('dqb_curspace', ctypes.c_uint64), ('dqb_ihardlimit', ctypes.c_uint64),
                ('dqb_isoftlimit', ctypes.c_uint64), ('dqb_curinodes', ctypes.c_uint64),
                ('dqb_btime', ctypes.c_uint64), ('dqb_itime', ctypes.c_uint64), ('dqb_valid', ctypes.c_uint32)]


class QuotaError(Exception):
    """A quota cannot be read or set; the message says what to do."""


def _unescape(field):
    """A path of /proc/self/mountinfo (spaces and the like are octal escapes)."""
    return field.encode('latin-1').decode('unicode_escape')


def mount_source(mount_point, mountinfo_text):
    """(source, fstype) of the file system mounted at mount_point (the last mount there wins)."""
    found = None
    target = os.path.normpath(mount_point)
    for line in mountinfo_text.splitlines():
        before, sep, after = line.partition(' - ')
        fields = before.split()
        if not sep or len(fields) < 5:
            continue
        if os.path.normpath(_unescape(fields[4])) == target:
            rest = after.split()
            if len(rest) >= 2:
                found = (_unescape(rest[1]), rest[0])
    return found


def space_bytes(text):
    """Bytes of a quantity such as 1Gi (whole bytes, rounded up); ValueError naming the value otherwise."""
    try:
        value = parse_quantity(str(text))
    except ValueError:
        raise ValueError('disk quota %r is not a quantity such as 1Gi or 500Mi' % (text,)) from None
    return -(-value.numerator // value.denominator)


def limits_wanted(block_bytes, files):
    """(blocks of 1 KiB, files) for the quota record; block_bytes rounds up to whole blocks."""
    if block_bytes < 0 or files < 0:
        raise ValueError('quota limits must not be negative (got %s bytes, %s files)' % (block_bytes, files))
    return -(-block_bytes // QUOTA_BLOCK), files


def plan(current, wanted):
    """Users whose (block, file) hard limits differ from wanted; current maps user -> (blocks, files)."""
    return sorted(user for user, limits in current.items() if tuple(limits) != tuple(wanted))


def _libc():
    return ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)


def _quotactl(command, device, uid, record):
    cmd = ctypes.c_int(((command << 8) | _USRQUOTA) & 0xFFFFFFFF)
    result = _libc().quotactl(cmd, device.encode(), ctypes.c_int(uid), ctypes.byref(record))
    if result != 0:
        code = ctypes.get_errno()
        hint = ''
        if code == errno.ESRCH:
            hint = ' User quotas are not on for it: mount it with usrquota (ext4 made with -O quota).'
        raise QuotaError('quotactl on %s for uid %s failed: %s.%s' % (device, uid, os.strerror(code), hint))


def get_limits(device, uid):
    """(block hard limit in KiB blocks, file hard limit, bytes used, files used) of uid."""
    record = _DqBlk()
    _quotactl(_Q_GETQUOTA, device, uid, record)
    return record.dqb_bhardlimit, record.dqb_ihardlimit, record.dqb_curspace, record.dqb_curinodes


def set_limits(device, uid, blocks, files):
    """Hard (and soft) limits of uid: blocks of 1 KiB and files."""
    record = _DqBlk(dqb_bhardlimit=blocks, dqb_bsoftlimit=blocks, dqb_ihardlimit=files, dqb_isoftlimit=files,
                    dqb_valid=_QIF_BLIMITS | _QIF_ILIMITS)
    _quotactl(_Q_SETQUOTA, device, uid, record)
