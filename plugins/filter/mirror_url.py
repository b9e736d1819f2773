# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: mirror_url
short_description: Point an upstream download URL at the lab's files mirror
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns the upstream URL unchanged when the mirror is empty or null.
  - Otherwise returns the mirror's base URL, a V(/), then the upstream URL without its scheme, so a mirror laid out
    like the upstream hosts (C(<mirror>/dl.k8s.io/release/...)) serves every download.
  - Fails when the mirror is not an C(http://) or C(https://) URL.
positional: mirror
options:
  _input:
    description: The upstream URL, for example V(https://dl.k8s.io/release).
    type: string
    required: true
  mirror:
    description:
      - Base URL of the files mirror, usually the lab-wide C(dralab_download_mirror).
      - Empty or null means no mirror.
    type: string
    required: true
"""

EXAMPLES = r"""
- name: Download kubeadm from the mirror when one is configured
  ansible.builtin.get_url:
    url: "{{ 'https://dl.k8s.io/release' | dralab.workshop.mirror_url(dralab_download_mirror | default('')) }}/v1.35.4/bin/linux/amd64/kubeadm"
    dest: /usr/local/bin/kubeadm
    mode: "0755"

# 'https://dl.k8s.io/release' | dralab.workshop.mirror_url('')
#   => 'https://dl.k8s.io/release'
# 'https://dl.k8s.io/release' | dralab.workshop.mirror_url('http://10.88.0.1:8080/')
#   => 'http://10.88.0.1:8080/dl.k8s.io/release'
"""

RETURN = r"""
_value:
  description: The URL to download from.
  type: string
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.values import mirror_url as _mirror_url


def mirror_url(upstream_url, mirror):
    """Return upstream_url, or the same path under the files mirror when one is given."""
    try:
        return _mirror_url(upstream_url, mirror)
    except ValueError as exc:
        raise AnsibleFilterError('dralab.workshop.mirror_url: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'mirror_url': mirror_url}
