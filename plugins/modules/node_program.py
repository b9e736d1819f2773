#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_program
short_description: Install one of the collection's node programs on a host, and run it as a service, in one run
version_added: 0.1.0
description:
  - Writes the files of O(files) (each made only when its content, owner or mode differs; a link in its place is
    replaced, never followed; missing folders are made root's, mode 0755).
  - Makes the venv O(venv) with C(O(python) -m venv --without-pip) when it has no C(bin/python), and installs pip
    in it from its wheel O(pip_wheel_url) when it has no C(bin/pip), so Debian's python3-venv is not needed.
  - Installs the package O(package). With O(wheels_url) (the files mirror's wheels) C(pip install --no-index
    --find-links) O(package)==O(version), only when the venv holds another release or none. Without it, from
    O(source) (the collection's source copied to the host) when the venv holds none or O(source_changed), its
    dependencies from O(pip_index_url) or pip's default index.
  - Makes each link of O(links).
  - With O(service) a systemd service runs the program as the system user O(service.user) (made when missing, no
    home, no login shell), with the files of O(service.files) and the unit C(<unit_folder>/NAME.service) from
    O(service.unit) (systemd reloaded when it changed), enabled and started. A service that runs already is
    restarted when its unit or one of its files changed, or when the package was installed after it started (by
    this run, or by another run into the same venv).
  - A rerun with nothing to change runs no command that changes anything and writes nothing.
author: dralab.workshop maintainers (@dralab)
options:
  venv:
    description: The program's venv.
    type: path
    required: true
  python:
    description: The Python the venv is made with.
    type: path
    default: /usr/bin/python3
  package:
    description: The distribution name of the package.
    type: str
    required: true
  version:
    description: The package's release that O(wheels_url) serves.
    type: str
    required: true
  wheels_url:
    description:
      - The folder of wheels pip finds the package and its dependencies in (C(--find-links), no index). An http URL's
        host is trusted (C(--trusted-host)).
      - Empty to install from O(source).
    type: str
    default: ''
  pip_version:
    description: The release of the pip wheel O(pip_wheel_url).
    type: str
    required: true
  pip_wheel_url:
    description: Where the pip wheel is downloaded from when the venv has no pip.
    type: str
    required: true
  pip_index_url:
    description: The package index of the dependencies when the package comes from O(source); empty for pip's default.
    type: str
    default: ''
  source:
    description: The package's source folder on the host (with its C(pyproject.toml)), used when O(wheels_url) is empty.
    type: path
  source_changed:
    description: Whether O(source) changed in this run (it is installed again then).
    type: bool
    default: false
  files:
    description: The program's files (settings), written before the package is installed.
    type: list
    elements: dict
    default: []
    suboptions: &files
      path:
        description: The file's absolute path.
        type: path
        required: true
      content:
        description: The file's text.
        type: str
        required: true
      owner:
        description: Its owner.
        type: str
        default: root
      group:
        description: Its group.
        type: str
        default: root
      mode:
        description: Its mode, such as C("0644").
        type: raw
        default: '0644'
  links:
    description: Symbolic links to make (C(dest) pointing to C(src)), such as the program on the PATH.
    type: list
    elements: dict
    default: []
    suboptions:
      src:
        description: What the link points to.
        type: path
        required: true
      dest:
        description: The link.
        type: path
        required: true
  service:
    description: The program as a systemd service; omitted for a program people run themselves.
    type: dict
    suboptions:
      name:
        description: The unit's name without C(.service).
        type: str
        required: true
      user:
        description: The system user the unit runs as (its C(User=)); made when missing.
        type: str
        required: true
      unit:
        description: The unit file's text.
        type: str
        required: true
      files:
        description: The service's files (its kubeconfig, its environment file); a change restarts it.
        type: list
        elements: dict
        default: []
        suboptions: *files
  unit_folder:
    description: Where the unit file goes.
    type: path
    default: /etc/systemd/system
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reads the venv, the files and the service's state; reports what would change and runs nothing that changes
        anything. A package that would be installed counts as a restart of its service.
  diff_mode:
    support: none
    details:
      - RV(changes) says what changed.
notes:
  - Runs on the host as root (C(become)). A task that passes tokens in O(files) or O(service.files) needs C(no_log).
"""

EXAMPLES = r"""
- name: Install can-has-gpu and run the lease reaper
  dralab.workshop.node_program:
    venv: /opt/dralab/can-has-gpu
    package: dralab-can-has-gpu
    version: 0.1.0
    wheels_url: http://mirror.lab:8080/wheels/
    pip_version: "26.3"
    pip_wheel_url: http://mirror.lab:8080/wheels/pip-26.3-py3-none-any.whl
    files:
      - path: /etc/dralab/can-has-gpu.json
        content: '{"lease_default": "2h"}'
    links:
      - src: /opt/dralab/can-has-gpu/bin/can-has-gpu
        dest: /usr/local/bin/can-has-gpu
    service:
      name: dralab-lease-reaper
      user: dralab-reaper
      unit: "{{ lookup('ansible.builtin.template', 'dralab-lease-reaper.service.j2') }}"
      files:
        - path: /etc/dralab/lease-reaper.kubeconfig
          content: "{{ lookup('ansible.builtin.file', '~/.dralab/dralab-lease-reaper.kubeconfig') }}"
          owner: dralab-reaper
          mode: "0600"
  no_log: true
"""

RETURN = r"""
changes:
  description: What changed (or, in check mode, would change), in words, in the order it was done.
  returned: always
  type: list
  elements: str
  sample: [venv /opt/dralab/can-has-gpu made, pip 26.3 installed in the venv, dralab-can-has-gpu 0.1.0 installed,
           dralab-lease-reaper started]
upgraded:
  description: Whether the package was installed (or, in check mode, would be).
  returned: always
  type: bool
restarted:
  description: Whether the service was started or restarted (or, in check mode, would be).
  returned: always
  type: bool
"""

import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.dralab.workshop.plugins.module_utils.files import node_program


def argspec():
    files = dict(
        path=dict(type='path', required=True),
        content=dict(type='str', required=True, no_log=True),
        owner=dict(type='str', default='root'),
        group=dict(type='str', default='root'),
        mode=dict(type='raw', default='0644'),
    )
    return dict(
        venv=dict(type='path', required=True),
        python=dict(type='path', default='/usr/bin/python3'),
        package=dict(type='str', required=True),
        version=dict(type='str', required=True),
        wheels_url=dict(type='str', default=''),
        pip_version=dict(type='str', required=True),
        pip_wheel_url=dict(type='str', required=True),
        pip_index_url=dict(type='str', default=''),
        source=dict(type='path'),
        source_changed=dict(type='bool', default=False),
        files=dict(type='list', elements='dict', default=[], options=files),
        links=dict(type='list', elements='dict', default=[], options=dict(
            src=dict(type='path', required=True), dest=dict(type='path', required=True))),
        service=dict(type='dict', options=dict(
            name=dict(type='str', required=True),
            user=dict(type='str', required=True),
            unit=dict(type='str', required=True),
            files=dict(type='list', elements='dict', default=[], options=files),
        )),
        unit_folder=dict(type='path', default=node_program.UNIT_FOLDER),
    )


def downloader(module):
    def download(url, dest):
        response, info = fetch_url(module, url)
        if info['status'] != 200:
            raise node_program.ProgramError('download %s: %s (HTTP %s); is the files mirror up?'
                                            % (url, info.get('msg'), info['status']))
        with open(dest, 'wb') as out:
            shutil.copyfileobj(response, out)
    return download


def run(module):
    problems = node_program.input_problems(module.params)
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.', changes=[])
    work = node_program.NodeProgram(module.run_command, downloader(module), module.params, module.check_mode,
                                    unit_folder=module.params['unit_folder'])
    try:
        work.converge()
    except (node_program.ProgramError, OSError) as exc:
        module.fail_json(msg=str(exc), changes=work.changes)
    module.exit_json(changed=bool(work.changes), changes=work.changes, upgraded=work.upgraded,
                     restarted=work.restarted)


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
