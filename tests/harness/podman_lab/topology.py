"""What the podman lab is: its nodes and their two addresses, its networks, the label of everything it creates,
where the mirror's contents sit on the mirror node; LabError.

The lab is shaped like a NAT cloud: the nodes talk to each other on the podman network (internal addresses,
10.89.42.0/24), and this machine (the controller, the participants' laptops, the browser) reaches each node only at
its access address (10.89.43.0/24), which podman_lab/nat.py translates to the internal one."""

from __future__ import annotations

import sys
from dataclasses import dataclass

LABEL_KEY = "dralab.workshop/lab"
LABEL_VALUE = "local"
LABEL = f"{LABEL_KEY}={LABEL_VALUE}"

NETWORK = "dralab-lab"
SUBNET = "10.89.42.0/24"
GATEWAY = "10.89.42.1"
# The outside: a veth link on this machine holding OUTSIDE_GATEWAY; nftables translates each node's access address
# to its internal one and refuses new connections from this machine to internal addresses.
OUTSIDE_SUBNET = "10.89.43.0/24"
OUTSIDE_GATEWAY = "10.89.43.1"
OUTSIDE_LINK = "dralab-out"
NFT_TABLE = "dralab_lab"
PREFIX = "dralab-"  # container and volume names: dralab-cp1, dralab-cp1-containerd


@dataclass(frozen=True)
class Node:
    name: str  # host name, inventory name
    ip: str  # internal address, on the podman network (the inventory's internal_address)
    access_ip: str  # what this machine reaches it at (the inventory's ansible_host)
    kind: str  # key of IMAGES
    cluster: bool = True  # a Kubernetes node (gets a containerd volume); False: a login host only
    # Installs with the roles' defaults, from upstream URLs (served by the mirror node, podman_lab/upstream.py);
    # False: from the offline mirror (inventories/local sets the mirror variables for it).
    online: bool = False

    @property
    def container(self) -> str:
        return PREFIX + self.name


NODES = [
    Node("mirror1", "10.89.42.2", "10.89.43.2", "mirror"),
    Node("cp1", "10.89.42.11", "10.89.43.11", "node", online=True),
    Node("worker1", "10.89.42.12", "10.89.43.12", "node"),
    Node("worker2", "10.89.42.13", "10.89.43.13", "node"),
    # A login host that is not a cluster node (the layout docs/security.md advises).
    Node("login1", "10.89.42.14", "10.89.43.14", "node", cluster=False),
]
BY_NAME = {n.name: n for n in NODES}
MIRROR = next(n for n in NODES if n.kind == "mirror")

# Where the mirror contents sit on the mirror node (roles/mirror defaults).
MIRROR_FILES_ROOT = "/srv/dralab-mirror/files"
MIRROR_IMAGES_DIR = "/srv/dralab-mirror/images"
MIRROR_REGISTRY_ROOT = "/var/lib/docker-registry"
MIRROR_HELM = "/usr/local/bin/helm"
MIRROR_REGISTRY_PORT = 5000

# The upstream host names an online node asks for with the roles' defaults (downloads, the package index, the
# registries containerd and helm pull from), all answered by the mirror node over HTTPS with the lab's CA.
UPSTREAM_HOSTS = (
    "dl.k8s.io", "github.com", "get.helm.sh", "pypi.org", "files.pythonhosted.org",
    "registry.k8s.io", "registry-1.docker.io", "ghcr.io", "quay.io",
)
UPSTREAM_PORT = 443
UPSTREAM_SERVICE = "dralab-lab-upstream"
UPSTREAM_LOG = "/var/log/dralab-lab-upstream.jsonl"
# Where an online node keeps the lab CA (update-ca-certificates adds it to the system store).
UPSTREAM_CA_PATH = "/usr/local/share/ca-certificates/dralab-lab-upstream.crt"


def log(msg: str) -> None:
    print(f"[nodes] {msg}", file=sys.stderr, flush=True)


class LabError(Exception):
    pass
