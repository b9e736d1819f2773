# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: pinned_image
short_description: An image reference with its recorded digest
version_added: 0.1.0
author: dralab.workshop maintainers (@dralab)
description:
  - Returns C(reference@sha256:<hex>) when the digests hold the reference, so every node runs exactly the image that
    was recorded; a reference that is not in them, or already has a digest, is returned as it is.
options:
  _input:
    description: The image reference, for example C(ghcr.io/flannel-io/flannel:v0.28.10).
    type: str
    required: true
  digests:
    description: Reference -> digest, as C(dralab.workshop.image_digests) returns them.
    type: dict
    required: true
"""

EXAMPLES = r"""
# 'ghcr.io/flannel-io/flannel:v0.28.10' | dralab.workshop.pinned_image({'ghcr.io/flannel-io/flannel:v0.28.10': 'sha256:ab...'})
#   => 'ghcr.io/flannel-io/flannel:v0.28.10@sha256:ab...'
- name: Use the pinned flannel image
  ansible.builtin.set_fact:
    cni_flannel_image_ref: "{{ cni_flannel_image | dralab.workshop.pinned_image(cni_flannel_pins.images) }}"
"""

RETURN = r"""
_value:
  description: The reference, with C(@<digest>) when one is recorded.
  type: str
"""

from ansible_collections.dralab.workshop.plugins.module_utils.values import pinned_image as _pinned_image


def pinned_image(reference, digests):
    return _pinned_image(str(reference), dict(digests or {}))


class FilterModule(object):
    def filters(self):
        return {'pinned_image': pinned_image}
