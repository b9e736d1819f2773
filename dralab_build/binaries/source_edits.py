"""The lab's own changes to upstream source, made to a copy of a module in the cache, never in the repository.

DROP_IMPORTS removes imports of code the Go module proxy does not serve; SOURCE_EDITS adds what the lab needs
(the example driver's resource.kubernetes.io/pcieRoot). A patched group is cached under its version plus
edits_hash (versions.build_version).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from dralab_build.binaries.components import BuildError

# Upstream source that cannot be built as published because one of its imports
# needs a module the Go module proxy does not serve: the build copies the module
# into the cache workdir (./src, used through a `replace`), drops those imports
# from the named file, and builds the copy. Nothing of it is kept in the
# repository. group -> (file in the module, [import paths]).
DROP_IMPORTS = {
    # flanneld: the Tencent Cloud VPC backend needs tencentcloud-sdk-go/tencentcloud/vpc,
    # of which the proxy serves the go.mod but not the code. The lab uses vxlan.
    "flannel": ("main.go", ["github.com/flannel-io/flannel/pkg/backend/tencentvpc"]),
}


@dataclass(frozen=True)
class SourceEdit:
    """Insert `insert` right after `anchor`, which must occur exactly once in `file` of the module."""
    file: str
    anchor: str
    insert: str


def _pcie_root_edit(file: str, model: str, indent: str) -> SourceEdit:
    anchor = (f'{indent}"model": {{\n{indent}\tStringValue: ptr.To("{model}"),\n{indent}}},\n')
    insert = (f'{indent}"resource.kubernetes.io/pcieRoot": {{\n'
              f'{indent}\tStringValue: ptr.To(fmt.Sprintf("pci0000:%02x", i%2)),\n{indent}}},\n')
    return SourceEdit(file, anchor, insert)


# The lab's own build of upstream source: edits made to a copy of the module (./src in the cache workdir,
# used through a `replace`), never in the repository. A patched group's binaries (and the mirror image that
# holds them) are cached under the version plus a hash of its edits (build_version), so changing an edit
# rebuilds them; an anchor that is missing or occurs twice fails the build (the upstream source changed).
SOURCE_EDITS = {
    # gpu_nic_numa (plugins/module_utils/dra/features.py): a GPU and a NIC on one PCIe root, through
    # `constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]`. v0.4.0's gpu and net profiles publish
    # attributes of their own domains only (gpu.example.com/..., net.example.com/...), so no claim can match the
    # two. Both profiles also publish the standard attribute resource.kubernetes.io/pcieRoot: "pci0000:00" for
    # an even device index, "pci0000:01" for an odd one, so GPU k and NIC k of a node share a root. The loop
    # variable of both EnumerateDevices is i; partitions copy their card's attributes, so they keep its root.
    "dra-example-driver": [
        _pcie_root_edit("internal/profiles/gpu/gpu.go", "LATEST-GPU-MODEL", "\t\t\t"),
        _pcie_root_edit("internal/profiles/net/net.go", "LATEST-NET-MODEL", "\t\t\t\t"),
    ],
}


def edits_hash(group: str) -> str:
    """A short hash of the group's SOURCE_EDITS ("" for an unpatched group)."""
    edits = SOURCE_EDITS.get(group)
    if not edits:
        return ""
    text = json.dumps([[e.file, e.anchor, e.insert] for e in edits])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def apply_source_edits(src: Path, edits: list[SourceEdit], what: str = "") -> None:
    """Apply the edits to the module copy in `src`; BuildError when an anchor is not there exactly once."""
    for edit in edits:
        target = src / edit.file
        text = target.read_text()
        found = text.count(edit.anchor)
        if found != 1:
            raise BuildError(f"{what or src}/{edit.file}: the text to patch occurs {found} times, not once "
                             f"(did the upstream source change?): {edit.anchor!r}")
        target.write_text(text.replace(edit.anchor, edit.anchor + edit.insert))


def drop_imports(src: Path, file: str, imports: list[str], what: str) -> None:
    """Remove the import lines of `imports` from `file` of the module copy in `src`."""
    target = src / file
    lines = target.read_text().splitlines(keepends=True)
    kept = [line for line in lines
            if not any(re.fullmatch(rf'\s*(_\s+)?"{re.escape(i)}"\s*', line.strip("\n")) for i in imports)]
    if len(lines) - len(kept) != len(imports):
        raise BuildError(f"{what}/{file}: did not find the imports {imports} to drop")
    target.write_text("".join(kept))
