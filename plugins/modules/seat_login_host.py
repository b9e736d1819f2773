#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: seat_login_host
short_description: Fence the workshop seats in on a login host in one run (login shell, job deny files, PAM, kernel)
version_added: 0.1.0
description:
  - In one module run on a login host, the files that hold the seats in, each only when it differs
    (RV(changes) says what changed).
  - First, with O(require_pam_systemd), it checks that a PAM service runs pam_systemd (a line with
    C(pam_systemd.so) outside a comment in a file below C(/etc/pam.d)); without it a login gets no
    C(user-UID.slice) and the seats' limits would not apply, and the module fails before any change. Every option
    is checked before any change too.
  - The seats' login shell O(login_shell) (owner root:root, mode 0755).
  - The seats' names, one a line, between the markers C(# BEGIN dralab.workshop seats) and
    C(# END dralab.workshop seats) in each file of O(job_deny_files) (made when missing; owner root, the entry's
    group and mode), as M(ansible.builtin.blockinfile) writes them; with O(deny_jobs) false or no O(seats), the
    block is removed and a missing file is not made.
  - In each PAM service of O(pam_refused_programs) that this host has, the line
    C(auth requisite pam_succeed_if.so quiet user notingroup <group>), as M(ansible.builtin.lineinfile) writes it
    (it replaces the first such line, else goes after the first C(auth sufficient pam_rootok.so) line, else at the
    end). The file keeps its owner and mode.
  - Each setting of O(kernel_settings) this kernel has (a file below C(/proc/sys)) as C(key=value) in
    O(kernel_settings_file), which is rewritten as M(ansible.posix.sysctl) rewrites it, and as the running value;
    when the file changed, C(sysctl -p) reloads it. Settings this kernel does not have are left out and listed in
    RV(kernel_settings_missing).
  - Every file is written byte for byte as those modules write it, so a host they converged has nothing to change.
author: dralab.workshop maintainers (@dralab)
options:
  group:
    description: The seats' shared group, which the PAM services of O(pam_refused_programs) refuse.
    type: str
    required: true
  seats:
    description: The seats whose names the files of O(job_deny_files) list.
    type: list
    elements: str
    required: true
  login_shell:
    description:
      - The seats' login shell, written to O(login_shell.path) (owner root:root, mode 0755). Omitted or null, no
        login shell is written.
    type: dict
    suboptions:
      path:
        description: Where the login shell goes, an absolute path.
        type: path
        required: true
      content:
        description: The login shell's content.
        type: str
        required: true
  deny_jobs:
    description:
      - List the O(seats) in the files of O(job_deny_files). False, or no O(seats), removes their block.
    type: bool
    default: true
  job_deny_files:
    description: The files that refuse jobs to the users they list, such as C(/etc/cron.deny) and C(/etc/at.deny).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file's absolute path.
        type: path
        required: true
      group:
        description: The file's group (its owner is root); the host must have it.
        type: str
        required: true
      mode:
        description:
          - The file's mode, an octal string such as V("0644") (an integer is taken as the mode's value, as the file
            modules take one).
        type: raw
        required: true
  pam_refused_programs:
    description:
      - The programs whose PAM service (C(/etc/pam.d/<program>)) refuses the members of O(group); a service this
        host does not have is skipped.
    type: list
    elements: str
    default: []
  kernel_settings:
    description:
      - Kernel setting (dotted, such as V(kernel.yama.ptrace_scope)) -> its value. A boolean word is written as 1 or
        0, as M(ansible.posix.sysctl) does.
    type: dict
    default: {}
  kernel_settings_file:
    description: The sysctl.d file that holds O(kernel_settings); it is made only when a setting goes into it.
    type: path
    default: /etc/sysctl.d/60-dralab-seats.conf
  require_pam_systemd:
    description: Fail before any change when no PAM service runs pam_systemd.
    type: bool
    default: true
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads every file and running kernel value and reports what would change; writes nothing and runs no command.
  diff_mode:
    support: none
    details:
      - RV(changes) says what changed.
notes:
  - Runs on the login host as root (C(become)). Needs C(sysctl) when a kernel setting's file changes.
"""

EXAMPLES = r"""
- name: Fence the seats in on this login host
  dralab.workshop.seat_login_host:
    group: workshop-seats
    seats: [user01, user02]
    login_shell:
      path: /usr/local/sbin/dralab-seat-shell
      content: "{{ lookup('ansible.builtin.template', 'dralab-seat-shell.j2') }}"
    job_deny_files:
      - {path: /etc/cron.deny, group: root, mode: "0644"}
      - {path: /etc/at.deny, group: daemon, mode: "0640"}
    pam_refused_programs: [chfn, chsh]
    kernel_settings:
      kernel.yama.ptrace_scope: 1
      kernel.unprivileged_userns_clone: 0
"""

RETURN = r"""
changes:
  description: What changed (or, in check mode, would change), in words; empty when nothing did.
  returned: success
  type: list
  elements: str
  sample: [/usr/local/sbin/dralab-seat-shell written, /etc/cron.deny seats block, /etc/pam.d/chfn refuses the seats,
           kernel.yama.ptrace_scope=1]
kernel_settings_missing:
  description: The settings of O(kernel_settings) this kernel does not have (no file below C(/proc/sys)), not set.
  returned: success
  type: list
  elements: str
  sample: [kernel.unprivileged_userns_clone]
sysctl_reloaded:
  description: Whether C(sysctl -p) reloaded O(kernel_settings_file) (it changed).
  returned: success
  type: bool
  sample: true
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.files import sysctl
from ansible_collections.dralab.workshop.plugins.module_utils.seat import login_host


def argspec():
    return dict(
        group=dict(type='str', required=True),
        seats=dict(type='list', elements='str', required=True),
        login_shell=dict(type='dict', options=dict(
            path=dict(type='path', required=True),
            content=dict(type='str', required=True),
        )),
        deny_jobs=dict(type='bool', default=True),
        job_deny_files=dict(type='list', elements='dict', default=[], options=dict(
            path=dict(type='path', required=True),
            group=dict(type='str', required=True),
            mode=dict(type='raw', required=True),
        )),
        pam_refused_programs=dict(type='list', elements='str', default=[]),
        kernel_settings=dict(type='dict', default={}),
        kernel_settings_file=dict(type='path', default='/etc/sysctl.d/60-dralab-seats.conf'),
        require_pam_systemd=dict(type='bool', default=True),
    )


def run(module):
    command = sysctl.command_runner(module)
    host = login_host.LoginHost(module.params, module.check_mode, command)
    try:
        host.converge()
    except (login_host.LoginHostError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=host.changes)
    module.exit_json(changed=bool(host.changes), changes=host.changes,
                     kernel_settings_missing=host.kernel_settings_missing, sysctl_reloaded=host.sysctl_reloaded)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
