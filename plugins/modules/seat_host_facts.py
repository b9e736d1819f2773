#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_host_facts
short_description: Read a login host's accounts, the seat group and the programs the seat work needs, in one run
version_added: 0.1.0
description:
  - Sets C(getent_passwd) (every account) and C(getent_group) (the group O(group), or nothing when it does not
    exist) in the format M(ansible.builtin.getent) gives them, and returns which of O(programs) the host lacks.
  - Says what the accounts mean for the seats (a seat account is a member of O(group), which only root changes).
    RV(foreign_accounts) lists the accounts named like one of O(seats) that are no member (someone else's, never to be
    taken over); RV(leaving_accounts) holds the members named in O(leaving) with their user IDs.
  - One module run where M(ansible.builtin.getent) twice and a command would be three. Changes nothing.
author: dralab.workshop maintainers (@dralab)
options:
  group:
    description: The seats' group, whose members mark an account as a seat.
    type: str
    required: true
  programs:
    description: Programs looked for as Ansible looks for one (the PATH, then the sbin folders).
    type: list
    elements: str
    default: []
  seats:
    description: The seats whose accounts belong on this host.
    type: list
    elements: str
    default: []
  leaving:
    description: Names whose seat accounts are to go from this host (seats that have another login host, or every
      seat on a teardown).
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the same in check mode.
  diff_mode:
    support: none
notes:
  - Accounts from every NSS source, as C(getent passwd) lists them.
"""

EXAMPLES = r"""
- name: Read the accounts, the seat group and the btrfs tools of the login host
  dralab.workshop.seat_host_facts:
    group: workshop
    programs: [btrfs]
    seats: [user01, user03]
    leaving: [user02]
  register: seat_host
"""

RETURN = r"""
ansible_facts:
  description: C(getent_passwd) and C(getent_group), as M(ansible.builtin.getent) sets them.
  returned: success
  type: dict
  sample:
    getent_passwd: {user01: [x, '1001', '1001', dralab.workshop seat, /home/user01, /bin/bash]}
    getent_group: {workshop: [x, '1000', 'user01,user02']}
programs_missing:
  description: The programs of O(programs) the host does not have.
  returned: success
  type: list
  elements: str
  sample: [btrfs]
foreign_accounts:
  description: The names of O(seats), in their order, whose account exists and is no member of O(group).
  returned: success
  type: list
  elements: str
  sample: [user03]
leaving_accounts:
  description: The accounts named in O(leaving) that are members of O(group), with their user IDs.
  returned: success
  type: dict
  sample: {user02: '1002'}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import host_facts


def argspec():
    return dict(group=dict(type='str', required=True), programs=dict(type='list', elements='str', default=[]),
                seats=dict(type='list', elements='str', default=[]),
                leaving=dict(type='list', elements='str', default=[]))


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    params = module.params
    module.exit_json(changed=False, **host_facts.read(params['group'], params['programs'], module.get_bin_path,
                                                      params['seats'], params['leaving']))


if __name__ == '__main__':
    main()
