# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/cni: the flannel manifest rendered for the lab, and the roll on a configuration change."""

from __future__ import annotations

import json

import yaml

from render import render_role_template

CNI_CONF = {"name": "cbr0", "cniVersion": "1.0.0",
            "plugins": [{"type": "flannel", "delegate": {"hairpinMode": True, "isDefaultGateway": True}},
                        {"type": "portmap", "capabilities": {"portMappings": True}}]}
NET_CONF = {"Network": "10.244.0.0/16", "EnableNFTables": False, "Backend": {"Type": "vxlan"}}

# The shape of upstream kube-flannel.yml, trimmed to what the template touches.
UPSTREAM = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-flannel"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-flannel-cfg", "namespace": "kube-flannel"},
     "data": {"cni-conf.json": json.dumps(CNI_CONF, indent=2), "net-conf.json": json.dumps(NET_CONF, indent=2)}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "kube-flannel-ds", "namespace": "kube-flannel"},
     "spec": {"selector": {"matchLabels": {"app": "flannel"}},
              "template": {"metadata": {"labels": {"app": "flannel"}},
                           "spec": {"initContainers": [
                               {"name": "install-cni-plugin", "image": "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3"},
                               {"name": "install-cni", "image": "ghcr.io/flannel-io/flannel:v0.28.10"}],
                               "containers": [{"name": "kube-flannel", "image": "ghcr.io/flannel-io/flannel:v0.28.10"}]}}}},
    None,
]
ANNOTATION = "dralab.workshop/flannel-config-sha256"


def render(**extra):
    text = render_role_template("cni", "kube-flannel.yml.j2", {"cni_flannel_upstream_docs": UPSTREAM, **extra})
    return {doc["kind"]: doc for doc in yaml.safe_load_all(text) if doc}


def test_pod_network_images_and_kept_objects():
    docs = render(cni_pod_network="10.200.0.0/16", cni_flannel_image="10.0.0.1:5000/flannel:x")
    assert sorted(docs) == ["ConfigMap", "DaemonSet", "Namespace"]
    net_conf = json.loads(docs["ConfigMap"]["data"]["net-conf.json"])
    assert net_conf == {"Network": "10.200.0.0/16", "EnableNFTables": False, "Backend": {"Type": "vxlan"}}
    # Without extra keys the CNI configuration is upstream's, byte for byte.
    assert docs["ConfigMap"]["data"]["cni-conf.json"] == UPSTREAM[1]["data"]["cni-conf.json"]
    spec = docs["DaemonSet"]["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["initContainers"]] == [
        "ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3", "10.0.0.1:5000/flannel:x"]
    assert spec["containers"][0]["image"] == "10.0.0.1:5000/flannel:x"
    assert docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"] == {"app": "flannel"}


def test_cni_conf_extra_is_merged():
    docs = render(cni_flannel_cni_conf_extra={"cniVersion": "0.4.0"})
    cni_conf = json.loads(docs["ConfigMap"]["data"]["cni-conf.json"])
    assert cni_conf == dict(CNI_CONF, cniVersion="0.4.0")


def test_a_configuration_change_rolls_the_daemonset():
    def checksum(**extra):
        return render(**extra)["DaemonSet"]["spec"]["template"]["metadata"]["annotations"][ANNOTATION]

    base = checksum()
    assert len(base) == 64
    assert checksum() == base, "the checksum must be stable, or every run would roll flannel"
    assert checksum(cni_flannel_cni_conf_extra={"cniVersion": "0.4.0"}) != base
    assert checksum(cni_pod_network="10.200.0.0/16") != base
    assert checksum(cni_flannel_backend="host-gw") != base
    # Images are not configuration: the pod template changes anyway, the checksum does not.
    assert checksum(cni_flannel_image="10.0.0.1:5000/flannel:x") == base


def test_images_are_applied_at_their_recorded_digests():
    digest = "sha256:" + "ab" * 32
    plugin = "sha256:" + "cd" * 32
    docs = render(cni_flannel_image_ref=f"ghcr.io/flannel-io/flannel:v0.28.10@{digest}",
                  cni_flannel_cni_plugin_image_ref=f"ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3@{plugin}")
    spec = docs["DaemonSet"]["spec"]["template"]["spec"]
    images = [c["image"] for c in spec["initContainers"] + spec["containers"]]
    assert images == [f"ghcr.io/flannel-io/flannel-cni-plugin:v1.9.1-flannel3@{plugin}",
                      f"ghcr.io/flannel-io/flannel:v0.28.10@{digest}", f"ghcr.io/flannel-io/flannel:v0.28.10@{digest}"]
