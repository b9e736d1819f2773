"""Bringing the lab up, listing it and taking it down: the nodes' containers with their volumes and mounts, the
wait for sshd and systemd, what Ansible's fact cache kept of replaced nodes."""

from __future__ import annotations

import configparser
import json
import os
import tarfile
import time
from pathlib import Path

from podman_lab.images import IMAGES, build_image, image_archive, image_exists, image_ref
from podman_lab.nat import ensure_nat, nat_state, remove_nat
from podman_lab.paths import containers_conf, known_hosts, lab_dir, ssh_key
from podman_lab.podman import container_state, ensure_network, ensure_podman, ensure_volume, labelled, podman
from podman_lab.ssh import ensure_ssh_key, ssh_banner, write_known_hosts
from podman_lab.topology import (GATEWAY, LABEL, LABEL_KEY, MIRROR, MIRROR_FILES_ROOT, MIRROR_HELM,
                                 MIRROR_IMAGES_DIR, MIRROR_REGISTRY_ROOT, NETWORK, NFT_TABLE, NODES, OUTSIDE_LINK,
                                 SUBNET, LabError, Node, log)
from podman_lab.upstream import ensure_certificates, mirror_node_args, online_node_args, start_server, trust_ca

REPO = Path(__file__).resolve().parents[3]


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
    if node.online:
        args += online_node_args(MIRROR)
    if node.kind == "mirror":
        volume = f"{node.container}-registry"
        ensure_volume(volume)
        args += ["--volume", f"{volume}:{MIRROR_REGISTRY_ROOT}"]
        args += mirror_mounts(mirror_dir, find_helm(mirror_dir)) + mirror_node_args(node)
    args += [ref, "/sbin/init"]
    podman(*args)


def wait_ready(nodes: list[Node], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(nodes)
    while pending:
        for node in list(pending):
            if ssh_banner(node.access_ip).startswith("SSH-"):
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


def fact_cache_dir() -> Path:
    """The jsonfile fact cache of ansible.cfg (fact_caching_connection, relative to the repository), or the
    ANSIBLE_CACHE_PLUGIN_CONNECTION that overrides it."""
    repo = REPO
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
    ensure_certificates()
    ensure_network()
    ensure_nat(NODES)
    existing = {c["Names"][0]: c for c in labelled("container")}
    for node in selected:
        current = existing.get(node.container)
        if current is None:
            if podman("container", "exists", node.container, check=False).returncode == 0:
                raise LabError(f"container {node.container} exists but was not created by this script")
            log(f"{node.name}: starting {node.container} at {node.ip} (reached at {node.access_ip})")
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
    for node in selected:
        if node.kind == "mirror":
            start_server(node)
        if node.online:
            trust_ca(node)
    write_known_hosts(NODES)
    log(f"lab up in {time.monotonic() - started:.0f}s: "
        + ", ".join(f"{n.name} {n.access_ip} (inside {n.ip})" for n in selected))
    print(f"ssh -i {ssh_key()} -o UserKnownHostsFile={known_hosts()} root@{selected[-1].access_ip}")


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
    outside = nat_state()
    remove_nat()
    if not (containers or volumes or networks or outside["link"] is not None or outside["table"]):
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
        "outside": nat_state(),
    }
    for node in NODES:
        c = containers.get(node.container)
        report["nodes"].append({
            "name": node.name, "ip": node.ip, "access_ip": node.access_ip, "container": node.container,
            "state": c.get("State") if c else "absent",
            "image": c.get("Image") if c else None,
            "ssh": bool(c) and ssh_banner(node.access_ip, 1.0).startswith("SSH-"),
        })
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(f"network: {', '.join(report['network']) or '-'} ({SUBNET}, gateway {GATEWAY})")
        outside = report["outside"]
        print(f"outside: link {OUTSIDE_LINK} {', '.join(outside['link'] or []) or 'absent'}, "
              f"nftables table {NFT_TABLE} {'present' if outside['table'] else 'absent'}")
        for n in report["nodes"]:
            print(f"  {n['name']:8} {n['access_ip']:13} {n['ip']:13} {n['container']:15} {n['state']:8} "
                  f"ssh={'yes' if n['ssh'] else 'no':3} {n['image'] or ''}")
        print(f"volumes: {', '.join(report['volumes']) or '-'}")
        for kind, img in report["images"].items():
            print(f"image {kind}: {img['ref']} {'imported' if img['present'] else 'not imported'}, "
                  f"{'cached' if img['cached'] else 'not cached'}")
    running = all(n["state"] == "running" and n["ssh"] for n in report["nodes"]) and report["outside"]["table"]
    return 0 if running else 3
