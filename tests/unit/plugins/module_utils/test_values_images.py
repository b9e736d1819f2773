# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""values.image_digests / pinned_image: the digests the cni role records and applies."""

from __future__ import annotations

import json

import pytest

from ansible_collections.dralab.workshop.plugins.module_utils.values import image_digests, pinned_image

FLANNEL = "ghcr.io/flannel-io/flannel:v0.28.10"
DIGEST = "sha256:" + "0123456789abcdef" * 4


def inspecti(*repo_digests):
    """The shape of `crictl inspecti -o json` (trimmed)."""
    return json.dumps({"status": {"id": "sha256:" + "f" * 64, "repoTags": [FLANNEL], "repoDigests": list(repo_digests)}})


def test_the_recorded_repo_digest_is_taken():
    assert image_digests([(FLANNEL, inspecti(f"ghcr.io/flannel-io/flannel@{DIGEST}"))]) == {FLANNEL: DIGEST}


@pytest.mark.parametrize("repo_digests", [(), ("ghcr.io/flannel-io/flannel@md5:abc",), ("no-digest",)])
def test_an_image_without_a_digest_is_an_error_naming_it(repo_digests):
    with pytest.raises(ValueError, match="ghcr.io/flannel-io/flannel:v0.28.10: crictl inspecti reports no sha256"):
        image_digests([(FLANNEL, inspecti(*repo_digests))])


def test_pinned_image():
    assert pinned_image(FLANNEL, {FLANNEL: DIGEST}) == f"{FLANNEL}@{DIGEST}"
    assert pinned_image(FLANNEL, {}) == FLANNEL
    assert pinned_image(f"{FLANNEL}@{DIGEST}", {FLANNEL: "sha256:" + "1" * 64}) == f"{FLANNEL}@{DIGEST}"
