"""dralab_build/binaries/source_edits.py's SOURCE_EDITS on a copy of the real dra-example-driver v0.4.0 source (from the Go module cache,
through the venv's Go): both profiles get resource.kubernetes.io/pcieRoot and nothing else changes; an edit
whose anchor is gone or doubled fails the build; the cache key follows the edits."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from dralab_build.binaries import source_edits  # noqa: E402  (dralab_build/binaries/source_edits.py)
from dralab_build.binaries.build import gomod_template  # noqa: E402
from dralab_build.binaries.components import BY_NAME, BuildError  # noqa: E402
from dralab_build.binaries.toolchain import find_go, go_env  # noqa: E402
from dralab_build.binaries.versions import binary_path, build_version, group_module  # noqa: E402

GROUP = "dra-example-driver"
PROFILES = ("internal/profiles/gpu/gpu.go", "internal/profiles/net/net.go")


@pytest.fixture(scope="module", name="upstream")
def upstream_fixture() -> Path:
    """The module as the Go module proxy serves it (read-only in the module cache)."""
    module, version = group_module(GROUP)
    go = find_go(None)
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], env=go_env(),
                         capture_output=True, text=True, timeout=300, check=True).stdout
    return Path(json.loads(out)["Dir"])


@pytest.fixture(name="copy")
def copy_fixture(upstream, tmp_path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(upstream / "internal", src / "internal")
    for path in [src, *src.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return src


def test_both_profiles_publish_the_pcie_root_and_nothing_else_changes(upstream, copy):
    source_edits.apply_source_edits(copy, source_edits.SOURCE_EDITS[GROUP])
    for file in PROFILES:
        before, after = (upstream / file).read_text(), (copy / file).read_text()
        assert after.count('"resource.kubernetes.io/pcieRoot": {') == 1, file
        assert 'ptr.To(fmt.Sprintf("pci0000:%02x", i%2))' in after, file
        [edit] = [e for e in source_edits.SOURCE_EDITS[GROUP] if e.file == file]
        assert after.replace(edit.insert, "", 1) == before, f"{file}: more changed than the inserted attribute"
        # The attribute goes into the map literal of the loop over the devices (loop variable i).
        loop = after.rindex("for i, uuid := range uuids {", 0, after.index("pcieRoot"))
        assert after.index("pcieRoot") - loop < 600, file


def test_an_anchor_that_changed_upstream_fails_loudly(copy):
    gpu = copy / PROFILES[0]
    gpu.write_text(gpu.read_text().replace("LATEST-GPU-MODEL", "NEXT-GPU-MODEL"))
    with pytest.raises(BuildError, match=r"gpu/gpu\.go: the text to patch occurs 0 times, not once"):
        source_edits.apply_source_edits(copy, source_edits.SOURCE_EDITS[GROUP])


def test_an_anchor_found_twice_fails_loudly(copy):
    net = copy / PROFILES[1]
    [edit] = [e for e in source_edits.SOURCE_EDITS[GROUP] if e.file == PROFILES[1]]
    net.write_text(net.read_text() + "\n/*\n" + edit.anchor + "*/\n")
    with pytest.raises(BuildError, match=r"net/net\.go: the text to patch occurs 2 times, not once"):
        source_edits.apply_source_edits(copy, source_edits.SOURCE_EDITS[GROUP])


def test_the_cache_key_follows_the_edits(monkeypatch):
    version = group_module(GROUP)[1]
    patched = build_version(GROUP)
    assert patched.startswith(version + "+dralab.") and patched != version
    plugin = BY_NAME["dra-example-kubeletplugin"]
    assert binary_path(plugin).parent.name == f"dra-example-kubeletplugin-{patched}"
    assert build_version("kubernetes") == group_module("kubernetes")[1]  # not patched
    [first, second] = source_edits.SOURCE_EDITS[GROUP]
    changed = dataclasses.replace(first, insert=first.insert.replace("pci0000", "pci0001"))
    monkeypatch.setitem(source_edits.SOURCE_EDITS, GROUP, [changed, second])
    assert build_version(GROUP) not in (patched, version)
    assert "replace sigs.k8s.io/dra-example-driver => ./src" in gomod_template(GROUP)
