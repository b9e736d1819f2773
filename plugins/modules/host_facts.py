#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_facts
short_description: Set many host variables at once, as ansible.builtin.set_fact sets one per key
version_added: 0.1.0
description:
  - Sets every key of O(facts) as a variable of the host, with the precedence M(ansible.builtin.set_fact) gives
    (above inventory, play and role variables), where M(ansible.builtin.set_fact) needs the names written in the
    task. With C(delegate_to) and C(delegate_facts), the variables go to the delegated host.
  - Handing a dict of resolved settings to the hosts of a lab this way is one task run per host, where a
    M(ansible.builtin.set_fact) loop over hosts and keys is one per host and key.
  - Runs on the controller as an action; contacts no host. Reports no change.
author: dralab.workshop maintainers (@dralab)
options:
  facts:
    description: Variable name -> value. Every name must be a valid variable name.
    type: dict
    required: true
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Sets the variables in check mode too, as M(ansible.builtin.set_fact) does.
  diff_mode:
    support: none
notes:
  - The module on a node only refuses to run; the action plugin of the same name does the work.
"""

EXAMPLES = r"""
- name: Hand the resolved settings to every host of the lab
  dralab.workshop.host_facts:
    facts: "{{ preflight_result.settings }}"
  delegate_to: "{{ item }}"
  delegate_facts: true
  loop: "{{ groups['all'] }}"
"""

RETURN = r"""
names:
  description: The names of the variables set, sorted.
  returned: success
  type: list
  elements: str
  sample: [dralab_devices_per_node, dralab_seats]
"""

from ansible_collections.dralab.workshop.plugins.module_utils.action_only import refuse_to_run


def argspec():
    return dict(facts=dict(type='dict', required=True))


def main():
    refuse_to_run('host_facts', argspec())


if __name__ == '__main__':
    main()
