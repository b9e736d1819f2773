#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_handover
short_description: Hand the workshop seats of a login host over to the next group in one run
version_added: 0.1.0
description:
  - For every seat of O(seats) whose account is a member of O(group) (an account the role C(workshop_users) made;
    any other account is left alone), in one module run and in this order, its password is locked (one
    C(chpasswd -e) for all), its crontabs (O(cron_spool_dirs)), its linger flag and its at jobs are removed, its
    sessions are ended (C(loginctl terminate-user)) and every process of its user ID is killed until none is left,
    every entry it owns in O(tmp_dirs) is removed, and its home below O(home_base) is removed.
  - With O(remove), the seat's systemd drop-ins (C(user-<uid>.slice.d), C(user@<uid>.service.d)), its account and
    its own group are removed too.
  - The temporary folders are walked through folder handles opened without following links and without crossing
    into another file system, and only entries owned by a handed-over seat are removed, so a link another seat
    planted there leads nowhere. The homes are removed once no process of the seat is left.
  - Module C(seat_accounts) gives the seats their accounts, passwords and fresh homes again.
author: dralab.workshop maintainers (@dralab)
options:
  seats:
    description: The seats to hand over on this host.
    type: list
    elements: str
    required: true
  group:
    description: The shared group of the seats; only its members are handed over.
    type: str
    required: true
  home_base:
    description: The folder that holds the homes, C(<home_base>/<seat>).
    type: path
    required: true
  cron_spool_dirs:
    description: Folders where cron keeps one crontab per user, named after the user (role C(workshop_users) passes
      its C(workshop_users_cron_spool_dirs)).
    type: list
    elements: path
    required: true
  tmp_dirs:
    description: Shared folders from which every entry a handed-over seat owns is removed (role C(workshop_users)
      passes its C(workshop_users_handover_tmp_dirs)).
    type: list
    elements: path
    required: true
  remove:
    description: Also remove the seats' systemd drop-ins, accounts and own groups.
    type: bool
    default: false
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports, per seat, what would be locked, ended, killed and removed; changes nothing.
  diff_mode:
    support: none
    details:
      - RV(changes) says, per seat, what changed.
notes:
  - Runs on the login host with root rights (C(become)). Needs the shadow tools (chpasswd, userdel, groupdel);
    uses C(loginctl) and C(atq)/C(atrm) where the host has them.
  - Reloading systemd after drop-ins were removed is the caller's (a handler).
"""

EXAMPLES = r"""
- name: Hand two seats over to the next group
  dralab.workshop.seat_handover:
    seats: [user01, user02]
    group: workshop-seats
    home_base: /home
    cron_spool_dirs: [/var/spool/cron/crontabs]
    tmp_dirs: [/tmp, /var/tmp, /dev/shm]

- name: Remove every seat account of this host
  dralab.workshop.seat_handover:
    seats: "{{ seat_names }}"
    group: workshop-seats
    home_base: /home
    cron_spool_dirs: [/var/spool/cron/crontabs]
    tmp_dirs: [/tmp, /var/tmp, /dev/shm]
    remove: true
"""

RETURN = r"""
seats:
  description: The seats handed over (those of O(seats) with an account in O(group) here).
  returned: success
  type: list
  elements: str
  sample: [user01, user02]
changes:
  description: Seat -> what changed (or, in check mode, would change), in words; seats with no change are left out.
  returned: success
  type: dict
  sample: {user01: [password locked, sessions ended, processes killed, home removed]}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import accounts, handover
from ansible_collections.dralab.workshop.plugins.module_utils.values import seat_name_problem


def argspec():
    return dict(
        seats=dict(type='list', elements='str', required=True),
        group=dict(type='str', required=True),
        home_base=dict(type='path', required=True),
        cron_spool_dirs=dict(type='list', elements='path', required=True),
        tmp_dirs=dict(type='list', elements='path', required=True),
        remove=dict(type='bool', default=False),
    )


def run(module):
    problems = ['seats: %s' % problem for problem in map(seat_name_problem, module.params['seats']) if problem]
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.')
    params = dict(module.params, shadow_file='/etc/shadow', systemd_dir='/etc/systemd/system',
                  linger_dir=handover.LINGER_DIR, proc='/proc')

    def command(argv, data=None):
        return module.run_command(argv, data=data, binary_data=data is not None)

    work = handover.Handover(command, params, module.check_mode)
    try:
        seats = work.converge()
    except (accounts.AccountError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=work.changes)
    module.exit_json(changed=bool(work.changes), seats=seats, changes=work.changes)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
