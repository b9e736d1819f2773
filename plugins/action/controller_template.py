# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""controller_template: a template rendered and written on the controller without a module run. The documentation is
the module's (plugins/modules/controller_template.py)."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

from ansible_collections.dralab.workshop.plugins.module_utils.files import write
from ansible_collections.dralab.workshop.plugins.modules.controller_template import argspec


TEMPLATE_DEFAULTS = dict(trim_blocks=True, lstrip_blocks=False, newline_sequence='\n')


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=argspec())
        try:
            mode = int(args['mode'], 8)
        except ValueError:
            raise AnsibleActionFail('mode: %r is no octal mode (for example "0600")' % args['mode']) from None
        try:
            source = self._find_needle('templates', args['src'])
        except AnsibleError as exc:
            raise AnsibleActionFail(to_text(exc)) from None
        dest = os.path.expanduser(args['dest'])
        if not os.path.isdir(os.path.dirname(os.path.abspath(dest))):
            raise AnsibleActionFail('dest: the folder of %s does not exist on the controller' % dest)
        # Includes and imports resolve as ansible.builtin.template resolves them.
        searchpath = []
        for folder in list(task_vars.get('ansible_search_path', [])) + [self._loader._basedir, os.path.dirname(source)]:
            searchpath += [os.path.join(folder, 'templates'), folder]
        templar = self._templar.copy_with_new_env(searchpath=searchpath, available_variables=task_vars)
        # ansible.builtin.template's defaults: trim_blocks, no lstrip_blocks, \n line ends.
        content = templar.template(trust_as_template(self._loader.get_text_file_contents(source)),
                                   escape_backslashes=False, overrides=TEMPLATE_DEFAULTS) or ''
        content = to_text(content)
        # The old content is read for a diff only; write_if_changed reads it for itself.
        before = write.text_and_mode(dest)[0] if self._task.diff else None
        if self._task.check_mode:
            changed = not write.file_state(dest, content, mode)
        else:
            changed = write.write_if_changed(dest, content, mode)
        result.update(changed=changed, dest=dest)
        if self._task.diff and changed:
            result['diff'] = {'before': before or '', 'after': content, 'before_header': dest, 'after_header': dest}
        return result
