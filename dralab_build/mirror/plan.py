"""What the mirror holds, read from the roles' defaults (and the inventory's overrides): one Item per file or
image of the mirror, with its outputs, the inputs that are its key, and the function that makes it."""

from __future__ import annotations

import argparse
import platform
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from dralab_build import role_vars, wheels
from dralab_build.binaries.components import BY_NAME
from dralab_build.binaries.versions import build_version, component_version, group_module
from dralab_build.mirror.files_tree import (make_binary_with_hash, make_chart, make_cni, make_containerd, make_crictl,
                                            make_flannel_manifest, make_helm, make_index, make_runc, make_wheels)
from dralab_build.mirror.images import make_image
from dralab_build.mirror.output import MirrorError

if TYPE_CHECKING:
    from dralab_build.mirror.builder import Builder

GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# The workshop's exercises run busybox:1.37 (shared/seeds); the binary is Debian's busybox-static.
BUSYBOX_TAG = "1.37"


@dataclass
class Item:
    """One thing in the mirror: its outputs (relative to the mirror root), what it is made from, how."""
    id: str
    outputs: list[str]
    key: dict
    make: Callable[[Builder, Item], None]
    components: list[str] = field(default_factory=list)  # dralab_build.binaries components it needs
    kind: str = "files"


@dataclass
class Image:
    name: str
    tag: str
    recipe: str  # scratch, debian-base, busybox
    copies: list[tuple[str, str]]  # (dralab_build.binaries component or special source, path in the image)
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
    return group_module(group)[1]


def check_same(what: str, wanted: str, pinned: str, where: str) -> None:
    if wanted.lstrip("v") != pinned.lstrip("v"):
        raise MirrorError(f"{what}: the roles want {wanted} but {where} pins {pinned}; make them agree "
                          f"(bump {where}, or set the role variable to what is pinned)")


def make_plan(args: argparse.Namespace, overrides: dict, builder: Builder) -> Plan:
    plan = Plan(args, overrides)
    arch, v = plan.arch, plan.var

    k8s = v("kubernetes", "kubernetes_version")
    check_same("Kubernetes", k8s, pinned_version("kubernetes"), "dralab_build/binaries/gomod/kubernetes/go.mod")
    check_same("Kubernetes (control_plane)", v("control_plane", "control_plane_kubernetes_version"), k8s,
               "roles/kubernetes (kubernetes_version)")
    containerd, runc = v("containerd", "containerd_version"), v("containerd", "containerd_runc_version")
    cni, crictl = v("containerd", "containerd_cni_plugins_version"), v("containerd", "containerd_crictl_version")
    helm, flannel = v("dra_driver", "dra_driver_helm_version"), v("cni", "cni_flannel_version")
    chart_version, driver_tag = v("dra_driver", "dra_driver_chart_version"), v("dra_driver", "dra_driver_image_tag")
    driver = pinned_version("dra-example-driver")
    check_same("dra-example-driver image", driver_tag, driver, "dralab_build/binaries/gomod/dra-example-driver/go.mod")
    plan.versions = {"kubernetes": k8s, "containerd": containerd, "runc": runc, "cni-plugins": cni,
                     "crictl": crictl, "helm": helm, "flannel": flannel, "dra-example-driver": driver,
                     "dra-example-driver chart": chart_version}
    if build_version("dra-example-driver") != driver:
        plan.versions["dra-example-driver"] = (f"{driver}, the lab's build {build_version('dra-example-driver')}"
                                               " (dralab_build/binaries/source_edits.py: resource.kubernetes.io/pcieRoot)")
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
                           {"source": wheels.source_digest(), "pip": pip_version, "build": wheels.build_requires(),
                            "python": list(wheels.NODE_PYTHONS),
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
            check_same("etcd image", tag.split("-")[0], pinned_version("etcd"), "dralab_build/binaries/gomod/etcd/go.mod")
            name, tag = (etcd_repo.rstrip("/") + "/etcd" if etcd_repo else name), (etcd_tag or tag)
            plan.images.append(Image(name, tag, "scratch", [("etcd", k8s_bin + "etcd")]))
        elif last == "coredns":
            check_same("coredns image", tag, pinned_version("coredns"), "dralab_build/binaries/gomod/coredns/go.mod")
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
               "versions": {c: component_version(BY_NAME[c]) for c in components},
               "entrypoint": image.entrypoint, "cmd": image.cmd, "user": image.user}
        if image.recipe == "debian-base":
            key["base"] = [args.debian_suite, args.base_packages]
        plan.items.append(Item(f"image {image.ref}", [f"images/{image.archive}"], key,
                               lambda b, item, image=image: make_image(b, image), components, kind="image"))
    plan.items.append(Item("images/index.json", ["images/index.json"],
                           {"images": [[i.archive, i.name, i.tag] for i in plan.images]}, make_index, kind="index"))
    plan.versions["kubeadm images"] = ", ".join(kubeadm_images)
    plan.versions["busybox"] = f"{args.busybox_tag} (Debian busybox-static)"
    return plan
