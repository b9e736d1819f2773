"""The mirror's images: built with podman (a private configuration and store under mirror-work/podman), FROM
scratch plus static binaries, reproducibly (the same inputs give the same image ID), saved as docker-archives.
kube-proxy and flannel get a Debian rootfs (debootstrap minbase) because they run iptables and conntrack;
busybox is Debian's busybox-static; pause is pause.c of the Kubernetes module, built with gcc -static.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from dralab_build.binaries.versions import group_module
from dralab_build.mirror.builder import RECIPE
from dralab_build.mirror.output import MirrorError, log, partial, place, run, write_atomic

if TYPE_CHECKING:
    from dralab_build.mirror.builder import Builder
    from dralab_build.mirror.plan import Image

PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_PACKAGES = "iptables,nftables,conntrack"

PODMAN_CONF = """\
# Written by dralab_build/mirror/images.py: what podman needs on the build hosts
# (no CAP_SYS_RESOURCE, hybrid cgroups), without editing /etc/containers.
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def podman_env(b: Builder) -> dict:
    if b.podman_environ is None:
        conf = b.work / "podman"
        conf.mkdir(parents=True, exist_ok=True)
        write_atomic(conf / "containers.conf", PODMAN_CONF)
        write_atomic(conf / "storage.conf", "[storage]\ndriver = \"overlay\"\n"
                     f"graphroot = \"{conf / 'storage'}\"\nrunroot = \"{conf / 'run'}\"\n")
        b.podman_environ = {**os.environ, "CONTAINERS_CONF": str(conf / "containers.conf"),
                            "CONTAINERS_STORAGE_CONF": str(conf / "storage.conf"), "TMPDIR": str(conf / "tmp")}
        (conf / "tmp").mkdir(exist_ok=True)
    return b.podman_environ


def podman(b: Builder, *argv, logf=None) -> subprocess.CompletedProcess:
    return run(["podman", *argv], logf, env=podman_env(b))


def debian_base(b: Builder, logf) -> Path:
    """A rootfs tarball: debootstrap minbase + the base packages, cached by suite and package list."""
    args = b.args
    key = hashlib.sha256(f"{RECIPE} {args.debian_suite} {args.base_packages} {args.debian_mirror}"
                         .encode()).hexdigest()[:12]
    rootfs_tar = b.work / "base" / f"{args.debian_suite}-{key}.tar"
    if rootfs_tar.is_file():
        return rootfs_tar
    log(f"debootstrap {args.debian_suite} minbase + {args.base_packages} (a minute or more)")
    rootfs_tar.parent.mkdir(parents=True, exist_ok=True)
    rootfs = b.work / "base" / f".rootfs-{os.getpid()}"
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


def busybox_rootfs(b: Builder, logf) -> Path:
    """bin/busybox from Debian's busybox-static and a symlink per applet, as a folder to COPY."""
    debs = b.work / "debs"
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


def pause_binary(b: Builder, logf) -> Path:
    """pause.c from the Kubernetes module, built like build/pause/Makefile (gcc -static)."""
    tag = next(i.tag for i in b.plan.images if i.copies and i.copies[0][0] == "@pause")
    dest = b.work / "pause" / f"pause-{tag}"
    if dest.is_file():
        return dest
    src = b.module_dir(*group_module("kubernetes")) / "build" / "pause" / "linux" / "pause.c"
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = partial(dest)
    run(["gcc", "-Os", "-Wall", "-Werror", "-static", f"-DVERSION=v{tag}", "-o", tmp, src], logf)
    run(["strip", tmp], logf)
    os.replace(tmp, dest)
    return dest


def make_image(b: Builder, image: Image) -> None:
    archive = b.root / "images" / image.archive
    ctx = b.work / "ctx" / image.archive.removesuffix(".tar")
    shutil.rmtree(ctx, ignore_errors=True)
    ctx.mkdir(parents=True)
    log_path = b.work / "logs" / (image.archive.removesuffix(".tar") + ".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as logf:
        lines = ["FROM scratch", f"ENV PATH={PATH_ENV}"]
        if image.recipe == "debian-base":
            place(debian_base(b, logf), ctx / "base.tar", 0o644)
            lines.append("ADD base.tar /")  # a local tarball is unpacked
        if image.recipe == "busybox":
            shutil.copytree(busybox_rootfs(b, logf), ctx / "rootfs", symlinks=True,
                            ignore=shutil.ignore_patterns(".complete"))
            lines.append("COPY rootfs/ /")
        for n, (src, dest) in enumerate(image.copies):
            path = pause_binary(b, logf) if src == "@pause" else b.binary(src)
            place(path, ctx / f"file{n}")
            lines.append(f"COPY file{n} {dest}")
        if image.user:
            lines.append(f"USER {image.user}")
        if image.entrypoint:
            lines.append(f"ENTRYPOINT {json.dumps(image.entrypoint)}")
        if image.cmd:
            lines.append(f"CMD {json.dumps(image.cmd)}")
        lines.append("LABEL io.dralab.built-by=dralab_build/mirror")
        (ctx / "Containerfile").write_text("\n".join(lines) + "\n")
        # The same inputs give the same image ID (config digest), which the mirror role compares:
        # no timestamps (--timestamp 0), no intermediate images (--layers=false), and the OCI
        # format (the docker one records a random container ID and hostname).
        podman(b, "build", "--timestamp", "0", "--layers=false", "--pull=never", "--format", "oci",
               "-f", ctx / "Containerfile", "-t", image.ref, ctx, logf=logf)
        tmp = partial(archive)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.unlink(missing_ok=True)
        podman(b, "save", "--format", "docker-archive", "-o", tmp, image.ref, logf=logf)
        os.replace(tmp, archive)
        podman(b, "rmi", image.ref, logf=logf)  # the archive is the product; keep the store small
    shutil.rmtree(ctx, ignore_errors=True)
