"""The node images: debootstrap of Debian 12 (or 13) with everything the roles would install, cached as a
rootfs archive under ${DRALAB_CACHE}/images and imported as localhost/<name>:<key>."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from dralab_build.cache import cache_root, file_lock
from podman_lab.podman import podman, podman_json
from podman_lab.topology import LABEL_KEY, LabError, log

# Debian suite -> (VERSION_ID of its /etc/os-release, image name suffix).
SUITES = {"bookworm": ("12", ""), "trixie": ("13", "-trixie")}
DEFAULT_SUITE = "bookworm"
DEBIAN_MIRROR = os.environ.get("DRALAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# Bumped whenever the recipe of an image changes (part of its key).
RECIPES = {"node": "3", "mirror": "4"}

BASE_PACKAGES = [
    "systemd", "systemd-sysv", "dbus", "openssh-server", "sudo",
    "python3", "python3-apt", "python3-yaml",
    "iproute2", "iputils-ping", "ca-certificates", "curl", "procps", "less",
]
# What roles/prereqs/vars/Debian.yml installs, and what kubeadm's preflight wants.
NODE_PACKAGES = BASE_PACKAGES + [
    "conntrack", "ethtool", "gzip", "iptables", "kmod", "mount", "socat", "tar", "util-linux",
    # What a workshop VM has and the seats' protections rely on: pam_systemd puts
    # each login into the seat's user-UID.slice (workshop_users' limits); cron
    # and at are what a seat may leave jobs in (a handover removes them).
    "libpam-systemd", "cron", "at",
    # The seats' file system of the login hosts (workshop_users storage.yml).
    "btrfs-progs",
]
# roles/mirror/vars/Debian.yml (the registry unit is disabled in the image:
# the role writes its configuration before starting it).
# netavark: the container-network-stack that skopeo's containers-common depends on
# (debootstrap does not resolve virtual packages).
MIRROR_PACKAGES = BASE_PACKAGES + ["docker-registry", "skopeo", "netavark", "rsync"]

IMAGES = {
    "node": ("dralab-node", NODE_PACKAGES),
    "mirror": ("dralab-mirror", MIRROR_PACKAGES),
}


UNIT_RSHARED = """\
[Unit]
Description=Make / a shared mount (kubelet mount propagation in a container node)
DefaultDependencies=no
After=local-fs.target
Before=containerd.service kubelet.service ssh.service

[Service]
Type=oneshot
ExecStart=/bin/mount --make-rshared /
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
"""

UNIT_HOSTKEYS = """\
[Unit]
Description=Generate this node's SSH host keys (not part of the shared image)
Before=ssh.service

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
"""


def node_suite() -> str:
    """The Debian suite of every node ($DRALAB_NODE_SUITE, default bookworm)."""
    suite = os.environ.get("DRALAB_NODE_SUITE", "").strip() or DEFAULT_SUITE
    if suite not in SUITES:
        raise LabError(f"DRALAB_NODE_SUITE={suite!r} is not a suite the lab builds; choose from {sorted(SUITES)}")
    return suite


def image_name(kind: str) -> str:
    return IMAGES[kind][0] + SUITES[node_suite()][1]


def image_key(kind: str) -> str:
    packages = IMAGES[kind][1]
    blob = json.dumps({"suite": node_suite(), "variant": "minbase", "packages": sorted(packages),
                       "recipe": RECIPES[kind]}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def image_ref(kind: str) -> str:
    return f"localhost/{image_name(kind)}:{image_key(kind)}"


def image_archive(kind: str) -> Path:
    return cache_root() / "images" / f"{image_name(kind)}-{image_key(kind)}.tar.zst"


def image_exists(ref: str) -> bool:
    return podman("image", "exists", ref, check=False).returncode == 0


def enable_unit(rootfs: Path, unit: str, target: str = "multi-user.target") -> None:
    wants = rootfs / "etc/systemd/system" / f"{target}.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / unit
    if not link.is_symlink():
        link.symlink_to(f"/etc/systemd/system/{unit}")


def customize(rootfs: Path, kind: str) -> None:
    """What a container node needs beyond the packages."""
    units = rootfs / "etc/systemd/system"
    (units / "dralab-rshared.service").write_text(UNIT_RSHARED)
    (units / "dralab-ssh-hostkeys.service").write_text(UNIT_HOSTKEYS)
    enable_unit(rootfs, "dralab-rshared.service")
    enable_unit(rootfs, "dralab-ssh-hostkeys.service")
    # One set of host keys per node, made at first boot.
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    # systemd makes a machine ID per container at boot (kubelet reads it).
    (rootfs / "etc/machine-id").write_text("")
    dbus_id = rootfs / "var/lib/dbus/machine-id"
    if dbus_id.is_file() and not dbus_id.is_symlink():
        dbus_id.unlink()
    # No console in a container: no getty.
    for unit in ("getty@tty1.service", "console-getty.service"):
        mask = units / unit
        if not mask.exists():
            mask.symlink_to("/dev/null")
    if kind == "mirror":
        # The role writes the registry's configuration, then enables it. (The
        # links point into the image: test them as links, not as files.)
        for wants in units.glob("*.wants"):
            link = wants / "docker-registry.service"
            if link.is_symlink():
                link.unlink()
        for rc in rootfs.glob("etc/rc[0-6S].d/[SK][0-9][0-9]docker-registry"):
            rc.unlink()
    # Root's authorized key is bind-mounted by `up`.
    (rootfs / "root/.ssh").mkdir(mode=0o700, exist_ok=True)


def build_image(kind: str, force: bool = False) -> str:
    ref = image_ref(kind)
    archive = image_archive(kind)
    with file_lock(cache_root() / "images" / f".{image_name(kind)}.lock"):
        if force:
            archive.unlink(missing_ok=True)
            if image_exists(ref):
                podman("rmi", "-f", ref)
        if image_exists(ref):
            return ref
        if not archive.exists():
            if os.geteuid() != 0:
                raise LabError("debootstrap needs root")
            if not shutil.which("debootstrap"):
                raise LabError("debootstrap is not installed (apt-get install debootstrap)")
            work = cache_root() / "images" / f".build-{image_name(kind)}-{image_key(kind)}"
            shutil.rmtree(work, ignore_errors=True)
            rootfs = work / "rootfs"
            rootfs.mkdir(parents=True)
            debs = cache_root() / "images" / "debs"
            debs.mkdir(parents=True, exist_ok=True)
            packages = IMAGES[kind][1]
            started = time.monotonic()
            suite = node_suite()
            log(f"{ref}: debootstrap {suite} ({len(packages)} packages)")
            cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}",
                   f"--cache-dir={debs}", suite, str(rootfs), DEBIAN_MIRROR]
            with open(work / "debootstrap.log", "w") as logf:
                proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, check=False)
            if proc.returncode != 0:
                tail = (work / "debootstrap.log").read_text().splitlines()[-15:]
                raise LabError(f"debootstrap failed ({proc.returncode}):\n" + "\n".join(tail))
            customize(rootfs, kind)
            tmp = archive.with_suffix(".tmp")
            # zstd through tar's --use-compress-program keeps owners, modes and devices.
            subprocess.run(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs),
                            "--use-compress-program=zstd -T0 -3 -q", "-cf", str(tmp), "."], check=True)
            tmp.rename(archive)
            shutil.rmtree(work, ignore_errors=True)
            log(f"{ref}: rootfs built in {time.monotonic() - started:.0f}s -> {archive}")
        log(f"{ref}: importing {archive.name}")
        with open(archive, "rb") as fh:
            podman("import",
                   "--change", 'CMD ["/sbin/init"]',
                   "--change", "STOPSIGNAL=SIGRTMIN+3",
                   "--change", f"LABEL {LABEL_KEY}-image={kind}",
                   "-", ref, input_file=fh)
        prune_images(kind)
    return ref


def prune_images(kind: str) -> None:
    """Drop the other (older) builds of this image: archives, and tags no container uses."""
    name = image_name(kind)
    # dralab-node-<key>, not dralab-node-trixie-<key>: another suite's image is no older build.
    build = re.compile(re.escape(name) + r"-[0-9a-f]{12}\.tar\.zst")
    for old in (cache_root() / "images").glob(f"{name}-*.tar.zst"):
        if build.fullmatch(old.name) and old != image_archive(kind):
            old.unlink()
    for image in podman_json("images", "--filter", f"reference=localhost/{name}", "--format", "json"):
        for tag in image.get("Names") or []:
            if tag != image_ref(kind):
                # Refused (and left alone) while a container still runs it.
                podman("rmi", tag, check=False)
