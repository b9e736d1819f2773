#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_settings
short_description: Set kernel settings (sysctl) now and in a sysctl.d drop-in, in one run
version_added: 0.1.0
description:
  - In one module run, each setting of O(settings) this kernel has (a file below C(/proc/sys)) as C(key=value) in
    the drop-in O(file) and as the running value, each only when it differs (RV(changes) says what changed).
  - O(file) is rewritten as M(ansible.posix.sysctl) rewrites it (each setting's first line as C(key=value), later
    lines of a setting dropped, comments kept, every line stripped), byte for byte, so a host that module converged
    with the same settings has nothing to change. An existing O(file) keeps its owner and mode; a new one gets what
    Ansible gives a new file. When O(file) changed, C(sysctl -p) reloads it.
  - A setting this kernel does not have is left out of O(file), not set, and listed in RV(missing); the module does
    not fail for it. A container shares its host's kernel, whose settings it may lack.
  - Every option is checked before any change.
author: dralab.workshop maintainers (@dralab)
options:
  settings:
    description:
      - Kernel setting (dotted, such as V(net.ipv4.ip_forward)) -> its value. A boolean word is written as 1 or 0,
        as M(ansible.posix.sysctl) does; a value of several words (such as V(4096 16384 4194304)) counts as the
        running value when the words are the same.
    type: dict
    required: true
  file:
    description: The sysctl.d drop-in that holds O(settings), an absolute path; it is made only when a setting goes
      into it.
    type: path
    required: true
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads O(file) and the running values and reports what would change; writes nothing and runs no command.
  diff_mode:
    support: none
    details:
      - RV(changes) says what changed.
notes:
  - Runs as root (C(become)). Needs C(sysctl) when O(file) changes.
  - A running value that differs is written to its file below C(/proc/sys); C(sysctl -p) runs only when O(file)
    changed.
seealso:
  - module: ansible.posix.sysctl
"""

EXAMPLES = r"""
- name: Set the kernel parameters Kubernetes needs
  dralab.workshop.kernel_settings:
    settings:
      net.ipv4.ip_forward: 1
      net.bridge.bridge-nf-call-iptables: 1
      net.bridge.bridge-nf-call-ip6tables: 1
    file: /etc/sysctl.d/90-dralab-kubernetes.conf
  register: kernel

- name: Report the kernel parameters this kernel does not have
  ansible.builtin.debug:
    msg: "Skipped kernel parameters this kernel does not have: {{ kernel.missing | join(', ') }}"
  when: kernel.missing | length > 0
"""

RETURN = r"""
changes:
  description:
    - C(key=value) of each setting that changed (or, in check mode, would change) in O(file) or as the running
      value; empty when nothing did.
  returned: always
  type: list
  elements: str
  sample: [net.ipv4.ip_forward=1]
missing:
  description: The settings of O(settings) this kernel does not have (no file below C(/proc/sys)), not set.
  returned: success
  type: list
  elements: str
  sample: [net.bridge.bridge-nf-call-ip6tables]
reloaded:
  description: Whether C(sysctl -p) reloaded O(file) (it changed).
  returned: success
  type: bool
  sample: true
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.files import sysctl


def argspec():
    return dict(
        settings=dict(type='dict', required=True),
        file=dict(type='path', required=True),
    )


def input_problems(params):
    """What is wrong with the arguments, each naming its option, before anything is changed."""
    problems = sysctl.setting_problems(params['settings'], 'settings')
    if not os.path.isabs(params['file']):
        problems.append('file: %r is not an absolute path' % params['file'])
    elif os.path.isdir(params['file']):
        problems.append('file: %s is a folder' % params['file'])
    return problems


def run(module):
    params = module.params
    problems = input_problems(params)
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.', changes=[])

    command = sysctl.command_runner(module)
    try:
        changes, missing, reloaded = sysctl.converge(params['settings'], params['file'], module.check_mode, command)
    except (sysctl.SysctlError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=getattr(exc, 'changes', []))
    module.exit_json(changed=bool(changes), changes=changes, missing=missing, reloaded=reloaded)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
