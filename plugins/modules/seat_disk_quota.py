#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_disk_quota
short_description: Give each workshop seat a disk quota on the seats' file system of a login host
version_added: 0.1.0
description:
  - Sets the hard (and soft) user quota of each account of O(users) on the file system mounted at O(path): at most
    O(space) of disk and O(files) files. A seat that reaches it gets C(Disk quota exceeded); nothing else on the host
    is affected.
  - The file system must be mounted with C(usrquota) (ext4 made with C(-O quota)); role C(workshop_users) makes and
    mounts it. Calls C(quotactl) directly, so no quota package is needed.
  - Changes only the users whose limits differ, and reports them in RV(changed_users).
author: dralab.workshop maintainers (@dralab)
options:
  path:
    description: Mount point of the seats' file system.
    type: path
    required: true
  users:
    description: Account names to limit (the seats); each must exist on the host.
    type: list
    elements: str
    required: true
  space:
    description: Hard limit of disk space per user, a Kubernetes-style quantity such as V(1Gi) or V(500Mi) (rounded up
      to KiB).
    type: str
    required: true
  files:
    description: Hard limit of files (inodes) per user.
    type: int
    required: true
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the current limits and reports which would change.
  diff_mode:
    support: none
notes:
  - Runs on the login host with root rights (C(become)).
"""

EXAMPLES = r"""
- name: Give every seat 1 GiB and 50000 files on the seats' file system
  dralab.workshop.seat_disk_quota:
    path: /home/seats
    users: [user01, user02]
    space: 1Gi
    files: 50000
"""

RETURN = r"""
changed_users:
  description: Users whose limits were (or, in check mode, would be) set.
  returned: success
  type: list
  elements: str
usage:
  description: Per user, the bytes and files in use on the file system.
  returned: success
  type: dict
  sample: {user01: {bytes: 40960, files: 12}}
"""

import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils import seat_quota


def argspec():
    return dict(
        path=dict(type='path', required=True),
        users=dict(type='list', elements='str', required=True),
        space=dict(type='str', required=True),
        files=dict(type='int', required=True),
    )


def run(module):
    params = module.params
    try:
        wanted = seat_quota.limits_wanted(seat_quota.space_bytes(params['space']), params['files'])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    with open('/proc/self/mountinfo') as handle:
        mounted = seat_quota.mount_source(params['path'], handle.read())
    if not mounted:
        module.fail_json(msg='%s is not a mount point: the seats\' file system is not mounted there (role '
                             'workshop_users makes and mounts it).' % params['path'])
    device, fstype = mounted
    uids = {}
    for user in params['users']:
        try:
            uids[user] = pwd.getpwnam(user).pw_uid
        except KeyError:
            module.fail_json(msg='seat account %s does not exist on this host: create the accounts first.' % user)
    try:
        current = {user: seat_quota.get_limits(device, uid) for user, uid in uids.items()}
        changes = seat_quota.plan({user: limits[:2] for user, limits in current.items()}, wanted)
        if not module.check_mode:
            for user in changes:
                seat_quota.set_limits(device, uids[user], *wanted)
    except seat_quota.QuotaError as exc:
        module.fail_json(msg='%s (%s file system at %s)' % (exc, fstype, params['path']))
    usage = {user: {'bytes': limits[2], 'files': limits[3]} for user, limits in current.items()}
    module.exit_json(changed=bool(changes), changed_users=changes, usage=usage)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
