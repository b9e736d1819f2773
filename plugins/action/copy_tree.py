# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's half of copy_tree: list the sources and their digests, ask the node which files it needs, send
only those. The documentation is the module's (plugins/modules/copy_tree.py)."""

from __future__ import annotations

import base64

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.dralab.workshop.plugins.module_utils.files import tree
from ansible_collections.dralab.workshop.plugins.modules.copy_tree import argspec

MODULE = 'dralab.workshop.copy_tree'


class ActionModule(ActionBase):

    TRANSFERS_FILES = False  # the bytes travel in the module's arguments

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=argspec())
        if args.get('files') is not None:
            raise AnsibleActionFail('files: set by the action from sources; give sources instead')
        if not args.get('sources'):
            raise AnsibleActionFail('sources: name at least one file or folder to copy')
        try:
            local = tree.local_files([(self._find_needle('files', source['src']), source['folder'])
                                      for source in args['sources']])
        except AnsibleError as exc:
            raise AnsibleActionFail('sources: %s' % exc.message) from None
        except ValueError as exc:
            raise AnsibleActionFail('sources: %s' % exc) from None
        module_args = {key: value for key, value in args.items() if key != 'sources' and value is not None}
        module_args['files'] = {rel: {'sha256': tree.file_digest(path)} for rel, path in local.items()}
        try:
            answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
            if answer.get('needed') and not answer.get('failed'):
                for rel in answer['needed']:
                    with open(local[rel], 'rb') as handle:
                        module_args['files'][rel]['content'] = base64.b64encode(handle.read()).decode('ascii')
                answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        answer.pop('invocation', None)  # it would repeat every file's bytes
        result.update(answer)
        return result
