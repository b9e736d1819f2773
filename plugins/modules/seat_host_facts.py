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
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import host_facts


def argspec():
    return dict(group=dict(type='str', required=True), programs=dict(type='list', elements='str', default=[]))


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    module.exit_json(changed=False, **host_facts.read(module.params['group'], module.params['programs'],
                                                      module.get_bin_path))


if __name__ == '__main__':
    main()
