"""Make the collection importable as ansible_collections.dralab.workshop.

Ansible's own collection loader is installed so that both Python imports and
template lookups of dralab.workshop.* filters resolve to this checkout.
"""

from __future__ import annotations

import pathlib

from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

REPO = pathlib.Path(__file__).resolve().parents[2]
_AnsibleCollectionFinder(paths=[str(REPO / "collections")], scan_sys_paths=True)._install()
