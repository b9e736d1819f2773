#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: release_binaries
short_description: Install the binaries of one release into a folder, each recorded with its release
version_added: 0.1.0
description:
  - Installs each of O(binaries) as O(bin_dir)/<name>, mode C(0755), and records its O(binaries[].release) in
    O(marker_dir)/<name>. One module run for all of them.
  - A binary whose record names its release and whose file exists is left alone, without a network request (check
    mode too). Otherwise it is downloaded from O(binaries[].url) and checked against O(binaries[].checksum) before
    it replaces the file; a file that has the right bytes already only gets its record.
  - Makes O(bin_dir) and O(marker_dir) (mode C(0755)) when missing.
author: dralab.workshop maintainers (@dralab)
options:
  binaries:
    description: The binaries of the release.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The file name in O(bin_dir), and of its record in O(marker_dir).
        type: str
        required: true
      url:
        description: Where the binary is downloaded from (the files mirror, or upstream).
        type: str
        required: true
      checksum:
        description:
          - C(algorithm:hex), or C(algorithm:URL) of a checksum file that holds the digest alone or a line
            C(<digest>  <file name of the url>), as C(dl.k8s.io) publishes C(<url>.sha256).
        type: str
        required: true
      release:
        description: One line that names the release, for example C(v1.35.4 linux/amd64); another one reinstalls.
        type: str
        required: true
  bin_dir:
    description: The folder of the binaries.
    type: path
    required: true
  marker_dir:
    description: The folder of the records.
    type: path
    required: true
  timeout:
    description: Seconds a download may wait for an answer.
    type: int
    default: 60
extends_documentation_fragment:
  - dralab.workshop.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports the binaries whose record or file differs as installed; downloads nothing.
  diff_mode:
    support: none
    details:
      - RV(installed) and RV(recorded) name what changed.
notes:
  - Needs nothing on the node but Python; writes as the user the module runs as (root, with become).
"""

EXAMPLES = r"""
- name: Install kubectl of Kubernetes 1.35.4
  dralab.workshop.release_binaries:
    binaries:
      - name: kubectl
        url: https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/kubectl
        checksum: sha256:https://dl.k8s.io/release/v1.35.4/bin/linux/amd64/kubectl.sha256
        release: v1.35.4 linux/amd64
    bin_dir: /usr/local/bin
    marker_dir: /var/lib/dralab/installed
"""

RETURN = r"""
installed:
  description: The binaries downloaded (in check mode, those that would be).
  returned: success
  type: list
  elements: str
  sample: [kubeadm, kubelet]
recorded:
  description: The binaries whose file had the right bytes already and only got their record.
  returned: success
  type: list
  elements: str
folders:
  description: The folders made, or whose mode was set to C(0755).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url

from ansible_collections.dralab.workshop.plugins.module_utils.files import release_binaries


def argspec():
    return dict(
        binaries=dict(type='list', elements='dict', required=True, options=dict(
            name=dict(type='str', required=True),
            url=dict(type='str', required=True),
            checksum=dict(type='str', required=True),
            release=dict(type='str', required=True),
        )),
        bin_dir=dict(type='path', required=True),
        marker_dir=dict(type='path', required=True),
        timeout=dict(type='int', default=60),
    )


def fetcher(module):
    def fetch(url):
        response, info = fetch_url(module, url, timeout=module.params['timeout'])
        if info['status'] != 200:
            raise release_binaries.BinaryError('download %s: %s (HTTP %s); is the files mirror up?'
                                               % (url, info.get('msg'), info['status']))
        return response
    return fetch


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    problems = release_binaries.input_problems(module.params['binaries'])
    if problems:
        module.fail_json(msg='; '.join(problems) + '. Nothing was changed.')
    work = release_binaries.ReleaseBinaries(fetcher(module), module.params, module.check_mode)
    try:
        changed = work.converge()
    except (release_binaries.BinaryError, OSError) as exc:
        module.fail_json(msg=str(exc), installed=work.installed, recorded=work.recorded, folders=work.folders)
    module.exit_json(changed=changed, installed=work.installed, recorded=work.recorded, folders=work.folders)


if __name__ == '__main__':
    main()
