#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_storage
short_description: Converge the seats' own btrfs file system on a login host in one run
version_added: 0.1.0
description:
  - In one module run, the seats' file system on a login host, the homes' base (O(path)) and the shared temporary
    folders of O(shared) on a btrfs image of its own, so no seat fills the disk the login host lives on.
  - The image's folder is root's, mode 0700. The image O(image) is made (C(truncate -s), C(mkfs.btrfs) with
    O(label), renamed into place) only when there is none; an existing image holds the seats' files and is never
    touched.
  - It is mounted at O(path) the way M(ansible.posix.mount) with C(state=mounted) mounts it, so a host converged
    by that module finds its line as it is. C(/etc/fstab) gets the line C(<image> <path> btrfs <mount_options> 0 0)
    (a line for the same mount point with other fields is replaced in place, every other line is kept, and a line
    with the same fields in other whitespace counts as the line); O(path) is made when missing and mounted when
    C(/proc/self/mountinfo) has no mount there, or remounted when its line changed. Then O(path) is root's, mode
    0755, and quotas are turned on when C(btrfs qgroup show) fails.
  - Each shared folder gets a subvolume C(<path>/<name>) (made when missing), root's, mode 1777 (a link there is
    refused, never followed), bound over the folder the same way (C(<path>/<name> <folder> none bind 0 0)),
    unless the folder is a tmpfs (C(stat --file-system)), which uses memory the seat's slice limits and stays as it
    is. A folder bound already reads as btrfs, so a rerun finds its binding in place.
  - A rerun with nothing to change runs no command that changes anything and writes nothing.
author: dralab.workshop maintainers (@dralab)
options:
  image:
    description: The btrfs image file that holds the seats' file system.
    type: path
    required: true
  size:
    description: The size of a new image, as C(truncate -s) takes it (a sparse file). An existing image keeps its size.
    type: str
    required: true
  label:
    description: The file system label of a new image (C(mkfs.btrfs -L)).
    type: str
    default: dralab-seats
  path:
    description: Where the file system is mounted, the seats' home base.
    type: path
    required: true
  mount_options:
    description: The mount options of the image, the fourth field of its C(/etc/fstab) line.
    type: str
    default: loop,nodev,nosuid,discard
  shared:
    description:
      - Shared temporary folder -> the name of its subvolume below O(path), one folder name (no C(/), not C(..)).
    type: dict
    default: {}
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads C(/etc/fstab), the mounts, the shared folders' file system types and, when the image is mounted
        already, the file system itself (the quota groups, the subvolumes); reports what would change. Before the
        image is made and mounted, its steps are reported as they would be done.
  diff_mode:
    support: none
    details:
      - RV(changes) says what changed.
notes:
  - Runs on the login host as root (C(become)). Needs btrfs-progs (C(btrfs), C(mkfs.btrfs)), coreutils
    (C(truncate), C(stat)) and util-linux (C(mount)).
  - The quota limits of the subvolumes are module M(dralab.workshop.seat_disk_quota)'s.
"""

EXAMPLES = r"""
- name: Converge the seats' file system of this login host
  dralab.workshop.seat_storage:
    image: /var/lib/dralab/seat-storage.img
    size: 16G
    path: /home/seats
    shared:
      /tmp: .shared-tmp
      /var/tmp: .shared-var-tmp
"""

RETURN = r"""
changes:
  description: What changed (or, in check mode, would change), in words, in the order it was done.
  returned: always
  type: list
  elements: str
  sample: [folder /var/lib/dralab made, image made, fstab line for /home/seats, mounted /home/seats, quotas on,
           subvolume .shared-tmp made, .shared-tmp mode 1777, fstab line for /tmp, /tmp bound]
bound:
  description: The shared folders bound (or, in check mode, to be bound) to the seats' file system.
  returned: success
  type: list
  elements: str
  sample: [/var/tmp]
tmpfs:
  description: The shared folders left as they are because they are a tmpfs.
  returned: success
  type: list
  elements: str
  sample: [/tmp]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import storage


def argspec():
    return dict(
        image=dict(type='path', required=True),
        size=dict(type='str', required=True),
        label=dict(type='str', default='dralab-seats'),
        path=dict(type='path', required=True),
        mount_options=dict(type='str', default='loop,nodev,nosuid,discard'),
        shared=dict(type='dict', default={}),
    )


def run(module):
    problems = storage.input_problems(module.params)
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.', changes=[])
    work = storage.Storage(module.run_command, module.params, module.check_mode)
    try:
        work.converge()
    except (storage.StorageError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=work.changes)
    module.exit_json(changed=bool(work.changes), changes=work.changes, bound=work.bound, tmpfs=work.tmpfs)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
