"""Podman "VMs" for the lab tier: Debian 12 (or 13) systemd nodes on a fixed network.

The lab tier (make lab, molecule/default) runs playbooks/site.yml over SSH
against containers that behave like the workshop's VMs. This script builds
their image and starts, lists and removes them:

    image    build (or reuse) the node images
    up       image + SSH key + network + volumes + nodes; waits for sshd
    status   what exists, and whether each node answers on SSH
    down     remove exactly what `up` created (found by its label)
    env      print the shell exports for using podman/ssh on the lab by hand
    seats    print how to log in as a seat and where the GPU board is (from the lab's artifacts)

What `up` creates, each labelled dralab.workshop/lab=local:
- network dralab-lab, 10.89.42.0/24, gateway 10.89.42.1 (the build host);
- nodes cp1 10.89.42.11, worker1 .12, worker2 .13 (containers dralab-cp1,
  ...): privileged, --cgroupns=private, no pids limit, systemd as PID 1,
  tmpfs /run and /tmp, a named volume for /var/lib/containerd (nested
  containers cannot sit on the node's overlay root), / made rshared at boot
  (kubelet mount propagation), SSH host keys made at first boot;
- node login1 10.89.42.14, the same image without the containerd volume: a
  login host that is no cluster node (seats log in there and on cp1);
- node mirror1 10.89.42.2 (container dralab-mirror1), the lab's offline mirror
  host (roles/mirror): this build host runs no systemd, so the mirror gets a
  VM of its own, as in an air-gapped workshop. The mirror contents built by
  tests/harness/mirror_build.py ($DRALAB_CACHE/mirror) are mounted into it
  like a carried disk: files/ at /srv/dralab-mirror/files (overlay: the role
  may add charts/ without touching the cache), images/ read-only at
  /srv/dralab-mirror/images, and a helm client for the chart push; the
  registry storage is a named volume.
Root logs in with the key pair $DRALAB_CACHE/lab/ssh/id_ed25519 (made once).
`up` writes the nodes' host keys (read with podman exec) to
$DRALAB_CACHE/lab/ssh/known_hosts; inventories/local checks them strictly.

Images: debootstrap --variant=minbase of Debian 12 with systemd, sshd, Python
and everything the roles would install (prereqs' packages, python3-apt and
python3-yaml for the apt and helm modules), so offline nodes find them
present. The rootfs is cached as $DRALAB_CACHE/images/<name>-<key>.tar.zst and
imported as localhost/<name>:<key>, the key being a hash of the suite, the
package list and this recipe; a warm `up` builds nothing.

DRALAB_NODE_SUITE=trixie makes every node Debian 13 (images
dralab-node-trixie and dralab-mirror-trixie; molecule/debian13). Debian 13's
systemd 257 boots in these containers on the hosts' cgroup v1, like Debian
12's.

Podman settings come from a private containers.conf
($DRALAB_CACHE/lab/containers.conf, through CONTAINERS_CONF) rather than
/etc: this machine's process may not raise RLIMIT_NOFILE (no
CAP_SYS_RESOURCE), so the default ulimits must stay under the current hard
limits; runc; cgroupfs; events to a file (no systemd on the host). Run podman
on the lab with the same file: eval "$(python tests/harness/nodes.py env)".

Examples:
    python tests/harness/nodes.py up
    python tests/harness/nodes.py status
    python tests/harness/nodes.py down
    nice -n 10 python tests/harness/nodes.py image --force
"""

from __future__ import annotations

import argparse
import configparser
import csv
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent
if str(HARNESS_DIR) not in sys.path:
    sys.path.insert(0, str(HARNESS_DIR))
import gobuild  # noqa: E402  (tests/harness/gobuild.py: file_lock)

LABEL_KEY = "dralab.workshop/lab"
LABEL_VALUE = "local"
LABEL = f"{LABEL_KEY}={LABEL_VALUE}"

NETWORK = "dralab-lab"
SUBNET = "10.89.42.0/24"
GATEWAY = "10.89.42.1"
PREFIX = "dralab-"  # container and volume names: dralab-cp1, dralab-cp1-containerd

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


@dataclass(frozen=True)
class Node:
    name: str  # host name, inventory name
    ip: str
    kind: str  # key of IMAGES
    cluster: bool = True  # a Kubernetes node (gets a containerd volume); False: a login host only

    @property
    def container(self) -> str:
        return PREFIX + self.name


NODES = [
    Node("mirror1", "10.89.42.2", "mirror"),
    Node("cp1", "10.89.42.11", "node"),
    Node("worker1", "10.89.42.12", "node"),
    Node("worker2", "10.89.42.13", "node"),
    # A login host that is not a cluster node (the layout docs/security.md advises).
    Node("login1", "10.89.42.14", "node", cluster=False),
]
BY_NAME = {n.name: n for n in NODES}

# Where the mirror contents sit on the mirror node (roles/mirror defaults).
MIRROR_FILES_ROOT = "/srv/dralab-mirror/files"
MIRROR_IMAGES_DIR = "/srv/dralab-mirror/images"
MIRROR_REGISTRY_ROOT = "/var/lib/docker-registry"
MIRROR_HELM = "/usr/local/bin/helm"


def cache_root() -> Path:
    return Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab")


def lab_dir() -> Path:
    return cache_root() / "lab"


def ssh_key() -> Path:
    return lab_dir() / "ssh" / "id_ed25519"


def containers_conf() -> Path:
    return lab_dir() / "containers.conf"


def log(msg: str) -> None:
    print(f"[nodes] {msg}", file=sys.stderr, flush=True)


class LabError(Exception):
    pass


# --- podman ------------------------------------------------------------------

def podman_env() -> dict:
    env = dict(os.environ)
    env["CONTAINERS_CONF"] = str(containers_conf())
    return env


def podman(*args: str, check: bool = True, capture: bool = True, input_file=None,
           timeout: float | None = None) -> subprocess.CompletedProcess:
    cmd = ["podman", *args]
    try:
        proc = subprocess.run(cmd, env=podman_env(), text=True, stdin=input_file, timeout=timeout, check=False,
                              stdout=subprocess.PIPE if capture else None,
                              stderr=subprocess.PIPE if capture else None)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{shlex.join(cmd)} did not finish in {timeout:.0f}s") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{shlex.join(cmd)} failed ({proc.returncode}): {(proc.stderr or '').strip()}")
    return proc


def podman_json(*args: str) -> list:
    out = podman(*args).stdout.strip()
    return json.loads(out) if out else []


def write_containers_conf() -> Path:
    """containers.conf whose default ulimits this process may actually set."""
    def capped(limit: int, cap: int) -> int:
        return cap if limit == resource.RLIM_INFINITY else min(limit, cap)

    nofile = capped(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
    # podman lowers its own (and conmon's) RLIMIT_NPROC to 32768 when it may
    # not raise it; a container cannot get more than conmon has.
    nproc = capped(resource.getrlimit(resource.RLIMIT_NPROC)[1], 32768)
    text = (
        "# Written by tests/harness/nodes.py for the podman lab (CONTAINERS_CONF).\n"
        "[containers]\n"
        "# At most the hard limits of the process that starts podman: without\n"
        "# CAP_SYS_RESOURCE, podman's default (1048576) fails with setrlimit EPERM.\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "\n[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )
    path = containers_conf()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def ensure_podman() -> None:
    if not shutil.which("podman"):
        raise LabError("podman is not installed (apt-get install podman runc debootstrap)")
    write_containers_conf()


# --- images ------------------------------------------------------------------

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
    with gobuild.file_lock(cache_root() / "images" / f".{image_name(kind)}.lock"):
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


# --- SSH ---------------------------------------------------------------------

def ensure_ssh_key() -> Path:
    key = ssh_key()
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(key.parent, 0o700)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dralab-lab-root",
                        "-f", str(key)], check=True)
    return key


def known_hosts() -> Path:
    """The nodes' SSH host keys, for Ansible and the tests (written by `up`)."""
    return lab_dir() / "ssh" / "known_hosts"


def write_known_hosts(nodes: list[Node]) -> Path:
    """Record each running node's host keys, read from the node itself (podman exec, not the network).

    Every `up` of a new container makes new keys (dralab-ssh-hostkeys.service),
    so the file is rewritten from the nodes that run now; Ansible and the tests
    then check host keys strictly against it.
    """
    lines = []
    for node in nodes:
        if container_state(node) != "running":
            continue
        out = podman("exec", node.container, "sh", "-c", "cat /etc/ssh/ssh_host_*_key.pub", timeout=30).stdout
        for key in out.splitlines():
            fields = key.split()
            if len(fields) >= 2:
                lines.append(f"{node.ip},{node.name} {fields[0]} {fields[1]}")
    path = known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in lines))
    tmp.chmod(0o644)
    tmp.rename(path)
    return path


def ssh_banner(ip: str, timeout: float = 2.0) -> str:
    try:
        with socket.create_connection((ip, 22), timeout=timeout) as sock:
            sock.settimeout(timeout)
            return sock.recv(64).decode(errors="replace").strip()
    except OSError:
        return ""


# --- lab objects -------------------------------------------------------------

def labelled(kind: str) -> list[dict]:
    """Containers, volumes or networks carrying the lab label."""
    if kind == "container":
        return podman_json("ps", "-a", "--filter", f"label={LABEL}", "--format", "json")
    if kind == "volume":
        return podman_json("volume", "ls", "--filter", f"label={LABEL}", "--format", "json")
    if kind == "network":
        nets = podman_json("network", "ls", "--format", "json")
        return [n for n in nets if (n.get("labels") or {}).get(LABEL_KEY) == LABEL_VALUE]
    raise ValueError(kind)


def ensure_network() -> None:
    nets = {n["name"]: n for n in podman_json("network", "ls", "--format", "json")}
    net = nets.get(NETWORK)
    if net is not None:
        if (net.get("labels") or {}).get(LABEL_KEY) != LABEL_VALUE:
            raise LabError(f"network {NETWORK} exists but was not created by this script (no label {LABEL})")
        subnets = [s.get("subnet") for s in net.get("subnets") or []]
        if SUBNET not in subnets:
            raise LabError(f"network {NETWORK} has subnets {subnets}, expected {SUBNET}: run `down` first")
        return
    for other in nets.values():
        if any(s.get("subnet") == SUBNET for s in other.get("subnets") or []):
            raise LabError(f"network {other['name']} already uses {SUBNET}")
    log(f"network {NETWORK} {SUBNET} (gateway {GATEWAY})")
    podman("network", "create", "--driver", "bridge", "--subnet", SUBNET, "--gateway", GATEWAY,
           "--label", LABEL, NETWORK)


def ensure_volume(name: str) -> None:
    found = podman_json("volume", "ls", "--filter", f"name=^{name}$", "--format", "json")
    for vol in found:
        if vol.get("Name") == name:
            if (vol.get("Labels") or {}).get(LABEL_KEY) != LABEL_VALUE:
                raise LabError(f"volume {name} exists but was not created by this script")
            return
    podman("volume", "create", "--label", LABEL, name)


def mirror_mounts(mirror_dir: Path, helm: Path | None) -> list[str]:
    args = []
    files, images = mirror_dir / "files", mirror_dir / "images"
    if files.is_dir():
        # Overlay: the node may write (charts/), the cache stays as it is.
        args += ["--volume", f"{files}:{MIRROR_FILES_ROOT}:O"]
    else:
        log(f"no {files}: the mirror node starts without a files tree")
    if images.is_dir():
        args += ["--volume", f"{images}:{MIRROR_IMAGES_DIR}:ro"]
    else:
        log(f"no {images}: the mirror node starts without image archives")
    if helm is not None:
        args += ["--volume", f"{helm}:{MIRROR_HELM}:ro"]
    return args


def find_helm(mirror_dir: Path) -> Path | None:
    """A helm client for the mirror node (it pushes the chart to the registry).

    $DRALAB_HELM, else helm from the helm release archive in the files tree,
    unpacked once into $DRALAB_CACHE/lab/helm-<version>/.
    """
    if os.environ.get("DRALAB_HELM"):
        return Path(os.environ["DRALAB_HELM"]).resolve()
    candidates = sorted((mirror_dir / "files" / "get.helm.sh").glob("helm-v*-linux-amd64.tar.gz"))
    if not candidates:
        return None
    archive = candidates[-1]
    version = archive.name[len("helm-"):-len("-linux-amd64.tar.gz")]
    target = lab_dir() / f"helm-{version}" / "helm"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            member = tar.getmember("linux-amd64/helm")
            src = tar.extractfile(member)
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(src.read())
            tmp.chmod(0o755)
            tmp.rename(target)
    return target


def run_node(node: Node, ref: str, mirror_dir: Path) -> None:
    key = ensure_ssh_key()
    args = [
        "run", "--detach", "--name", node.container, "--hostname", node.name,
        "--label", LABEL, "--label", f"{LABEL_KEY}-node={node.name}",
        "--privileged", "--cgroupns=private", "--systemd=always",
        # podman's default of 2048 processes is too few for a Kubernetes node.
        "--pids-limit", "-1",
        "--network", NETWORK, "--ip", node.ip,
        "--tmpfs", "/run:rw,exec,mode=755", "--tmpfs", "/tmp:rw,exec,mode=1777",
        "--volume", f"{key}.pub:/root/.ssh/authorized_keys:ro",
        "--stop-signal", "SIGRTMIN+3",
    ]
    if node.kind == "node" and node.cluster:
        volume = f"{node.container}-containerd"
        ensure_volume(volume)
        # Named volumes are nodev,nosuid by default; image layers need both.
        args += ["--volume", f"{volume}:/var/lib/containerd:rw,exec,dev,suid"]
    elif node.kind == "mirror":
        volume = f"{node.container}-registry"
        ensure_volume(volume)
        args += ["--volume", f"{volume}:{MIRROR_REGISTRY_ROOT}"]
        args += mirror_mounts(mirror_dir, find_helm(mirror_dir))
    args += [ref, "/sbin/init"]
    podman(*args)


def wait_ready(nodes: list[Node], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    while pending:
        for node in list(pending):
            if ssh_banner(node.ip).startswith("SSH-"):
                pending.remove(node)
        if not pending:
            break
        if time.monotonic() > deadline:
            states = {n.name: container_state(n) for n in pending}
            raise LabError(f"no SSH on {', '.join(n.name for n in pending)} after {timeout:.0f}s "
                           f"(container states {states}); see `podman logs`")
        time.sleep(1)
    for node in nodes:
        out = podman("exec", node.container, "systemctl", "is-system-running", "--wait",
                     check=False, timeout=max(deadline - time.monotonic(), 30)).stdout.strip()
        if out not in ("running", "degraded"):
            log(f"{node.name}: systemd is {out or 'not answering'}")
        elif out == "degraded":
            failed = podman("exec", node.container, "systemctl", "--failed", "--plain", "--no-legend",
                            check=False).stdout.strip()
            log(f"{node.name}: systemd degraded: {failed}")


def container_state(node: Node) -> str:
    proc = podman("container", "inspect", "--format", "{{.State.Status}}", node.container, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "absent"


def fact_cache_dir() -> Path:
    """The jsonfile fact cache of ansible.cfg (fact_caching_connection, relative to the repository), or the
    ANSIBLE_CACHE_PLUGIN_CONNECTION that overrides it."""
    repo = HARNESS_DIR.parents[1]
    config = configparser.ConfigParser(interpolation=None)
    config.read(repo / "ansible.cfg")
    where = os.environ.get("ANSIBLE_CACHE_PLUGIN_CONNECTION") or config.get("defaults", "fact_caching_connection")
    return (repo / os.path.expanduser(where)).resolve()


def forget_facts(node: Node) -> None:
    """A new container is a new machine: drop what ansible.cfg's fact cache kept of the old one."""
    facts = fact_cache_dir()
    for cached in [facts / node.name, *facts.glob(f"*_{node.name}")]:
        cached.unlink(missing_ok=True)


def up(selected: list[Node], mirror_dir: Path, timeout: float) -> None:
    ensure_podman()
    started = time.monotonic()
    refs = {kind: build_image(kind) for kind in sorted({n.kind for n in selected})}
    ensure_ssh_key()
    ensure_network()
    existing = {c["Names"][0]: c for c in labelled("container")}
    for node in selected:
        current = existing.get(node.container)
        if current is None:
            if podman("container", "exists", node.container, check=False).returncode == 0:
                raise LabError(f"container {node.container} exists but was not created by this script")
            log(f"{node.name}: starting {node.container} at {node.ip}")
            forget_facts(node)
            run_node(node, refs[node.kind], mirror_dir)
            continue
        if current.get("Image") != refs[node.kind]:
            log(f"{node.name}: runs {current.get('Image')}, not {refs[node.kind]} "
                "(run `down` and `up` to use the new image)")
        if current.get("State") != "running":
            log(f"{node.name}: starting the existing {node.container}")
            podman("start", node.container)
    wait_ready(selected, timeout)
    write_known_hosts(NODES)
    log(f"lab up in {time.monotonic() - started:.0f}s: "
        + ", ".join(f"{n.name} {n.ip}" for n in selected))
    print(f"ssh -i {ssh_key()} -o UserKnownHostsFile={known_hosts()} root@{selected[-1].ip}")


def down() -> None:
    ensure_podman()
    containers = [c["Names"][0] for c in labelled("container")]
    if containers:
        log(f"removing containers {', '.join(containers)}")
        podman("rm", "--force", "--time", "10", *containers)
    volumes = [v["Name"] for v in labelled("volume")]
    if volumes:
        log(f"removing volumes {', '.join(volumes)}")
        podman("volume", "rm", "--force", *volumes)
    networks = [n["name"] for n in labelled("network")]
    if networks:
        log(f"removing network {', '.join(networks)}")
        podman("network", "rm", *networks)
    if not (containers or volumes or networks):
        log("nothing to remove")


def status(as_json: bool) -> int:
    ensure_podman()
    containers = {c["Names"][0]: c for c in labelled("container")}
    report = {
        "network": [n["name"] for n in labelled("network")],
        "volumes": sorted(v["Name"] for v in labelled("volume")),
        "nodes": [],
        "images": {kind: {"ref": image_ref(kind), "present": image_exists(image_ref(kind)),
                          "archive": str(image_archive(kind)), "cached": image_archive(kind).exists()}
                   for kind in IMAGES},
        "ssh_key": str(ssh_key()),
        "containers_conf": str(containers_conf()),
    }
    for node in NODES:
        c = containers.get(node.container)
        report["nodes"].append({
            "name": node.name, "ip": node.ip, "container": node.container,
            "state": c.get("State") if c else "absent",
            "image": c.get("Image") if c else None,
            "ssh": bool(c) and ssh_banner(node.ip, 1.0).startswith("SSH-"),
        })
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(f"network: {', '.join(report['network']) or '-'} ({SUBNET}, gateway {GATEWAY})")
        for n in report["nodes"]:
            print(f"  {n['name']:8} {n['ip']:13} {n['container']:15} {n['state']:8} "
                  f"ssh={'yes' if n['ssh'] else 'no':3} {n['image'] or ''}")
        print(f"volumes: {', '.join(report['volumes']) or '-'}")
        for kind, img in report["images"].items():
            print(f"image {kind}: {img['ref']} {'imported' if img['present'] else 'not imported'}, "
                  f"{'cached' if img['cached'] else 'not cached'}")
    running = all(n["state"] == "running" and n["ssh"] for n in report["nodes"])
    return 0 if running else 3


def artifacts_dir() -> Path:
    """dralab_artifacts_dir of inventories/local/group_vars/all.yml."""
    return lab_dir() / "artifacts"


def seats_help() -> None:
    """How a participant logs in: the first seat of the credential sheet, the admin kubeconfig."""
    sheet = artifacts_dir() / "credentials.csv"
    if not sheet.is_file():
        raise LabError(f"no credential sheet at {sheet}: run playbooks/site.yml on the lab first (make lab)")
    with open(sheet, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise LabError(f"{sheet} lists no seats (dralab_seats is 0?)")
    first = rows[0]
    host = first["login_hosts"].split()[0]
    print(f"{len(rows)} seat(s); every password is on the credential sheet {sheet} (mode 0600).")
    print(f"Log in as a participant, e.g. {first['seat']} (password {first['password']}):")
    print(f"  ssh {first['seat']}@{host}")
    print("  kubectl get resourceslices")
    print(f"As the instructor: export KUBECONFIG={artifacts_dir() / 'admin.conf'}")
    board_help()


def board_help() -> None:
    """Where the GPU board answers and where its token is (board.yml's board/board.json)."""
    info_path = artifacts_dir() / "board" / "board.json"
    if not info_path.is_file():
        print("GPU board: not deployed; run it with "
              "`ansible-playbook -i inventories/local/hosts.yml playbooks/board.yml` (site.yml does not yet).")
        return
    info = json.loads(info_path.read_text())
    token_file = Path(info["token_file"])
    if not info.get("url"):
        raise LabError(f"{info_path} names no board URL (no control_plane host runs the board?)")
    token = token_file.read_text().strip() if token_file.is_file() else ""
    print(f"GPU board (projector, no names or passwords): {info['url']}")
    print(f"Instructor's board: {info['instructor_url']}?token={token or 'TOKEN'}")
    print(f"  the token is in {token_file} (mode 0600); seat cards to print: {artifacts_dir() / 'seat-cards.html'}")


def env_exports() -> None:
    write_containers_conf()
    print(f"export CONTAINERS_CONF={shlex.quote(str(containers_conf()))}")
    print(f"export DRALAB_LAB_SSH_KEY={shlex.quote(str(ssh_key()))}")
    print(f"export DRALAB_LAB_KNOWN_HOSTS={shlex.quote(str(known_hosts()))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0],
        epilog="Nodes: " + ", ".join(f"{n.name} {n.ip}" for n in NODES)
        + f". Network {NETWORK} {SUBNET}. Label {LABEL}. Cache: $DRALAB_CACHE (default ~/.cache/dralab).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_image = sub.add_parser("image", help="build (or reuse) the node images")
    p_image.add_argument("--force", action="store_true", help="rebuild even if cached")
    p_image.add_argument("kinds", nargs="*", metavar="KIND",
                         help=f"which images ({', '.join(IMAGES)}; default all)")
    p_up = sub.add_parser("up", help="start the lab (builds what is missing)")
    p_up.add_argument("nodes", nargs="*", metavar="NODE",
                      help=f"only these nodes ({', '.join(BY_NAME)}; default all)")
    p_up.add_argument("--mirror-dir", type=Path, default=None,
                      help="mirror contents for the mirror node (default $DRALAB_CACHE/mirror)")
    p_up.add_argument("--timeout", type=float, default=180, help="seconds to wait for sshd (default 180)")
    sub.add_parser("down", help=f"remove every container, volume and network labelled {LABEL}")
    p_status = sub.add_parser("status", help="list the lab (exit 3 unless every node is up)")
    p_status.add_argument("--json", action="store_true")
    sub.add_parser("env", help="print shell exports (CONTAINERS_CONF, the SSH key)")
    sub.add_parser("seats", help="print how to log in as a seat and the GPU board's URL and token (after site.yml)")
    args = parser.parse_args(argv)
    try:
        if args.command == "image":
            unknown = [k for k in args.kinds if k not in IMAGES]
            if unknown:
                parser.error(f"unknown image(s) {unknown}; choose from {list(IMAGES)}")
            ensure_podman()
            for kind in args.kinds or list(IMAGES):
                print(build_image(kind, force=args.force))
        elif args.command == "up":
            unknown = [n for n in args.nodes if n not in BY_NAME]
            if unknown:
                parser.error(f"unknown node(s) {unknown}; choose from {list(BY_NAME)}")
            selected = [BY_NAME[n] for n in args.nodes] or NODES
            up(selected, args.mirror_dir or cache_root() / "mirror", args.timeout)
        elif args.command == "down":
            down()
        elif args.command == "status":
            return status(args.json)
        elif args.command == "env":
            env_exports()
        elif args.command == "seats":
            seats_help()
    except LabError as exc:
        log(f"FAILED: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
