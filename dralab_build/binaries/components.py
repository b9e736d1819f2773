"""What is built from the Go module proxy: each component, its wrapper module under gomod/, how it is stamped.

Where a role's defaults name a group's version, ROLE_VERSIONS says which variable; otherwise the wrapper go.mod
pins it (versions.py reads both).
"""

from __future__ import annotations

from dataclasses import dataclass

# Common build settings of the upstream release builds.
GO_BUILD_FLAGS = ["-trimpath", "-buildvcs=false"]
K8S_TAGS = "selinux,notest,grpcnotrace"
# containerd's static release build (`make STATIC=1`).
CONTAINERD_TAGS = "urfave_cli_no_docs osusergo netgo static_build"


@dataclass(frozen=True)
class Component:
    name: str  # binary name
    group: str  # wrapper module folder under gomod/
    package: str  # Go package of the main
    stamp: str  # how to stamp the version: see ldflags(); "none" for no stamp
    integration: bool = True  # built by default (the integration tier needs it)
    tags: str = ""  # Go build tags (Kubernetes components get K8S_TAGS)
    cgo: bool = False  # needs cgo (runc: libseccomp; flanneld), linked statically
    bundle: bool = False  # `package` is a prefix: every `tool` of the go.mod under it, into one folder


COMPONENTS = [
    Component("etcd", "etcd", "go.etcd.io/etcd/server/v3", "etcd"),
    Component("kube-apiserver", "kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver", "kubernetes"),
    Component("kube-controller-manager", "kubernetes",
              "k8s.io/kubernetes/cmd/kube-controller-manager", "kubernetes"),
    Component("kube-scheduler", "kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler", "kubernetes"),
    Component("kubectl", "kubernetes", "k8s.io/kubernetes/cmd/kubectl", "kubernetes"),
    Component("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok", "kwok"),
    Component("dra-example-kubeletplugin", "dra-example-driver",
              "sigs.k8s.io/dra-example-driver/cmd/dra-example-kubeletplugin", "none"),
    # Not needed by the integration tier; available for the lab tier.
    Component("kubelet", "kubernetes", "k8s.io/kubernetes/cmd/kubelet", "kubernetes", False),
    Component("kubeadm", "kubernetes", "k8s.io/kubernetes/cmd/kubeadm", "kubernetes", False),
    Component("kube-proxy", "kubernetes", "k8s.io/kubernetes/cmd/kube-proxy", "kubernetes", False),
    # The offline mirror of the lab tier (dralab_build/mirror).
    Component("dra-example-controller", "dra-example-driver",
              "sigs.k8s.io/dra-example-driver/cmd/dra-example-controller", "none", False),
    Component("dra-example-webhook", "dra-example-driver",
              "sigs.k8s.io/dra-example-driver/cmd/dra-example-webhook", "none", False),
    Component("containerd", "containerd", "github.com/containerd/containerd/v2/cmd/containerd", "containerd",
              False, tags=CONTAINERD_TAGS),
    Component("containerd-shim-runc-v2", "containerd",
              "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", "containerd", False,
              tags=CONTAINERD_TAGS + " no_grpc"),
    Component("ctr", "containerd", "github.com/containerd/containerd/v2/cmd/ctr", "containerd", False,
              tags=CONTAINERD_TAGS),
    Component("runc", "runc", "github.com/opencontainers/runc", "runc", False,
              tags="seccomp urfave_cli_no_docs netgo osusergo", cgo=True),
    Component("cni-plugins", "cni-plugins", "github.com/containernetworking/plugins/plugins/", "cni-plugins",
              False, bundle=True),
    Component("crictl", "cri-tools", "sigs.k8s.io/cri-tools/cmd/crictl", "crictl", False),
    Component("helm", "helm", "helm.sh/helm/v3/cmd/helm", "helm", False),
    Component("coredns", "coredns", "github.com/coredns/coredns", "coredns", False),
    # cgo on amd64 as upstream's Makefile (the udp backend), linked statically.
    Component("flanneld", "flannel", "github.com/flannel-io/flannel", "flannel", False, tags="netgo osusergo",
              cgo=True),
    Component("flannel-cni", "flannel-cni", "github.com/containernetworking/plugins/plugins/meta/flannel",
              "cni-plugins", False),
]
BY_NAME = {c.name: c for c in COMPONENTS}

# Groups whose version a role default names: the role is the only place the
# version is written; versions.py reads it there and adds the `require` line to the
# wrapper go.mod (which lists only the `tool`s). Values are
# (module, role, variable); the role variable holds the version without the v.
ROLE_VERSIONS = {
    "containerd": ("github.com/containerd/containerd/v2", "containerd", "containerd_version"),
    "runc": ("github.com/opencontainers/runc", "containerd", "containerd_runc_version"),
    "cni-plugins": ("github.com/containernetworking/plugins", "containerd", "containerd_cni_plugins_version"),
    "cri-tools": ("sigs.k8s.io/cri-tools", "containerd", "containerd_crictl_version"),
    "helm": ("helm.sh/helm/v3", "dra_driver", "dra_driver_helm_version"),
    "flannel": ("github.com/flannel-io/flannel", "cni", "cni_flannel_version"),
}


class BuildError(Exception):
    """A component could not be built (the tool's message, and where its log is)."""
