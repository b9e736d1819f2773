"""The mirror's files/ tree, laid out like the upstream URLs: each item's make function (release tarballs and
their checksum files, kube-flannel.yml, the driver chart, the wheels, images/index.json)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from dralab_build import wheels
from dralab_build.binaries.versions import group_module
from dralab_build.mirror.output import MirrorError, copy_tree, place, run, sha256_file, write_atomic, write_tarball

if TYPE_CHECKING:
    from dralab_build.mirror.builder import Builder
    from dralab_build.mirror.plan import Item


def out(b: Builder, item: Item, index: int = 0) -> Path:
    return b.root / item.outputs[index]


def make_binary_with_hash(b: Builder, item: Item) -> None:
    src = b.binary(item.components[0])
    place(src, out(b, item))
    write_atomic(out(b, item, 1), sha256_file(src))  # dl.k8s.io: the hash alone, no newline


def sha256sum_line(path: Path) -> str:
    return f"{sha256_file(path)}  {path.name}\n"


def make_containerd(b: Builder, item: Item) -> None:
    tarball = out(b, item)
    write_tarball(tarball, [(f"bin/{c}", b.binary(c)) for c in item.components], dirs=["bin/"])
    write_atomic(out(b, item, 1), sha256sum_line(tarball))


def make_runc(b: Builder, item: Item) -> None:
    binary = out(b, item)
    place(b.binary("runc"), binary)
    write_atomic(out(b, item, 1), sha256sum_line(binary))  # one file for all assets: "<hash>  runc.<arch>"


def make_cni(b: Builder, item: Item) -> None:
    folder = b.binary("cni-plugins")
    tgz = out(b, item)
    members = [(f"./{p.name}", p) for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")
               and p.name != "build.log"]
    members.append(("./LICENSE", b.module_dir(*group_module("cni-plugins")) / "LICENSE"))
    write_tarball(tgz, members, dirs=["./"])
    write_atomic(out(b, item, 1), sha256sum_line(tgz))


def make_crictl(b: Builder, item: Item) -> None:
    tgz = out(b, item)
    write_tarball(tgz, [("crictl", b.binary("crictl"))])
    write_atomic(out(b, item, 1), sha256_file(tgz))  # cri-tools: the hash alone


def make_helm(b: Builder, item: Item) -> None:
    tgz = out(b, item)
    folder = f"linux-{b.plan.arch}"
    moddir = b.module_dir(*group_module("helm"))
    write_tarball(tgz, [(f"{folder}/helm", b.binary("helm")), (f"{folder}/LICENSE", moddir / "LICENSE"),
                        (f"{folder}/README.md", moddir / "README.md")], dirs=[f"{folder}/"])
    write_atomic(out(b, item, 1), sha256sum_line(tgz))


def make_flannel_manifest(b: Builder, item: Item) -> None:
    """What flannel's release does: `kubectl kustomize Documentation/kustomization/kube-flannel/`."""
    src = b.module_dir(*group_module("flannel")) / "Documentation" / "kustomization" / "kube-flannel"
    with tempfile.TemporaryDirectory(dir=b.work) as tmp:
        copy = Path(tmp) / "kube-flannel"
        copy_tree(src, copy)
        manifest = run([b.binary("kubectl"), "kustomize", copy]).stdout
    if "kind: DaemonSet" not in manifest:
        raise MirrorError(f"kubectl kustomize {src} produced no DaemonSet")
    write_atomic(out(b, item), manifest)


def make_chart(b: Builder, item: Item) -> None:
    """`helm package` of the chart in the driver's module, versioned like the upstream release."""
    module, version = group_module("dra-example-driver")
    src = b.module_dir(module, version) / "deployments" / "helm" / "dra-example-driver"
    chart_version = item.key["chart"]
    with tempfile.TemporaryDirectory(dir=b.work) as tmp:
        copy = Path(tmp) / "dra-example-driver"
        copy_tree(src, copy)
        env = {**os.environ, "HELM_CACHE_HOME": f"{tmp}/cache", "HELM_CONFIG_HOME": f"{tmp}/config",
               "HELM_DATA_HOME": f"{tmp}/data"}
        run([b.binary("helm"), "package", "--version", chart_version, "--app-version", version,
             "--destination", tmp, copy], env=env)
        packaged = Path(tmp) / Path(item.outputs[0]).name
        if not packaged.is_file():
            raise MirrorError(f"helm package did not write {packaged.name}")
        place(packaged, out(b, item), 0o644)
    place(out(b, item), out(b, item, 1), 0o644)  # the same file where mirror_charts_src defaults to


def make_wheels(b: Builder, item: Item) -> None:
    """files/wheels/: the node programs' wheel, its dependencies, its build backend and pip, listed in wheels.json."""
    dest = b.root / "files" / "wheels"
    tmp = dest.with_name(".wheels.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    wheel = wheels.build_tool_wheel(tmp)
    wheels.download_dependencies(wheel, tmp, python_versions=tuple(item.key["python"]),
                                 extra=(f"pip=={item.key['pip']}", *item.key["build"]))
    names = sorted(p.name for p in tmp.glob("*.whl"))
    (tmp / "wheels.json").write_text(json.dumps({"wheels": names}, indent=2) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def make_index(b: Builder, item: Item) -> None:
    index = [{"archive": a, "name": n, "tag": t} for a, n, t in item.key["images"]]
    write_atomic(out(b, item), json.dumps(index, indent=2) + "\n")
