# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_facts: the keys of a dict as host variables at set_fact's precedence, in one task run. The documentation is
the module's (plugins/modules/host_facts.py)."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase, VariableLayer
from ansible.utils.vars import validate_variable_name

from ansible_collections.dralab.workshop.plugins.modules.host_facts import argspec


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=argspec())
        facts = args['facts']
        for name in facts:
            try:
                validate_variable_name(name)
            except Exception as exc:  # AnsibleError of any kind: name the key
                raise AnsibleActionFail(f'facts: {name!r} is no valid variable name ({exc})') from None
        # As set_fact: not cacheable, and no legacy 'ansible_facts' registration of the result.
        self.register_host_variables({}, VariableLayer.CACHEABLE_FACT)
        self.register_host_variables(dict(facts), VariableLayer.EPHEMERAL_FACT)
        result.update(changed=False, names=sorted(facts))
        return result
