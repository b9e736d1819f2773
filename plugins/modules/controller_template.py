#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: controller_template
short_description: Write a template's result to a file on the controller, in the controller's own process
version_added: 0.1.0
description:
  - Renders O(src) (found as M(ansible.builtin.template) finds it, in the role's C(templates) folder first) with the
    task's variables and writes the result to O(dest) on the controller, replaced whole (a new file renamed over the
    old one, with its mode from the start), only when the content or the mode differs.
  - For the instructor's own files (the credential sheet, the seat cards). M(ansible.builtin.template) with
    C(delegate_to=localhost) runs two modules on the controller for each file; this runs none.
  - Whatever host the task runs for, the file is written on the controller; C(become) does not apply.
author: dralab.workshop maintainers (@dralab)
options:
  src:
    description: The template (Jinja2), a path or a name in the role's C(templates) folder.
    type: path
    required: true
  dest:
    description: The file on the controller (C(~) expanded). Its folder must exist.
    type: path
    required: true
  mode:
    description: The file's mode, octal, as a string.
    type: str
    default: "0600"
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports whether the file would change; writes nothing.
  diff_mode:
    support: full
    details:
      - The old and the new content (hide it with C(no_log) when the file holds secrets).
notes:
  - The module on a node only refuses to run; the action plugin of the same name does the work.
seealso:
  - module: ansible.builtin.template
"""

EXAMPLES = r"""
- name: Write the credential sheet
  dralab.workshop.controller_template:
    src: credentials.csv.j2
    dest: "{{ workshop_users_artifacts_dir }}/credentials.csv"
    mode: "0600"
  run_once: true
  no_log: true
"""

RETURN = r"""
dest:
  description: The file written (or that would be), C(~) expanded.
  returned: success
  type: str
  sample: /home/instructor/.dralab/credentials.csv
"""

from ansible_collections.dralab.workshop.plugins.module_utils.action_only import refuse_to_run


def argspec():
    return dict(src=dict(type='path', required=True), dest=dict(type='path', required=True),
                mode=dict(type='str', default='0600'))


def main():
    refuse_to_run('controller_template', argspec())


if __name__ == '__main__':
    main()
