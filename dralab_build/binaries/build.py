"""How a component is built: its wrapper module in the cache (go.mod, go.sum, a patched copy of the source), its
version stamp, `go build`, and the files that go next to the binary.

A build writes to a temporary name and renames it into place when it succeeds, so an interrupted build never
leaves a binary that looks complete; parallel builds take a lock per wrapper module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dralab_build.binaries.components import GO_BUILD_FLAGS, K8S_TAGS, ROLE_VERSIONS, BuildError, Component
from dralab_build.binaries.source_edits import DROP_IMPORTS, SOURCE_EDITS, apply_source_edits, drop_imports, edits_hash
from dralab_build.binaries.toolchain import go_env
from dralab_build.binaries.versions import (GOMOD_DIR, KWOK_STAGES, binary_path, build_version, component_version,
                                            extra_files, group_module, is_complete)
from dralab_build.cache import cache_root, file_lock


def log(msg: str) -> None:
    print(f"[build] {msg}", file=sys.stderr, flush=True)


# --- wrapper modules -------------------------------------------------------

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
        # The template is the workdir's .tidied-from stamp: this line keeps the words it had in tests/harness/gobuild.py
        # (the old home of SOURCE_EDITS), so the workdirs already in the cache are not tidied again.
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


def build(comp: Component, go: str, force: bool = False) -> Path:
    target = binary_path(comp)
    folder = target if comp.bundle else target.parent
    folder.mkdir(parents=True, exist_ok=True)
    with group_lock(comp.group):  # another process may be building the same module
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


def group_lock(group: str):
    """An exclusive lock per wrapper module and version, held while building from it."""
    return file_lock(cache_root() / "gomod" / f"{group}-{build_version(group)}.lock")
