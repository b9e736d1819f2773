#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_sshd
short_description: Write the workshop seats' sshd drop-in on a login host and check that sshd applies it, in one run
version_added: 0.1.0
description:
  - Makes the folder of O(dropin) (owner root, mode 0755) and writes O(content) to O(dropin) (owner root, mode
    0644), but only after C(sshd -t -f) accepts it as a temporary file in that folder, as ansible's C(validate)
    does. A drop-in that already holds O(content), with that owner and mode, is not written.
  - Then checks the whole configuration with C(sshd -t) and, when O(seat) is given, reads what a login of O(seat)
    gets with C(sshd -T -C user=<seat>,host=localhost,addr=127.0.0.1), where every setting of O(expected) must be,
    as sshd prints it.
  - When sshd refuses the new drop-in, the whole configuration, or does not apply a setting of O(expected), the
    drop-in is removed (SSH stays as it was for every other account) and the module fails, saying why.
  - Reports C(changed) when the folder or the drop-in was made or its content, owner or mode set; the caller
    reloads sshd then (a handler), the module never does.
author: dralab.workshop maintainers (@dralab)
options:
  dropin:
    description:
      - Absolute path of the drop-in. The main sshd configuration must include it (Debian and Ubuntu include
        C(/etc/ssh/sshd_config.d/*.conf)).
    type: path
    required: true
  content:
    description: The drop-in's text.
    type: str
    required: true
  sshd:
    description: The sshd program.
    type: path
    default: /usr/sbin/sshd
  seat:
    description:
      - The seat C(sshd -T) is asked about. When omitted, C(sshd -T) is not run and O(expected) is not checked.
    type: str
  expected:
    description:
      - Setting -> value that C(sshd -T) must print for O(seat), each as the line C(<setting> <value>) in lower case;
        names as sshd_config spells them, values as C(sshd -T) prints them.
    type: dict
    default: {}
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Writes nothing. A drop-in that would change is checked with C(sshd -t -f) on a temporary file, which is then
        deleted; C(sshd -t) and C(sshd -T) are not run then (they would read the old drop-in), and a warning says so.
        A drop-in that would not change is checked with C(sshd -t); C(sshd -T) runs only outside check mode.
  diff_mode:
    support: none
notes:
  - Runs on the login host with root rights (C(become)).
"""

EXAMPLES = r"""
- name: Allow SSH password login for the seats
  dralab.workshop.seat_sshd:
    dropin: /etc/ssh/sshd_config.d/50-dralab-seats.conf
    content: |
      MaxStartups 100:30:300
      Match Group workshop-seats
          PasswordAuthentication yes
    seat: user01
    expected:
      MaxStartups: "100:30:300"
      PasswordAuthentication: "yes"
  notify: Reload sshd
"""

RETURN = r"""
dropin:
  description: The path of the drop-in.
  returned: always
  type: str
  sample: /etc/ssh/sshd_config.d/50-dralab-seats.conf
effective:
  description:
    - The lines of C(sshd -T) for the settings of O(expected), as sshd prints them; empty in check mode or
      without O(seat).
  returned: success
  type: list
  elements: str
  sample: [maxstartups 100:30:300, passwordauthentication yes]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.seat import sshd as seat_sshd


def argspec():
    return dict(
        dropin=dict(type='path', required=True),
        content=dict(type='str', required=True),
        sshd=dict(type='path', default=seat_sshd.SSHD),
        seat=dict(type='str'),
        expected=dict(type='dict', default={}),
    )


def input_problems(params):
    """What is wrong with the arguments, before anything is changed."""
    problems = seat_sshd.input_problems(params['dropin'], params['seat'], params['expected'])
    if not (os.path.isfile(params['sshd']) and os.access(params['sshd'], os.X_OK)):
        problems.append('sshd: %s is not an executable file (is openssh-server installed?)' % params['sshd'])
    return problems


def run(module):
    params = module.params
    problems = input_problems(params)
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.', dropin=params['dropin'])
    try:
        result = seat_sshd.converge(module.run_command, params['dropin'], params['content'], params['sshd'],
                                    params['seat'], params['expected'], module.check_mode)
    except (seat_sshd.SshdError, OSError) as exc:
        module.fail_json(msg=str(exc), dropin=params['dropin'])
    if result.note:
        module.warn(result.note)
    module.exit_json(changed=result.changed, dropin=params['dropin'], effective=result.effective)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
