"""gobuild.py's SOURCE_EDITS on a copy of the real dra-example-driver v0.4.0 source (from the Go module cache,
through the venv's Go): both profiles get resource.kubernetes.io/pcieRoot and nothing else changes; an edit
whose anchor is gone or doubled fails the build; the cache key follows the edits."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
GROUP = "dra-example-driver"
PROFILES = ("internal/profiles/gpu/gpu.go", "internal/profiles/net/net.go")


def _gobuild():
    name = "dralab_harness_gobuild"
    if name not in sys.modules:
        sys.path.insert(0, str(HARNESS))
        spec = importlib.util.spec_from_file_location(name, HARNESS / "gobuild.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


gobuild = _gobuild()


@pytest.fixture(scope="module", name="upstream")
def upstream_fixture() -> Path:
    """The module as the Go module proxy serves it (read-only in the module cache)."""
    module, version = gobuild.group_module(GROUP)
    go = gobuild.find_go(None)
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], env=gobuild.go_env(),
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
    gobuild.apply_source_edits(copy, gobuild.SOURCE_EDITS[GROUP])
    for file in PROFILES:
        before, after = (upstream / file).read_text(), (copy / file).read_text()
        assert after.count('"resource.kubernetes.io/pcieRoot": {') == 1, file
        assert 'ptr.To(fmt.Sprintf("pci0000:%02x", i%2))' in after, file
        [edit] = [e for e in gobuild.SOURCE_EDITS[GROUP] if e.file == file]
        assert after.replace(edit.insert, "", 1) == before, f"{file}: more changed than the inserted attribute"
        # The attribute goes into the map literal of the loop over the devices (loop variable i).
        loop = after.rindex("for i, uuid := range uuids {", 0, after.index("pcieRoot"))
        assert after.index("pcieRoot") - loop < 600, file


def test_an_anchor_that_changed_upstream_fails_loudly(copy):
    gpu = copy / PROFILES[0]
    gpu.write_text(gpu.read_text().replace("LATEST-GPU-MODEL", "NEXT-GPU-MODEL"))
    with pytest.raises(gobuild.BuildError, match=r"gpu/gpu\.go: the text to patch occurs 0 times, not once"):
        gobuild.apply_source_edits(copy, gobuild.SOURCE_EDITS[GROUP])


def test_an_anchor_found_twice_fails_loudly(copy):
    net = copy / PROFILES[1]
    [edit] = [e for e in gobuild.SOURCE_EDITS[GROUP] if e.file == PROFILES[1]]
    net.write_text(net.read_text() + "\n/*\n" + edit.anchor + "*/\n")
    with pytest.raises(gobuild.BuildError, match=r"net/net\.go: the text to patch occurs 2 times, not once"):
        gobuild.apply_source_edits(copy, gobuild.SOURCE_EDITS[GROUP])


def test_the_cache_key_follows_the_edits(monkeypatch):
    version = gobuild.group_module(GROUP)[1]
    patched = gobuild.build_version(GROUP)
    assert patched.startswith(version + "+dralab.") and patched != version
    plugin = gobuild.BY_NAME["dra-example-kubeletplugin"]
    assert gobuild.binary_path(plugin).parent.name == f"dra-example-kubeletplugin-{patched}"
    assert gobuild.build_version("kubernetes") == gobuild.group_module("kubernetes")[1]  # not patched
    [first, second] = gobuild.SOURCE_EDITS[GROUP]
    changed = dataclasses.replace(first, insert=first.insert.replace("pci0000", "pci0001"))
    monkeypatch.setitem(gobuild.SOURCE_EDITS, GROUP, [changed, second])
    assert gobuild.build_version(GROUP) not in (patched, version)
    assert "replace sigs.k8s.io/dra-example-driver => ./src" in gobuild.gomod_template(GROUP)
