# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: image_digests
short_description: The sha256 digest of each pulled image, from crictl inspecti
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Takes the results of a loop of C(crictl inspecti --output json IMAGE) commands (each with C(item) = the image
    reference and C(stdout) = the JSON) and returns a dict from each reference to its digest (V(sha256:<hex>)), the
    repo digest containerd recorded when it pulled the image.
  - Results without C(stdout) (skipped loop items) are ignored. Fails, naming the image, when one has no digest.
options:
  _input:
    description: The C(results) list of the registered loop.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Record the digests of the pulled images
  ansible.builtin.set_fact:
    cni_flannel_digests: "{{ cni_flannel_inspect.results | dralab.workshop.image_digests }}"
"""

RETURN = r"""
_value:
  description: Image reference -> V(sha256:<hex>).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.dralab.workshop.plugins.module_utils.values import image_digests as _image_digests


def image_digests(results):
    """{reference: digest} of the loop results that ran."""
    try:
        return _image_digests((r['item'], r['stdout']) for r in results or [] if 'stdout' in r)
    except (ValueError, KeyError, TypeError) as exc:
        raise AnsibleFilterError('dralab.workshop.image_digests: %s' % exc) from None


class FilterModule(object):
    def filters(self):
        return {'image_digests': image_digests}
