"""The mirror's builder: the tools an item needs (binaries, Go modules, kubeadm's image list), the state that says
an item is built (one file per item under mirror-work/state/, holding its key), and mirror.json, written last.

${DRALAB_CACHE}/mirror holds the mirror, ${DRALAB_CACHE}/mirror-work what making it needs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dralab_build.binaries.build import build
from dralab_build.binaries.components import BY_NAME
from dralab_build.binaries.toolchain import find_go, go_env
from dralab_build.binaries.versions import binary_path, is_complete
from dralab_build.cache import cache_root
from dralab_build.mirror.output import MirrorError, log, run, write_atomic

if TYPE_CHECKING:
    from dralab_build.mirror.plan import Item, Plan

# Bump when the way an item is made changes: every item is rebuilt.
RECIPE = 2


class Builder:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.cache = cache_root()
        self.root = self.cache / "mirror"
        self.work = self.cache / "mirror-work"
        self.plan: Plan | None = None
        self._go: str | None = None
        self._module_dirs: dict = {}
        self.podman_environ: dict | None = None  # images.podman_env: podman's private configuration

    # -- tools

    def go(self) -> str:
        if self._go is None:
            self._go = find_go(self.args.go)
        return self._go

    def binary(self, name: str) -> Path:
        comp = BY_NAME[name]
        if not is_complete(comp):
            build(comp, self.go())
        return binary_path(comp)

    def module_dir(self, module: str, version: str) -> Path:
        key = (module, version)
        if key not in self._module_dirs:
            self.work.mkdir(parents=True, exist_ok=True)
            info = json.loads(run([self.go(), "mod", "download", "-json", f"{module}@{version}"], cwd=self.work,
                                  env=go_env()).stdout)
            if info.get("Error") or not info.get("Dir"):
                raise MirrorError(f"{module}@{version}: {info.get('Error', 'not downloaded')}")
            self._module_dirs[key] = Path(info["Dir"])
        return self._module_dirs[key]

    def kubeadm_images(self, version: str, repository: str) -> list[str]:
        """`kubeadm config images list` for this version, cached: a warm run needs no kubeadm."""
        cached = self.work / "kubeadm-images" / f"v{version}-{repository.replace('/', '_')}.json"
        if cached.is_file():
            return json.loads(cached.read_text())
        kubeadm = self.binary("kubeadm")
        listed = run([kubeadm, "config", "images", "list", "--kubernetes-version", f"v{version}",
                      "--image-repository", repository]).stdout.split()
        if not listed:
            raise MirrorError("kubeadm config images list printed nothing")
        write_atomic(cached, json.dumps(listed))
        return listed

    # -- state: an item is built when its state file holds its key and its outputs exist

    def state_file(self, item: Item) -> Path:
        return self.work / "state" / (hashlib.sha256(item.id.encode()).hexdigest()[:16] + ".json")

    def item_key(self, item: Item) -> dict:
        key = {"recipe": RECIPE, "id": item.id, "arch": self.plan.arch, "outputs": item.outputs, "inputs": item.key}
        return json.loads(json.dumps(key))  # as it reads back from the state file (tuples become lists)

    def is_built(self, item: Item) -> bool:
        state = self.state_file(item)
        try:
            recorded = json.loads(state.read_text())
        except (OSError, ValueError):
            return False
        return recorded == self.item_key(item) and all((self.root / o).is_file() for o in item.outputs)

    def make(self, item: Item) -> None:
        state = self.state_file(item)
        state.unlink(missing_ok=True)
        for name in item.components:
            self.binary(name)
        started = time.monotonic()
        item.make(self, item)
        missing = [o for o in item.outputs if not (self.root / o).is_file()]
        if missing:
            raise MirrorError(f"{item.id}: not written: {missing}")
        write_atomic(state, json.dumps(self.item_key(item)))
        log(f"{item.id}: {time.monotonic() - started:.0f}s")

    # -- whole mirror

    def manifest_path(self) -> Path:
        return self.root / "mirror.json"

    def plan_key(self) -> str:
        keys = [self.item_key(i) for i in self.plan.items]
        return hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()

    def is_complete(self) -> bool:
        try:
            manifest = json.loads(self.manifest_path().read_text())
        except (OSError, ValueError):
            return False
        if manifest.get("key") != self.plan_key():
            return False
        for rel, size in manifest.get("files", {}).items():
            try:
                if (self.root / rel).stat().st_size != size:
                    return False
            except OSError:
                return False
        return True

    def prune(self) -> list[str]:
        """Remove files from files/ and images/ that the plan does not hold (older versions)."""
        wanted = {o for i in self.plan.items for o in i.outputs} | set(listed_wheels(self.root))
        removed = []
        for top in ("files", "images"):
            base = self.root / top
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*"), reverse=True):
                rel = path.relative_to(self.root).as_posix()
                if path.is_dir():
                    with contextlib.suppress(OSError):
                        path.rmdir()  # only when empty
                elif rel not in wanted:
                    path.unlink()
                    removed.append(rel)
        return removed

    def write_manifest(self) -> None:
        outputs = [o for i in self.plan.items for o in i.outputs] + listed_wheels(self.root)
        files = {o: (self.root / o).stat().st_size for o in outputs}
        manifest = {
            "key": self.plan_key(),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "arch": self.plan.arch,
            "versions": self.plan.versions,
            "images": [{"name": i.name, "tag": i.tag, "archive": i.archive} for i in self.plan.images],
            "charts": [Path(o).name for i in self.plan.items if i.kind == "chart" for o in i.outputs[1:]],
            "notes": self.plan.notes,
            # The inventory variables (or --set) the mirror was built with (tests/lab reads them).
            "overrides": {k: self.plan.overrides[k] for k in sorted(self.plan.vars.used)},
            "files": files,
        }
        write_atomic(self.manifest_path(), json.dumps(manifest, indent=2) + "\n")


def listed_wheels(root: Path) -> list[str]:
    """files/wheels/<name> of every wheel wheels.json lists (outputs not known before the build)."""
    try:
        names = json.loads((root / "files" / "wheels" / "wheels.json").read_text())["wheels"]
    except (OSError, ValueError, KeyError):
        return []
    return [f"files/wheels/{name}" for name in names]
