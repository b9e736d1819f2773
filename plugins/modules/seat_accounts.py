#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_accounts
short_description: Converge the workshop seats' Linux accounts, homes and home files on a login host in one run
version_added: 0.1.0
description:
  - For every seat of O(seats) on the login host, in one module run, its own primary group and the shared group
    O(group) (its only other group); an account with the instructor's O(comment) and O(shell) and the password
    hash of O(passwords); a private home below O(home_base) (owner the seat, mode 0700; a btrfs subvolume with
    O(home_subvolumes)); C(~/.kube/config) with the seat's kubeconfig (0600, in a 0700 C(~/.kube)); the demos it
    lacks below C(~/demos); and its systemd drop-ins (O(slice_dropin), O(user_manager_dropin)).
  - The accounts are read once and only what differs is changed (groupadd, useradd, usermod; every password with
    one C(chpasswd -e), so no hash is ever on a command line). A rerun with nothing to change writes nothing.
  - Everything inside a home is written as the seat, in a child process with the seat's user and group IDs, so a
    link the seat put there (C(~/.kube), C(~/.kube/config)) is replaced, never followed, and can only lead where
    the seat itself may write. A home made in this run also gets the files of O(skeleton) (as the seat); an
    existing home keeps its content (the demos and the kubeconfig aside).
  - The work is done by an action plugin on the controller, which reads the kubeconfigs and the demos there; the
    module of the same name runs on the login host as root.
author: dralab.workshop maintainers (@dralab)
options:
  seats:
    description: The seats whose accounts this host holds.
    type: list
    elements: str
    required: true
  group:
    description: The shared group of the seats (sshd matches it); made when missing.
    type: str
    required: true
  comment:
    description: The accounts' comment (GECOS).
    type: str
    default: dralab.workshop seat
  shell:
    description: The accounts' login shell.
    type: path
    required: true
  home_base:
    description: The folder the homes are made in, C(<home_base>/<seat>).
    type: path
    required: true
  home_subvolumes:
    description: Make each new home a btrfs subvolume (O(home_base) is the seats' btrfs file system).
    type: bool
    default: false
  skeleton:
    description: The folder whose files a home made in this run gets.
    type: path
    default: /etc/skel
  passwords:
    description: Seat -> its password hash as /etc/shadow holds it. Every seat of O(seats) needs one.
    type: dict
    required: true
  kubeconfig_dir:
    description:
      - The folder on the controller that holds C(<seat>.kubeconfig) for every seat. Outside check mode every seat
        needs one; in check mode a seat without one keeps its C(~/.kube/config). Needed in a task; the action
        plugin turns it into O(kubeconfigs).
    type: path
  demos:
    description: The demos (folders of O(demos_dir)) every home gets below C(~/demos), only the files it lacks.
    type: list
    elements: str
    default: []
  demos_dir:
    description: The folder on the controller that holds the O(demos).
    type: path
  slice_dropin:
    description:
      - The content of each seat's C(/etc/systemd/system/user-<uid>.slice.d/50-dralab-seat.conf).
    type: str
    required: true
  user_manager_dropin:
    description:
      - The content of each seat's C(/etc/systemd/system/user@<uid>.service.d/50-dralab-seat.conf); empty removes
        that folder.
    type: str
    default: ''
  kubeconfigs:
    description: Set by the action plugin from O(kubeconfig_dir), not in a task. Seat -> its kubeconfig.
    type: dict
  demo_files:
    description:
      - Set by the action plugin from O(demos) and O(demos_dir), not in a task. Path below C(~/demos) ->
        C(content) (base64) and C(mode).
    type: dict
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the accounts and, as each seat, its home; reports what would change. A seat without an account yet
        is reported as made, and nothing of its home is read.
  diff_mode:
    support: none
    details:
      - RV(changes) says, per seat, what changed.
notes:
  - Needs the shadow tools (groupadd, useradd, usermod, chpasswd) and, with O(home_subvolumes), btrfs.
  - Reloading systemd after a drop-in changed is the caller's (a handler).
"""

EXAMPLES = r"""
- name: Converge the seat accounts of this login host
  dralab.workshop.seat_accounts:
    seats: [user01, user02]
    group: workshop-seats
    shell: /bin/bash
    home_base: /home
    passwords: "{{ seat_password_hashes }}"
    kubeconfig_dir: "{{ playbook_dir }}/../artifacts/seats"
    demos: [prioritized-list]
    demos_dir: "{{ playbook_dir }}/../docs/demos"
    slice_dropin: |
      [Slice]
      MemoryMax=2G
  no_log: true
"""

RETURN = r"""
changes:
  description: Seat -> what changed (or, in check mode, would change), in words; seats with no change are left out.
  returned: success
  type: dict
  sample: {user01: [account made, password, home owner, "~/.kube made", "~/.kube/config written"]}
uids:
  description: Seat -> its user ID, for the seats that have an account.
  returned: success
  type: dict
  sample: {user01: 1001}
"""

import base64
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import accounts, home_files
from ansible_collections.dralab.workshop.plugins.module_utils.values import seat_name_problem


def argspec():
    return dict(
        seats=dict(type='list', elements='str', required=True),
        group=dict(type='str', required=True),
        comment=dict(type='str', default='dralab.workshop seat'),
        shell=dict(type='path', required=True),
        home_base=dict(type='path', required=True),
        home_subvolumes=dict(type='bool', default=False),
        skeleton=dict(type='path', default='/etc/skel'),
        passwords=dict(type='dict', required=True, no_log=True),
        kubeconfig_dir=dict(type='path'),
        demos=dict(type='list', elements='str', default=[]),
        demos_dir=dict(type='path'),
        slice_dropin=dict(type='str', required=True),
        user_manager_dropin=dict(type='str', default=''),
        kubeconfigs=dict(type='dict', no_log=True),
        demo_files=dict(type='dict'),
    )


def input_problems(params, check_mode):
    """What is wrong with the arguments, before anything is changed."""
    problems = ['seats: %s' % problem for problem in map(seat_name_problem, params['seats']) if problem]
    missing = [seat for seat in params['seats'] if not params['passwords'].get(seat)]
    if missing:
        problems.append('passwords: no hash for %s' % ', '.join(missing))
    if params['kubeconfigs'] is None:
        problems.append('kubeconfigs is missing: run seat_accounts as a task (its action plugin reads kubeconfig_dir)')
    elif not check_mode:
        missing = [seat for seat in params['seats'] if seat not in params['kubeconfigs']]
        if missing:
            problems.append('kubeconfig_dir: no kubeconfig for %s (the Kubernetes side of users.yml writes them)'
                            % ', '.join(missing))
    return problems


def run(module):
    params = dict(module.params, shadow_file='/etc/shadow', systemd_dir='/etc/systemd/system')
    problems = input_problems(params, module.check_mode)
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.')

    def command(argv, data=None):
        rc, out, err = module.run_command(argv, data=data, binary_data=data is not None)
        if rc != 0:
            raise accounts.AccountError('%s failed (rc %d): %s' % (' '.join(argv[:3]), rc, (err or out).strip()))

    kubeconfigs = {seat: text.encode('utf-8') for seat, text in params['kubeconfigs'].items()}
    demos = {rel: (base64.b64decode(entry['content']), int(entry['mode'], 8))
             for rel, entry in (params['demo_files'] or {}).items()}
    skeleton = home_files.skeleton_files(params['skeleton']) if os.path.isdir(params['skeleton']) else {}
    converger = accounts.Converger(command, params, module.check_mode)
    try:
        uids = converger.converge(kubeconfigs, demos, skeleton)
    except (accounts.AccountError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=converger.changes)
    module.exit_json(changed=bool(converger.changes), changes=converger.changes, uids=uids)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
