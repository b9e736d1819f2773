#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: copy_tree
short_description: Copy files and folders of the controller to a node, in one module call when nothing differs
version_added: 0.1.0
description:
  - Copies each of O(sources) below O(dest) on the node, as M(ansible.builtin.copy) copies a O(sources[].src)
    without a trailing slash. A file lands as C(dest/<folder>/<name>), a folder's files below
    C(dest/<folder>/<name>/).
  - Where M(ansible.builtin.copy) runs modules on the node for every file, this action sends the digests of all
    files in one module call, and the bytes of only the files the node lacks or holds otherwise in a second. A
    rerun with nothing to change is one call, however many files the tree has.
  - Sets O(mode), O(owner) and O(group) on every copied file and O(directory_mode) on the folders from O(dest)
    down. Files below O(dest) that are not in O(sources) are left alone, and so are Python byte-code caches
    (C(__pycache__) folders, C(.pyc) files) of the controller, which are never copied.
  - The work is done by an action plugin on the controller; the module of the same name runs on the node.
author: dralab.workshop maintainers (@dralab)
options:
  sources:
    description:
      - What to copy. Set in a task; the action plugin turns it into O(files).
    type: list
    elements: dict
    suboptions:
      src:
        description:
          - A file or folder on the controller. A relative path is looked up as M(ansible.builtin.copy) does (the
            role's C(files/), then the playbook's folder).
        type: path
        required: true
      folder:
        description: The folder below O(dest) it lands in; empty for O(dest) itself.
        type: str
        default: ''
  dest:
    description: The folder on the node the tree is copied below; made when missing.
    type: path
    required: true
  mode:
    description: The mode of every copied file, in octal.
    type: str
    default: '0644'
  directory_mode:
    description: The mode of O(dest) and every folder below it that holds a copied file, in octal.
    type: str
    default: '0755'
  owner:
    description: The owner of the files and folders; unset leaves it to the user the module runs as.
    type: str
  group:
    description: Their group; unset leaves it to the user the module runs as.
    type: str
  files:
    description:
      - Set by the action plugin from O(sources), not in a task. Relative path below O(dest) -> C(sha256), the
        digest of its bytes, and C(content), the bytes in base64 for the files the node asked for.
    type: dict
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Compares the digests and attributes and reports which files would change; sends no bytes.
  diff_mode:
    support: none
    details:
      - RV(changed_files) names the files that differ.
notes:
  - Needs nothing on the node but Python.
"""

EXAMPLES = r"""
- name: Copy a Python package's source into a venv's src folder
  dralab.workshop.copy_tree:
    sources:
      - src: "{{ playbook_dir }}/../pyproject.toml"
      - src: "{{ playbook_dir }}/../tools"
      - src: "{{ playbook_dir }}/../plugins/module_utils"
        folder: plugins
    dest: /opt/tool/src
    owner: root
    group: root
"""

RETURN = r"""
changed_files:
  description: The files below O(dest), relative, whose bytes were (or, in check mode, would be) written.
  returned: success
  type: list
  elements: str
  sample: [tools/can_has_gpu/cli.py]
changed_attributes:
  description: The paths whose mode, owner or group were (or would be) set, the folders included.
  returned: success
  type: list
  elements: str
needed:
  description: The files the node asked the controller for; the action plugin answers it and does not return it.
  returned: when bytes are needed
  type: list
  elements: str
"""

import base64
import grp
import os
import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.dralab.workshop.plugins.module_utils.files import tree


def argspec():
    return dict(
        sources=dict(type='list', elements='dict', options=dict(
            src=dict(type='path', required=True),
            folder=dict(type='str', default=''),
        )),
        dest=dict(type='path', required=True),
        mode=dict(type='str', default='0644'),
        directory_mode=dict(type='str', default='0755'),
        owner=dict(type='str'),
        group=dict(type='str'),
        files=dict(type='dict'),
    )


def _octal(module, name):
    try:
        value = int(module.params[name], 8)
    except ValueError:
        value = -1
    if not 0 <= value <= 0o7777:
        module.fail_json(msg='%s: %r is not an octal mode such as 0644' % (name, module.params[name]))
    return value


def _ids(module):
    ids = []
    for name, lookup in (('owner', lambda user: pwd.getpwnam(user).pw_uid), ('group', lambda group: grp.getgrnam(group).gr_gid)):
        try:
            ids.append(lookup(module.params[name]) if module.params[name] else -1)
        except KeyError:
            module.fail_json(msg='%s: %r does not exist on %s' % (name, module.params[name], os.uname()[1]))
    return tuple(ids)


def run(module):
    params = module.params
    dest = params['dest'].rstrip('/') or '/'
    files = params['files']
    if files is None:
        module.fail_json(msg='files is missing: run copy_tree as a task (its action plugin sets files from sources)')
    for rel, entry in files.items():
        problem = tree.relative_problem(rel)
        if problem or not isinstance(entry, dict) or not entry.get('sha256'):
            module.fail_json(msg='files: %s' % (problem or '%r needs a sha256' % rel))
    mode, directory_mode = _octal(module, 'mode'), _octal(module, 'directory_mode')
    uid, gid = _ids(module)
    changed = tree.differences(dest, {rel: entry['sha256'] for rel, entry in files.items()})
    needed = [rel for rel in changed if files[rel].get('content') is None]
    if needed and not module.check_mode:
        module.exit_json(changed=True, needed=needed, changed_files=changed, changed_attributes=[])
    if not module.check_mode:
        for rel in changed:
            tree.write_file(dest, rel, base64.b64decode(files[rel]['content']), mode, directory_mode, uid, gid)
    fixes = tree.attribute_fixes(dest, list(files), mode, directory_mode, uid, gid)
    if not module.check_mode:
        tree.fix_attributes(fixes, uid, gid)
    module.exit_json(changed=bool(changed or fixes), changed_files=changed,
                     changed_attributes=[path for path, _mode in fixes])


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
