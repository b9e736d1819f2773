# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The module half of an action that runs on the controller only (host_facts, controller_template): its arguments
are checked as a module's, then it refuses to run on a node."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def refuse_to_run(name, argument_spec):
    """Fail the module run of the action `name` (a node ran the module instead of the controller the action)."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    module.fail_json(msg='dralab.workshop.%s runs on the controller as an action plugin: call it from a playbook '
                         'task, with the collection installed' % name)
