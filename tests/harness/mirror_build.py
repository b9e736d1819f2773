"""Build the podman lab's offline mirror from the Go module proxy and Debian's packages.

What the roles download when dralab_download_mirror / dralab_registry_mirror
point at the mirror (see docs/offline-mirror.md), built from source instead of
downloaded, into ${DRALAB_CACHE:-~/.cache/dralab}/mirror/:

    files/    laid out like the upstream URLs, with the checksum files the roles
              check (mirror_files_src): kubeadm/kubelet/kubectl, the containerd,
              runc, CNI plugins and crictl releases, helm, kube-flannel.yml,
              charts/dra-example-driver-<version>.tgz, and wheels/: the wheel of
              can-has-gpu + dralab-lease-reaper (tests/harness/wheels.py), its
              dependencies for the nodes' Python and pip (participant_tool role),
              listed in wheels/wheels.json
    images/   one docker-archive per image, <last name part>_<tag>.tar, under its
              upstream name (mirror_images_src), index.json (the mirror_images
              list: archive, name, tag) and the chart again (mirror_charts)
    mirror.json   written last: what the mirror holds. A mirror without it (or
              with one for other versions) is incomplete and gets built.

Versions come from the roles' defaults (roles/*/defaults/main.yml), with the
podman lab's inventory variables (inventories/local/group_vars/all.yml) and
--set NAME=VALUE on top, as Ansible would see them; the control plane images
are the ones `kubeadm config images list` names for that Kubernetes version.
Binaries come from tests/harness/gobuild.py (cached by version under bin/; a
build with the lab's own source edits, such as the example driver's, under the
version plus a hash of the edits, which is also part of its image's key).
Images are built with `podman build` FROM scratch + COPY of static binaries,
reproducibly (the same inputs give the same image ID); kube-proxy and flannel
also get a Debian rootfs (debootstrap minbase with iptables, nftables and
conntrack, ADDed as a tarball) because they run those tools. busybox is Debian's
busybox-static. podman runs with a private configuration and image store under
${DRALAB_CACHE}/mirror-work/, which also holds the base rootfs, the build
contexts and one state file per mirror item.

Every output is written under a temporary name and renamed when complete; an
item counts as built when its state file matches its versions. A warm run
(nothing changed) only reads mirror.json and stats the files.

Needs: Go (see gobuild.py), gcc and Debian's libseccomp-dev (runc), podman,
debootstrap, dpkg-deb and apt-get (busybox-static is downloaded, not installed).

Examples:
    nice -n 10 python tests/harness/mirror_build.py
    python tests/harness/mirror_build.py --set containerd_crictl_version=1.34.0
    python tests/harness/mirror_build.py --summary      # what the mirror holds, build nothing
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HARNESS_DIR = Path(__file__).resolve().parent
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))
import gobuild  # noqa: E402  (tests/harness/gobuild.py)
import role_vars  # noqa: E402
import wheels  # noqa: E402  (tests/harness/wheels.py)

# Bump when the way an item is made changes: every item is rebuilt.
RECIPE = 2

GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_PACKAGES = "iptables,nftables,conntrack"
# The workshop's exercises run busybox:1.37 (shared/seeds); the binary is Debian's busybox-static.
BUSYBOX_TAG = "1.37"

PODMAN_CONF = """\
# Written by tests/harness/mirror_build.py: what podman needs on the build hosts
# (no CAP_SYS_RESOURCE, hybrid cgroups), without editing /etc/containers.
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def log(msg: str) -> None:
    print(f"[mirror] {msg}", file=sys.stderr, flush=True)


class MirrorError(Exception):
    pass


# --- small file helpers ------------------------------------------------------------

def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def partial(path: Path) -> Path:
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def write_atomic(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(path)
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def place(src: Path, dest: Path, mode: int = 0o755) -> None:
    """Put a copy of src at dest (a hard link when possible: the binaries are never modified)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(dest)
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, mode)
    os.replace(tmp, dest)
    tmp.unlink(missing_ok=True)  # rename() does nothing when both names are links to the same file


def write_tarball(dest: Path, members: list[tuple[str, Path]], dirs: list[str] = ()) -> None:
    """A .tar.gz of (name in archive, file) entries, root-owned, modes 0755/0644 as in the releases."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(dest)
    mtime = int(max(member[1].stat().st_mtime for member in members))
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name, src in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = src.stat().st_size, mtime
            info.mode = 0o755 if os.access(src, os.X_OK) else 0o644
            with open(src, "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, dest)


def copy_tree(src: Path, dest: Path) -> None:
    """A writable copy of a folder from the (read-only) Go module cache."""
    shutil.copytree(src, dest)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def run(cmd: list, logf=None, **kwargs) -> subprocess.CompletedProcess:
    cmd = [str(c) for c in cmd]
    if logf:
        logf.write(f"$ {' '.join(cmd)}\n")
        logf.flush()
    proc = subprocess.run(cmd, stdout=logf or subprocess.PIPE, stderr=subprocess.STDOUT if logf else subprocess.PIPE,
                          text=True, check=False, **kwargs)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout or "").strip()[-2000:] if not logf else f"see {logf.name}"
        raise MirrorError(f"`{' '.join(cmd[:4])} ...` failed with exit code {proc.returncode}: {detail}")
    return proc


# --- the plan: what the mirror holds ----------------------------------------------

@dataclass
class Item:
    """One thing in the mirror: its outputs (relative to the mirror root), what it is made from, how."""
    id: str
    outputs: list[str]
    key: dict
    make: Callable[["Builder", "Item"], None]
    components: list[str] = field(default_factory=list)  # gobuild.py components it needs
    kind: str = "files"


@dataclass
class Image:
    name: str
    tag: str
    recipe: str  # scratch, debian-base, busybox
    copies: list[tuple[str, str]]  # (gobuild.py component or special source, path in the image)
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    user: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}:{self.tag}"

    @property
    def archive(self) -> str:
        return f"{self.name.rsplit('/', 1)[-1]}_{self.tag}.tar"


class Plan:
    def __init__(self, args: argparse.Namespace, overrides: dict):
        self.args = args
        self.vars = role_vars.RoleVars(overrides)
        self.overrides = overrides
        self.arch = GO_ARCH.get(platform.machine(), platform.machine())
        self.items: list[Item] = []
        self.images: list[Image] = []
        self.versions: dict[str, str] = {}
        self.notes: list[str] = []

    def var(self, role: str, name: str) -> str:
        try:
            return self.vars.str(role, name)
        except KeyError:
            raise MirrorError(f"roles/{role}/defaults/main.yml has no {name}") from None
        except role_vars.VarError as exc:
            raise MirrorError(str(exc)) from None


def pinned_version(group: str) -> str:
    return gobuild.group_module(group)[1]


def check_same(what: str, wanted: str, pinned: str, where: str) -> None:
    if wanted.lstrip("v") != pinned.lstrip("v"):
        raise MirrorError(f"{what}: the roles want {wanted} but {where} pins {pinned}; make them agree "
                          f"(bump {where}, or set the role variable to what is pinned)")


def make_plan(args: argparse.Namespace, overrides: dict, builder: "Builder") -> Plan:
    plan = Plan(args, overrides)
    arch, v = plan.arch, plan.var

    k8s = v("kubernetes", "kubernetes_version")
    check_same("Kubernetes", k8s, pinned_version("kubernetes"), "tests/harness/gomod/kubernetes/go.mod")
    check_same("Kubernetes (control_plane)", v("control_plane", "control_plane_kubernetes_version"), k8s,
               "roles/kubernetes (kubernetes_version)")
    containerd, runc = v("containerd", "containerd_version"), v("containerd", "containerd_runc_version")
    cni, crictl = v("containerd", "containerd_cni_plugins_version"), v("containerd", "containerd_crictl_version")
    helm, flannel = v("dra_driver", "dra_driver_helm_version"), v("cni", "cni_flannel_version")
    chart_version, driver_tag = v("dra_driver", "dra_driver_chart_version"), v("dra_driver", "dra_driver_image_tag")
    driver = pinned_version("dra-example-driver")
    check_same("dra-example-driver image", driver_tag, driver, "tests/harness/gomod/dra-example-driver/go.mod")
    plan.versions = {"kubernetes": k8s, "containerd": containerd, "runc": runc, "cni-plugins": cni,
                     "crictl": crictl, "helm": helm, "flannel": flannel, "dra-example-driver": driver,
                     "dra-example-driver chart": chart_version}
    if gobuild.build_version("dra-example-driver") != driver:
        plan.versions["dra-example-driver"] = (f"{driver}, the lab's build {gobuild.build_version('dra-example-driver')}"
                                               " (gobuild.py SOURCE_EDITS: resource.kubernetes.io/pcieRoot)")
    role_crictl = role_vars.RoleVars().str("containerd", "containerd_crictl_version")
    if crictl != role_crictl:
        plan.notes.append(f"crictl is {crictl}, not the containerd role's default {role_crictl}: an inventory "
                          f"that uses this mirror must set containerd_crictl_version: \"{crictl}\"")

    gh = "github.com"
    # Kubernetes binaries: dl.k8s.io/release/v<version>/bin/linux/<arch>/<name>{,.sha256 (the hash alone)}
    for name in plan.vars.get("kubernetes", "kubernetes_binaries"):
        base = f"files/dl.k8s.io/release/v{k8s}/bin/linux/{arch}/{name}"
        plan.items.append(Item(f"kubernetes {name}", [base, base + ".sha256"], {"version": k8s},
                               make_binary_with_hash, [name]))

    rel = f"files/{gh}/containerd/containerd/releases/download/v{containerd}"
    for flavour in ("", "static-"):  # the same static build; EL 9 nodes ask for the static name
        tarball = f"{rel}/containerd-{flavour}{containerd}-linux-{arch}.tar.gz"
        plan.items.append(Item(f"containerd {flavour}release", [tarball, tarball + ".sha256sum"],
                               {"version": containerd}, make_containerd,
                               ["containerd", "containerd-shim-runc-v2", "ctr"]))
    rel = f"files/{gh}/opencontainers/runc/releases/download/v{runc}"
    plan.items.append(Item("runc", [f"{rel}/runc.{arch}", f"{rel}/runc.sha256sum"], {"version": runc},
                           make_runc, ["runc"]))
    tgz = f"files/{gh}/containernetworking/plugins/releases/download/v{cni}/cni-plugins-linux-{arch}-v{cni}.tgz"
    plan.items.append(Item("cni-plugins", [tgz, tgz + ".sha256"], {"version": cni}, make_cni, ["cni-plugins"]))
    tgz = f"files/{gh}/kubernetes-sigs/cri-tools/releases/download/v{crictl}/crictl-v{crictl}-linux-{arch}.tar.gz"
    plan.items.append(Item("crictl", [tgz, tgz + ".sha256"], {"version": crictl}, make_crictl, ["crictl"]))
    tgz = f"files/get.helm.sh/helm-v{helm}-linux-{arch}.tar.gz"
    plan.items.append(Item("helm", [tgz, tgz + ".sha256sum"], {"version": helm}, make_helm, ["helm"]))
    plan.items.append(Item("kube-flannel.yml", [f"files/{gh}/flannel-io/flannel/releases/download/v{flannel}/"
                                                "kube-flannel.yml"], {"version": flannel}, make_flannel_manifest,
                           ["kubectl"]))
    # Python wheels for the participant tool and the lease reaper (participant_tool role).
    pip_version = v("participant_tool", "participant_tool_pip_version")
    plan.items.append(Item("python wheels", ["files/wheels/wheels.json"],
                           {"source": wheels.source_digest(), "pip": pip_version, "python": list(wheels.NODE_PYTHONS),
                            "platforms": list(wheels.PLATFORMS)}, make_wheels, kind="wheels"))
    pythons = ", ".join(wheels.NODE_PYTHONS)
    plan.versions["python wheels"] = f"dralab-can-has-gpu + dependencies for Python {pythons}, pip {pip_version}"
    chart = f"dra-example-driver-{chart_version}.tgz"
    plan.items.append(Item("dra-example-driver chart", [f"files/charts/{chart}", f"images/{chart}"],
                           {"version": driver, "chart": chart_version}, make_chart, ["helm"], kind="chart"))

    # Images: the control plane as kubeadm names it, the roles' images, busybox.
    kubeadm_images = builder.kubeadm_images(k8s, v("control_plane", "control_plane_image_repository"))
    etcd_repo, etcd_tag = v("control_plane", "control_plane_etcd_image_repository"), \
        v("control_plane", "control_plane_etcd_image_tag")
    dns_repo, dns_tag = v("control_plane", "control_plane_dns_image_repository"), \
        v("control_plane", "control_plane_dns_image_tag")
    k8s_bin = "/usr/local/bin/"
    for ref in kubeadm_images:
        name, tag = ref.rsplit(":", 1)
        last = name.rsplit("/", 1)[-1]
        if last in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            plan.images.append(Image(name, tag, "scratch", [(last, k8s_bin + last)], entrypoint=[k8s_bin + last]))
        elif last == "kube-proxy":
            plan.images.append(Image(name, tag, "debian-base", [(last, k8s_bin + last)],
                                     entrypoint=[k8s_bin + last]))
        elif last == "etcd":
            check_same("etcd image", tag.split("-")[0], pinned_version("etcd"), "tests/harness/gomod/etcd/go.mod")
            name, tag = (etcd_repo.rstrip("/") + "/etcd" if etcd_repo else name), (etcd_tag or tag)
            plan.images.append(Image(name, tag, "scratch", [("etcd", k8s_bin + "etcd")]))
        elif last == "coredns":
            check_same("coredns image", tag, pinned_version("coredns"), "tests/harness/gomod/coredns/go.mod")
            name, tag = (dns_repo.rstrip("/") + "/coredns" if dns_repo else name), (dns_tag or tag)
            plan.images.append(Image(name, tag, "scratch", [("coredns", "/coredns")], entrypoint=["/coredns"]))
        elif last == "pause":
            plan.images.append(Image(name, tag, "scratch", [("@pause", "/pause")], entrypoint=["/pause"],
                                     user="65535:65535"))
        else:
            raise MirrorError(f"kubeadm names an image the mirror does not know how to build: {ref}")
    sandbox = v("containerd", "containerd_sandbox_image")
    if sandbox not in [i.ref for i in plan.images]:
        name, tag = sandbox.rsplit(":", 1)
        plan.images.append(Image(name, tag, "scratch", [("@pause", "/pause")], entrypoint=["/pause"],
                                 user="65535:65535"))
    name, tag = v("cni", "cni_flannel_image").rsplit(":", 1)
    plan.images.append(Image(name, tag, "debian-base", [("flanneld", "/opt/bin/flanneld")],
                             entrypoint=["/opt/bin/flanneld"]))
    name, tag = v("cni", "cni_flannel_cni_plugin_image").rsplit(":", 1)
    plan.images.append(Image(name, tag, "busybox", [("flannel-cni", "/flannel")]))
    plan.versions["flannel cni-plugin"] = f"{tag} (built from containernetworking/plugins " \
                                          f"{pinned_version('flannel-cni')} plugins/meta/flannel)"
    plan.notes.append(f"{name}:{tag} holds the flannel CNI plugin of containernetworking/plugins "
                      f"{pinned_version('flannel-cni')} (github.com/flannel-io/cni-plugin is not on the Go module "
                      "proxy); it supports CNI spec versions up to 0.4.0, while flannel's kube-flannel.yml says "
                      "cniVersion 1.0.0")
    plan.images.append(Image(v("dra_driver", "dra_driver_image_repository"), driver_tag, "scratch",
                             [(c, "/usr/bin/" + c) for c in ("dra-example-kubeletplugin", "dra-example-controller",
                                                             "dra-example-webhook")]))
    plan.images.append(Image("docker.io/library/busybox", args.busybox_tag, "busybox", [], cmd=["sh"]))

    for image in plan.images:
        components = [copy[0] for copy in image.copies if not copy[0].startswith("@")]
        key = {"ref": image.ref, "recipe": image.recipe, "copies": image.copies,
               "versions": {c: gobuild.component_version(gobuild.BY_NAME[c]) for c in components},
               "entrypoint": image.entrypoint, "cmd": image.cmd, "user": image.user}
        if image.recipe == "debian-base":
            key["base"] = [args.debian_suite, args.base_packages]
        plan.items.append(Item(f"image {image.ref}", [f"images/{image.archive}"], key,
                               lambda b, item, image=image: b.make_image(image), components, kind="image"))
    plan.items.append(Item("images/index.json", ["images/index.json"],
                           {"images": [[i.archive, i.name, i.tag] for i in plan.images]}, make_index, kind="index"))
    plan.versions["kubeadm images"] = ", ".join(kubeadm_images)
    plan.versions["busybox"] = f"{args.busybox_tag} (Debian busybox-static)"
    return plan


# --- making files ------------------------------------------------------------------

def out(b: "Builder", item: Item, index: int = 0) -> Path:
    return b.root / item.outputs[index]


def make_binary_with_hash(b: "Builder", item: Item) -> None:
    src = b.binary(item.components[0])
    place(src, out(b, item))
    write_atomic(out(b, item, 1), sha256_file(src))  # dl.k8s.io: the hash alone, no newline


def sha256sum_line(path: Path) -> str:
    return f"{sha256_file(path)}  {path.name}\n"


def make_containerd(b: "Builder", item: Item) -> None:
    tarball = out(b, item)
    write_tarball(tarball, [(f"bin/{c}", b.binary(c)) for c in item.components], dirs=["bin/"])
    write_atomic(out(b, item, 1), sha256sum_line(tarball))


def make_runc(b: "Builder", item: Item) -> None:
    binary = out(b, item)
    place(b.binary("runc"), binary)
    write_atomic(out(b, item, 1), sha256sum_line(binary))  # one file for all assets: "<hash>  runc.<arch>"


def make_cni(b: "Builder", item: Item) -> None:
    folder = b.binary("cni-plugins")
    tgz = out(b, item)
    members = [(f"./{p.name}", p) for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith(".")
               and p.name != "build.log"]
    members.append(("./LICENSE", b.module_dir(*gobuild.group_module("cni-plugins")) / "LICENSE"))
    write_tarball(tgz, members, dirs=["./"])
    write_atomic(out(b, item, 1), sha256sum_line(tgz))


def make_crictl(b: "Builder", item: Item) -> None:
    tgz = out(b, item)
    write_tarball(tgz, [("crictl", b.binary("crictl"))])
    write_atomic(out(b, item, 1), sha256_file(tgz))  # cri-tools: the hash alone


def make_helm(b: "Builder", item: Item) -> None:
    tgz = out(b, item)
    folder = f"linux-{b.plan.arch}"
    moddir = b.module_dir(*gobuild.group_module("helm"))
    write_tarball(tgz, [(f"{folder}/helm", b.binary("helm")), (f"{folder}/LICENSE", moddir / "LICENSE"),
                        (f"{folder}/README.md", moddir / "README.md")], dirs=[f"{folder}/"])
    write_atomic(out(b, item, 1), sha256sum_line(tgz))


def make_flannel_manifest(b: "Builder", item: Item) -> None:
    """What flannel's release does: `kubectl kustomize Documentation/kustomization/kube-flannel/`."""
    src = b.module_dir(*gobuild.group_module("flannel")) / "Documentation" / "kustomization" / "kube-flannel"
    with tempfile.TemporaryDirectory(dir=b.work) as tmp:
        copy = Path(tmp) / "kube-flannel"
        copy_tree(src, copy)
        manifest = run([b.binary("kubectl"), "kustomize", copy]).stdout
    if "kind: DaemonSet" not in manifest:
        raise MirrorError(f"kubectl kustomize {src} produced no DaemonSet")
    write_atomic(out(b, item), manifest)


def make_chart(b: "Builder", item: Item) -> None:
    """`helm package` of the chart in the driver's module, versioned like the upstream release."""
    module, version = gobuild.group_module("dra-example-driver")
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


def make_wheels(b: "Builder", item: Item) -> None:
    """files/wheels/: the node programs' wheel, its dependencies and pip, listed in wheels.json."""
    dest = b.root / "files" / "wheels"
    tmp = dest.with_name(".wheels.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    wheel = wheels.build_tool_wheel(tmp)
    wheels.download_dependencies(wheel, tmp, python_versions=tuple(item.key["python"]),
                                 extra=(f"pip=={item.key['pip']}",))
    names = sorted(p.name for p in tmp.glob("*.whl"))
    (tmp / "wheels.json").write_text(json.dumps({"wheels": names}, indent=2) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def listed_wheels(root: Path) -> list[str]:
    """files/wheels/<name> of every wheel wheels.json lists (outputs not known before the build)."""
    try:
        names = json.loads((root / "files" / "wheels" / "wheels.json").read_text())["wheels"]
    except (OSError, ValueError, KeyError):
        return []
    return [f"files/wheels/{name}" for name in names]


def make_index(b: "Builder", item: Item) -> None:
    index = [{"archive": a, "name": n, "tag": t} for a, n, t in item.key["images"]]
    write_atomic(out(b, item), json.dumps(index, indent=2) + "\n")


# --- the builder -------------------------------------------------------------------

class Builder:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.cache = gobuild.cache_root()
        self.root = self.cache / "mirror"
        self.work = self.cache / "mirror-work"
        self.plan: Plan | None = None
        self._go: str | None = None
        self._module_dirs: dict = {}
        self._podman_env: dict | None = None

    # -- tools

    def go(self) -> str:
        if self._go is None:
            self._go = gobuild.find_go(self.args.go)
        return self._go

    def binary(self, name: str) -> Path:
        comp = gobuild.BY_NAME[name]
        if not gobuild.is_complete(comp):
            gobuild.build(comp, self.go())
        return gobuild.binary_path(comp)

    def module_dir(self, module: str, version: str) -> Path:
        key = (module, version)
        if key not in self._module_dirs:
            self.work.mkdir(parents=True, exist_ok=True)
            info = json.loads(run([self.go(), "mod", "download", "-json", f"{module}@{version}"], cwd=self.work,
                                  env=gobuild.go_env()).stdout)
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

    # -- podman

    def podman_env(self) -> dict:
        if self._podman_env is None:
            conf = self.work / "podman"
            conf.mkdir(parents=True, exist_ok=True)
            write_atomic(conf / "containers.conf", PODMAN_CONF)
            write_atomic(conf / "storage.conf", "[storage]\ndriver = \"overlay\"\n"
                         f"graphroot = \"{conf / 'storage'}\"\nrunroot = \"{conf / 'run'}\"\n")
            self._podman_env = {**os.environ, "CONTAINERS_CONF": str(conf / "containers.conf"),
                                "CONTAINERS_STORAGE_CONF": str(conf / "storage.conf"), "TMPDIR": str(conf / "tmp")}
            (conf / "tmp").mkdir(exist_ok=True)
        return self._podman_env

    def podman(self, *argv, logf=None) -> subprocess.CompletedProcess:
        return run(["podman", *argv], logf, env=self.podman_env())

    def debian_base(self, logf) -> Path:
        """A rootfs tarball: debootstrap minbase + the base packages, cached by suite and package list."""
        args = self.args
        key = hashlib.sha256(f"{RECIPE} {args.debian_suite} {args.base_packages} {args.debian_mirror}"
                             .encode()).hexdigest()[:12]
        rootfs_tar = self.work / "base" / f"{args.debian_suite}-{key}.tar"
        if rootfs_tar.is_file():
            return rootfs_tar
        log(f"debootstrap {args.debian_suite} minbase + {args.base_packages} (a minute or more)")
        rootfs_tar.parent.mkdir(parents=True, exist_ok=True)
        rootfs = self.work / "base" / f".rootfs-{os.getpid()}"
        shutil.rmtree(rootfs, ignore_errors=True)
        try:
            run(["debootstrap", "--variant=minbase", f"--include={args.base_packages}", args.debian_suite,
                 rootfs, args.debian_mirror], logf)
            # No documentation, caches or logs; no device nodes (the runtime provides /dev).
            for sub in ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
                        "var/cache/apt", "var/lib/apt/lists", "var/log", "dev"):
                shutil.rmtree(rootfs / sub, ignore_errors=True)
                (rootfs / sub).mkdir(parents=True, exist_ok=True)
            tmp = partial(rootfs_tar)
            run(["tar", "--numeric-owner", "-C", rootfs, "-cf", tmp, "."], logf)
            os.replace(tmp, rootfs_tar)
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
        return rootfs_tar

    def busybox_rootfs(self, logf) -> Path:
        """bin/busybox from Debian's busybox-static and a symlink per applet, as a folder to COPY."""
        debs = self.work / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        found = sorted(debs.glob("busybox-static_*.deb"))
        if not found:
            log("apt-get download busybox-static")
            with tempfile.TemporaryDirectory(dir=debs) as tmp:
                proc = subprocess.run(["apt-get", "download", "busybox-static"], cwd=tmp, capture_output=True,
                                      text=True, check=False)
                if proc.returncode != 0:
                    raise MirrorError(f"apt-get download busybox-static failed (run `apt-get update` first?): "
                                      f"{proc.stderr.strip()[-500:]}")
                for deb in Path(tmp).glob("*.deb"):
                    os.replace(deb, debs / deb.name)
            found = sorted(debs.glob("busybox-static_*.deb"))
        deb = found[-1]
        rootfs = debs / (deb.stem + ".rootfs")
        if not (rootfs / ".complete").is_file():
            shutil.rmtree(rootfs, ignore_errors=True)
            extracted = debs / (deb.stem + f".x-{os.getpid()}")
            run(["dpkg-deb", "-x", deb, extracted], logf)
            busybox = next(p for p in (extracted / "bin/busybox", extracted / "usr/bin/busybox") if p.is_file())
            (rootfs / "bin").mkdir(parents=True)
            shutil.copy2(busybox, rootfs / "bin" / "busybox")
            shutil.rmtree(extracted)
            for applet in run([rootfs / "bin/busybox", "--list-full"]).stdout.split():
                link = rootfs / applet
                if applet != "bin/busybox" and not link.exists():
                    link.parent.mkdir(parents=True, exist_ok=True)
                    link.symlink_to("/bin/busybox")
            for d in ("tmp", "etc", "root", "var"):
                (rootfs / d).mkdir(exist_ok=True)
            (rootfs / "tmp").chmod(0o1777)
            (rootfs / ".complete").write_text(deb.name + "\n")
        return rootfs

    def pause_binary(self, logf) -> Path:
        """pause.c from the Kubernetes module, built like build/pause/Makefile (gcc -static)."""
        tag = next(i.tag for i in self.plan.images if i.copies and i.copies[0][0] == "@pause")
        dest = self.work / "pause" / f"pause-{tag}"
        if dest.is_file():
            return dest
        src = self.module_dir(*gobuild.group_module("kubernetes")) / "build" / "pause" / "linux" / "pause.c"
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = partial(dest)
        run(["gcc", "-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{tag}", "-o", tmp, src], logf)
        run(["strip", tmp], logf)
        os.replace(tmp, dest)
        return dest

    def make_image(self, image: Image) -> None:
        archive = self.root / "images" / image.archive
        ctx = self.work / "ctx" / image.archive.removesuffix(".tar")
        shutil.rmtree(ctx, ignore_errors=True)
        ctx.mkdir(parents=True)
        log_path = self.work / "logs" / (image.archive.removesuffix(".tar") + ".log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w") as logf:
            lines = ["FROM scratch", f"ENV PATH={PATH_ENV}"]
            if image.recipe == "debian-base":
                place(self.debian_base(logf), ctx / "base.tar", 0o644)
                lines.append("ADD base.tar /")  # a local tarball is unpacked
            if image.recipe == "busybox":
                shutil.copytree(self.busybox_rootfs(logf), ctx / "rootfs", symlinks=True,
                                ignore=shutil.ignore_patterns(".complete"))
                lines.append("COPY rootfs/ /")
            for n, (src, dest) in enumerate(image.copies):
                path = self.pause_binary(logf) if src == "@pause" else self.binary(src)
                place(path, ctx / f"file{n}")
                lines.append(f"COPY file{n} {dest}")
            if image.user:
                lines.append(f"USER {image.user}")
            if image.entrypoint:
                lines.append(f"ENTRYPOINT {json.dumps(image.entrypoint)}")
            if image.cmd:
                lines.append(f"CMD {json.dumps(image.cmd)}")
            lines.append("LABEL io.dralab.built-by=tests/harness/mirror_build.py")
            (ctx / "Containerfile").write_text("\n".join(lines) + "\n")
            # The same inputs give the same image ID (config digest), which the mirror role compares:
            # no timestamps (--timestamp 0), no intermediate images (--layers=false), and the OCI
            # format (the docker one records a random container ID and hostname).
            self.podman("build", "--timestamp", "0", "--layers=false", "--pull=never", "--format", "oci",
                        "-f", ctx / "Containerfile", "-t", image.ref, ctx, logf=logf)
            tmp = partial(archive)
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.unlink(missing_ok=True)
            self.podman("save", "--format", "docker-archive", "-o", tmp, image.ref, logf=logf)
            os.replace(tmp, archive)
            self.podman("rmi", image.ref, logf=logf)  # the archive is the product; keep the store small
        shutil.rmtree(ctx, ignore_errors=True)

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


# --- summary -------------------------------------------------------------------------

def human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def print_summary(root: Path) -> None:
    manifest = json.loads((root / "mirror.json").read_text())
    files = manifest["files"]
    print(f"Offline mirror at {root} ({manifest['arch']}, built {manifest['built']})")
    print("\nVersions:")
    for name, version in manifest["versions"].items():
        print(f"  {name:26} {version}")
    print(f"\nFiles tree ({root / 'files'}, mirror_files_src):")
    for rel, size in sorted(files.items()):
        if rel.startswith("files/"):
            print(f"  {human(size):>10}  {rel[len('files/'):]}")
    print(f"\nImages ({root / 'images'}, mirror_images_src; list in images/index.json):")
    for image in manifest["images"]:
        size = files.get(f"images/{image['archive']}", 0)
        print(f"  {human(size):>10}  {image['name']}:{image['tag']}  ({image['archive']})")
    for chart in manifest["charts"]:
        print(f"  {human(files.get('images/' + chart, 0)):>10}  chart {chart} (mirror_charts)")
    total = sum(size for rel, size in files.items() if not rel.startswith("images/") or rel.endswith(".tar"))
    print(f"\nTotal: {human(total)} in {len(files)} files")
    for note in manifest["notes"]:
        print(f"NOTE: {note}")


# --- CLI -------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     epilog="Output: $DRALAB_CACHE/mirror (default ~/.cache/dralab/mirror).")
    parser.add_argument("--go", help="the go binary to use (see gobuild.py)")
    parser.add_argument("--busybox-tag", default=BUSYBOX_TAG,
                        help=f"tag of docker.io/library/busybox (default {BUSYBOX_TAG}, what the exercises run)")
    parser.add_argument("--debian-suite", default=platform.freedesktop_os_release().get("VERSION_CODENAME")
                        or "bookworm", help="Debian suite of the kube-proxy/flannel base (default: this host's)")
    parser.add_argument("--debian-mirror", default="http://deb.debian.org/debian",
                        help="Debian mirror for debootstrap")
    parser.add_argument("--base-packages", default=BASE_PACKAGES,
                        help=f"packages of the kube-proxy/flannel base (default {BASE_PACKAGES})")
    parser.add_argument("--force", action="store_true", help="remake every mirror item (binaries stay cached)")
    parser.add_argument("--summary", action="store_true", help="print what the mirror holds; build nothing")
    gobuild.add_role_var_arguments(parser)
    args = parser.parse_args(argv)
    overrides = gobuild.apply_role_var_arguments(parser, args)

    builder = Builder(args)
    if args.summary:
        if not builder.manifest_path().is_file():
            log(f"no complete mirror at {builder.root}")
            return 1
        print_summary(builder.root)
        return 0

    started = time.monotonic()
    try:
        with gobuild.file_lock(builder.cache / "mirror-work" / "build.lock"):
            builder.plan = make_plan(args, overrides, builder)
            if not args.force and builder.is_complete():
                log(f"up to date ({time.monotonic() - started:.1f}s)")
            else:
                builder.manifest_path().unlink(missing_ok=True)  # incomplete until the end
                pending = [i for i in builder.plan.items if args.force or not builder.is_built(i)]
                log(f"{len(pending)} of {len(builder.plan.items)} items to make")
                for item in pending:
                    builder.make(item)
                for rel in builder.prune():
                    log(f"removed {rel} (not in the mirror any more)")
                builder.write_manifest()
                log(f"built in {time.monotonic() - started:.0f}s")
    except (MirrorError, gobuild.BuildError) as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    print_summary(builder.root)
    print(f"\nTime: {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
