# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's half of seat_accounts: read the seats' kubeconfigs and the demos there and hand them to the
module on the login host. The documentation is the module's (plugins/modules/seat_accounts.py)."""

from __future__ import annotations

import base64
import os
import stat

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.dralab.workshop.plugins.module_utils.files import tree
from ansible_collections.dralab.workshop.plugins.modules.seat_accounts import argspec

MODULE = 'dralab.workshop.seat_accounts'


def read_kubeconfigs(folder, seats):
    """Seat -> the text of folder/<seat>.kubeconfig, for the seats that have one."""
    found = {}
    for seat in seats:
        try:
            with open(os.path.join(folder, seat + '.kubeconfig'), encoding='utf-8') as handle:
                found[seat] = handle.read()
        except FileNotFoundError:
            continue
    return found


def read_demos(folder, demos):
    """Path below ~/demos -> its base64 content and the mode a seat's copy gets (0700 for a program, else 0600)."""
    files = {}
    for rel, path in tree.local_files([(os.path.join(folder, demo), '') for demo in demos]).items():
        with open(path, 'rb') as handle:
            content = handle.read()
        executable = os.stat(path).st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        files[rel] = {'content': base64.b64encode(content).decode('ascii'), 'mode': '0700' if executable else '0600'}
    return files


class ActionModule(ActionBase):

    TRANSFERS_FILES = False  # the bytes travel in the module's arguments

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=argspec())
        for name in ('kubeconfigs', 'demo_files'):
            if args.get(name) is not None:
                raise AnsibleActionFail('%s: set by the action; give kubeconfig_dir, demos and demos_dir instead' % name)
        if not args.get('kubeconfig_dir'):
            raise AnsibleActionFail('kubeconfig_dir: name the folder on the controller that holds <seat>.kubeconfig')
        if args['demos'] and not args.get('demos_dir'):
            raise AnsibleActionFail('demos_dir: name the folder on the controller that holds the demos %s'
                                    % ', '.join(args['demos']))
        module_args = {key: value for key, value in args.items()
                       if key not in ('kubeconfig_dir', 'demos', 'demos_dir') and value is not None}
        module_args['kubeconfigs'] = read_kubeconfigs(args['kubeconfig_dir'], args['seats'])
        try:
            module_args['demo_files'] = read_demos(args['demos_dir'], args['demos']) if args['demos'] else {}
        except ValueError as exc:
            raise AnsibleActionFail('demos: %s' % exc) from None
        try:
            answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        answer.pop('invocation', None)  # it would repeat every kubeconfig and demo
        result.update(answer)
        return result
