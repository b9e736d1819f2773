"""The podman lab's Debian suites (podman_lab/images.py): DRALAB_NODE_SUITE picks the images of the lab (molecule/debian13 sets trixie);
a Debian 12 build and a Debian 13 build are separate images that never prune each other."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
for path in (HARNESS, HARNESS.parents[1]):  # podman_lab, and the dralab_build it imports
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
from podman_lab import images as node_images  # noqa: E402  (tests/harness/podman_lab/images.py)
from podman_lab.topology import LabError  # noqa: E402


def refs(monkeypatch, suite):
    if suite is None:
        monkeypatch.delenv("DRALAB_NODE_SUITE", raising=False)
    else:
        monkeypatch.setenv("DRALAB_NODE_SUITE", suite)
    return {kind: node_images.image_ref(kind) for kind in node_images.IMAGES}


def test_debian_12_is_the_default_and_keeps_its_image_names(monkeypatch):
    default = refs(monkeypatch, None)
    assert default == refs(monkeypatch, "bookworm") == refs(monkeypatch, " ")
    assert default["node"].startswith("localhost/dralab-node:")
    assert default["mirror"].startswith("localhost/dralab-mirror:")


def test_trixie_images_are_other_images(monkeypatch):
    bookworm, trixie = refs(monkeypatch, "bookworm"), refs(monkeypatch, "trixie")
    assert trixie["node"].startswith("localhost/dralab-node-trixie:")
    assert trixie["mirror"].startswith("localhost/dralab-mirror-trixie:")
    # The suite is part of the key as well as of the name.
    assert {ref.split(":")[1] for ref in trixie.values()}.isdisjoint(ref.split(":")[1] for ref in bookworm.values())


def test_an_unknown_suite_is_refused_with_the_choices(monkeypatch):
    monkeypatch.setenv("DRALAB_NODE_SUITE", "sid")
    with pytest.raises(LabError, match=r"DRALAB_NODE_SUITE='sid' .* \['bookworm', 'trixie'\]"):
        node_images.image_ref("node")


def test_pruning_one_suite_leaves_the_other_suites_archive(monkeypatch, tmp_path):
    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path))
    monkeypatch.setattr(node_images, "podman_json", lambda *args: [])
    images = tmp_path / "images"
    images.mkdir()
    monkeypatch.setenv("DRALAB_NODE_SUITE", "trixie")
    trixie = node_images.image_archive("node")
    monkeypatch.setenv("DRALAB_NODE_SUITE", "bookworm")
    bookworm = node_images.image_archive("node")
    older = images / "dralab-node-0123456789ab.tar.zst"
    for archive in (trixie, bookworm, older):
        archive.write_bytes(b"")
    node_images.prune_images("node")
    assert sorted(p.name for p in images.iterdir()) == sorted([trixie.name, bookworm.name])
