#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_disk_quota
short_description: Limit the disk space of each seat home on the seats' btrfs file system of a login host
version_added: 0.1.0
description:
  - Sets the btrfs quota group limit (bytes referenced) of each subvolume of O(limits) on the file system mounted at
    O(path), for example each seat's home. A seat that reaches it gets C(Disk quota exceeded); nothing else on the
    host is affected.
  - Quotas must be on (C(btrfs quota enable)) and each entry must be a subvolume; role C(workshop_users) makes the
    file system, the subvolumes and turns quotas on. Uses the C(btrfs) command (package btrfs-progs).
  - Changes only the limits that differ and reports them in RV(changed_paths).
author: dralab.workshop maintainers (@dralab)
options:
  path:
    description: Mount point of the seats' file system.
    type: path
    required: true
  limits:
    description:
      - Subvolume path relative to O(path) -> its limit, a Kubernetes-style quantity such as V(1Gi) or V(500Mi).
    type: dict
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
- name: Give two seats 1 GiB each and the shared /tmp 2 GiB
  dralab.workshop.seat_disk_quota:
    path: /home/seats
    limits:
      user01: 1Gi
      user02: 1Gi
      .shared-tmp: 2Gi
"""

RETURN = r"""
changed_paths:
  description: Subvolumes whose limit was (or, in check mode, would be) set.
  returned: success
  type: list
  elements: str
usage:
  description: Per subvolume of O(limits), the bytes it references now.
  returned: success
  type: dict
  sample: {user01: 40960}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import quota as seat_quota


def argspec():
    return dict(
        path=dict(type='path', required=True),
        limits=dict(type='dict', required=True),
    )


def run(module):
    params = module.params
    base = params['path'].rstrip('/') or '/'
    try:
        wanted = {str(path): seat_quota.space_bytes(space) for path, space in params['limits'].items()}
    except ValueError as exc:
        module.fail_json(msg='limits: %s' % exc)
    btrfs = module.get_bin_path('btrfs', required=True)
    rc, out, err = module.run_command([btrfs, 'qgroup', 'show', '--raw', '-re', base])
    if rc != 0:
        module.fail_json(msg='Cannot read the quota groups of %s: %s. It must be the seats\' btrfs file system with '
                             'quotas on (btrfs quota enable %s).' % (base, (err or out).strip(), base))
    groups = seat_quota.parse_qgroups(out)
    try:
        changes = seat_quota.plan(groups, wanted)
    except ValueError as exc:
        module.fail_json(msg='%s (under %s)' % (exc, base))
    if not module.check_mode:
        for path in changes:
            rc, out, err = module.run_command([btrfs, 'qgroup', 'limit', str(wanted[path]), '%s/%s' % (base, path)])
            if rc != 0:
                module.fail_json(msg='btrfs qgroup limit %s %s/%s failed: %s'
                                 % (wanted[path], base, path, (err or out).strip()))
    module.exit_json(changed=bool(changes), changed_paths=changes,
                     usage={path: groups[path]['referenced'] for path in wanted})


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
