"""The control_plane role's kubeadm configuration template."""

from __future__ import annotations

import re

import pytest
import yaml

from render import render_role_template

HOST = {
    "inventory_hostname": "cp1",
    "ansible_host": "192.0.2.10",
    "ansible_facts": {"default_ipv4": {"address": "10.0.0.5"}, "architecture": "x86_64"},
}


def assert_no_document_without_content(text: str) -> None:
    """kubeadm rejects a document that holds only comments (e.g. the ansible_managed header before a `---`).

    Checks the raw text, `---` line by `---` line: every document, empty ones included, needs a line that is
    neither blank nor a comment.
    """
    for number, document in enumerate(re.split(r"^---[ \t]*$", text, flags=re.MULTILINE), start=1):
        lines = [line.strip() for line in document.splitlines()]
        assert any(line and not line.startswith("#") for line in lines), (
            f"document {number} has only comments or blank lines: {document!r}")


def render(**extra_vars) -> dict:
    """Render kubeadm-config.yaml.j2 and index its documents by kind."""
    text = render_role_template("control_plane", "kubeadm-config.yaml.j2", {**HOST, **extra_vars})
    assert_no_document_without_content(text)
    docs = [doc for doc in yaml.safe_load_all(text) if doc]
    kinds = [doc["kind"] for doc in docs]
    assert len(kinds) == len(set(kinds)), kinds
    return {doc["kind"]: doc for doc in docs}


def args(component: dict) -> dict:
    """v1beta4 extraArgs (a list of {name, value}) as a dict."""
    assert isinstance(component["extraArgs"], list)
    return {arg["name"]: arg["value"] for arg in component["extraArgs"]}


def test_documents_and_api_versions():
    docs = render()
    assert set(docs) == {"InitConfiguration", "ClusterConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"}
    assert docs["InitConfiguration"]["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert docs["ClusterConfiguration"]["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    assert docs["KubeletConfiguration"]["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
    assert docs["KubeProxyConfiguration"]["apiVersion"] == "kubeproxy.config.k8s.io/v1alpha1"


def test_defaults():
    docs = render()
    init, cluster = docs["InitConfiguration"], docs["ClusterConfiguration"]
    assert cluster["kubernetesVersion"] == "v1.35.4"
    assert cluster["imageRepository"] == "registry.k8s.io"
    assert cluster["networking"]["podSubnet"] == "10.244.0.0/16"
    assert cluster["networking"]["serviceSubnet"] == "10.96.0.0/12"
    assert "controlPlaneEndpoint" not in cluster
    assert "dns" not in cluster
    assert init["localAPIEndpoint"] == {"advertiseAddress": "192.0.2.10", "bindPort": 6443}
    registration = init["nodeRegistration"]
    assert registration["name"] == "cp1"
    assert registration["criSocket"] == "unix:///run/containerd/containerd.sock"
    assert registration["kubeletExtraArgs"] == [{"name": "node-ip", "value": "192.0.2.10"}]
    assert docs["KubeletConfiguration"]["cgroupDriver"] == "systemd"
    assert docs["KubeProxyConfiguration"]["mode"] == "iptables"
    # No feature gates, no runtime-config unless asked for; the API server only gets its safety switches.
    assert args(cluster["apiServer"]) == SECURITY_ARGS
    for component in ("controllerManager", "scheduler"):
        assert args(cluster[component]) == {}
    assert "featureGates" not in docs["KubeletConfiguration"]


def test_etcd_gets_the_labs_backend_quota():
    # dralab_etcd_quota_bytes: 4 GiB unless set; dra_health (lab_health) judges the database's size against it.
    assert args(render()["ClusterConfiguration"]["etcd"]["local"]) == {"quota-backend-bytes": "4294967296"}
    local = render(dralab_etcd_quota_bytes=8589934592)["ClusterConfiguration"]["etcd"]["local"]
    assert args(local) == {"quota-backend-bytes": "8589934592"} and local["dataDir"] == "/var/lib/etcd"


def test_every_kubelet_runs_containers_with_the_default_seccomp_profile_and_bounded_pids():
    kubelet = render()["KubeletConfiguration"]
    assert kubelet["seccompDefault"] is True
    assert kubelet["podPidsLimit"] == 1024
    off = render(control_plane_kubelet_seccomp_default=False, control_plane_kubelet_pod_pids_limit=0)
    assert off["KubeletConfiguration"]["seccompDefault"] is False
    assert "podPidsLimit" not in off["KubeletConfiguration"]


def test_lab_wide_variables_are_read():
    docs = render(dralab_kubernetes_version="1.35.2", dralab_pod_subnet="10.250.0.0/16", dralab_feature_gates=["DRADeviceTaints"])
    cluster = docs["ClusterConfiguration"]
    assert cluster["kubernetesVersion"] == "v1.35.2"
    assert cluster["networking"]["podSubnet"] == "10.250.0.0/16"
    assert args(cluster["apiServer"])["feature-gates"] == "DRADeviceTaints=true"


def test_advertise_address_falls_back_to_the_default_ipv4_for_host_names():
    docs = render(ansible_host="cp1.example.org")
    assert docs["InitConfiguration"]["localAPIEndpoint"]["advertiseAddress"] == "10.0.0.5"


def test_feature_gates_reach_every_component():
    gates = ["DRAConsumableCapacity", "DRADeviceTaints"]
    docs = render(control_plane_feature_gates=gates)
    cluster = docs["ClusterConfiguration"]
    for component in ("apiServer", "controllerManager", "scheduler"):
        assert args(cluster[component])["feature-gates"] == "DRAConsumableCapacity=true,DRADeviceTaints=true"
    assert docs["KubeletConfiguration"]["featureGates"] == {"DRAConsumableCapacity": True, "DRADeviceTaints": True}


SECURITY_ARGS = {
    "enable-admission-plugins": "NodeRestriction,DenyServiceExternalIPs",
    "service-account-max-token-expiration": "28800s",
    "service-account-extend-token-expiration": "false",
}


def test_api_server_refuses_external_ips_and_long_tokens_by_default():
    apiserver = args(render()["ClusterConfiguration"]["apiServer"])
    assert {k: apiserver[k] for k in SECURITY_ARGS} == SECURITY_ARGS


@pytest.mark.parametrize(("duration", "flag"), [("12h", "43200s"), ("1h30m", "5400s"), ("20m", "3600s")])
def test_max_token_expiration_follows_the_event_duration(duration, flag):
    apiserver = args(render(dralab_event_duration=duration)["ClusterConfiguration"]["apiServer"])
    assert apiserver["service-account-max-token-expiration"] == flag


def test_runtime_config_and_extra_args_reach_the_api_server_only():
    docs = render(
        control_plane_apiserver_runtime_config=["resource.k8s.io/v1alpha3=true", "resource.k8s.io/v1beta2=true"],
        control_plane_apiserver_extra_args=[{"name": "v", "value": "2"}],
    )
    cluster = docs["ClusterConfiguration"]
    assert args(cluster["apiServer"]) == {
        "runtime-config": "resource.k8s.io/v1alpha3=true,resource.k8s.io/v1beta2=true",
        **SECURITY_ARGS,
        "v": "2",
    }
    assert args(cluster["controllerManager"]) == {}
    assert args(cluster["scheduler"]) == {}


def test_cgroup_v1_is_off_by_default():
    docs = render()
    assert "failCgroupV1" not in docs["KubeletConfiguration"]
    assert docs["InitConfiguration"]["nodeRegistration"]["ignorePreflightErrors"] == []


@pytest.mark.parametrize("variable", ["control_plane_cgroup_v1", "dralab_cgroup_v1"])
def test_cgroup_v1_switch(variable):
    docs = render(**{variable: True, "control_plane_ignore_preflight_errors": ["NumCPU"]})
    assert docs["KubeletConfiguration"]["failCgroupV1"] is False
    assert docs["InitConfiguration"]["nodeRegistration"]["ignorePreflightErrors"] == ["NumCPU", "SystemVerification"]


def test_image_repository_and_image_overrides():
    docs = render(
        control_plane_image_repository="mirror.example:5000",
        control_plane_etcd_image_tag="3.6.6-0",
        control_plane_dns_image_repository="mirror.example:5000/coredns",
        control_plane_dns_image_tag="v1.13.1",
    )
    cluster = docs["ClusterConfiguration"]
    assert cluster["imageRepository"] == "mirror.example:5000"
    assert cluster["etcd"]["local"]["imageTag"] == "3.6.6-0"
    assert "imageRepository" not in cluster["etcd"]["local"]
    assert cluster["dns"] == {"imageRepository": "mirror.example:5000/coredns", "imageTag": "v1.13.1"}


def test_control_plane_endpoint_and_cert_sans():
    docs = render(control_plane_endpoint="k8s.example.org:6443", control_plane_apiserver_cert_sans=["k8s.example.org"])
    cluster = docs["ClusterConfiguration"]
    assert cluster["controlPlaneEndpoint"] == "k8s.example.org:6443"
    assert cluster["apiServer"]["certSANs"] == ["k8s.example.org"]


def test_kubelet_and_kube_proxy_extra_config_are_merged():
    docs = render(
        control_plane_feature_gates=["DRADeviceTaints"],
        control_plane_kubelet_extra_config={
            "failSwapOn": False,
            "cgroupRoot": "/kubelet",
            "evictionHard": {"nodefs.available": "0%"},
            "featureGates": {"DRAConsumableCapacity": True},
        },
        control_plane_kube_proxy_extra_config={"conntrack": {"maxPerCore": 0}},
    )
    kubelet = docs["KubeletConfiguration"]
    assert kubelet["cgroupDriver"] == "systemd"
    assert kubelet["failSwapOn"] is False
    assert kubelet["cgroupRoot"] == "/kubelet"
    assert kubelet["evictionHard"] == {"nodefs.available": "0%"}
    assert kubelet["featureGates"] == {"DRADeviceTaints": True, "DRAConsumableCapacity": True}
    proxy = docs["KubeProxyConfiguration"]
    assert proxy["mode"] == "iptables"
    assert proxy["conntrack"] == {"maxPerCore": 0}


def test_timeouts():
    docs = render(control_plane_timeouts={"controlPlaneComponentHealthCheck": "10m0s"})
    assert docs["InitConfiguration"]["timeouts"] == {"controlPlaneComponentHealthCheck": "10m0s"}


def test_feature_gates_can_switch_a_gate_off():
    docs = render(control_plane_feature_gates=["DRADeviceTaints", "DRAAdminAccess=false"])
    cluster = docs["ClusterConfiguration"]
    assert args(cluster["scheduler"])["feature-gates"] == "DRAAdminAccess=false,DRADeviceTaints=true"
    assert docs["KubeletConfiguration"]["featureGates"] == {"DRAAdminAccess": False, "DRADeviceTaints": True}


def test_join_configuration_is_one_document_with_content():
    """The worker role's kubeadm-join.yaml.j2, from a `kubeadm token create --print-join-command` line."""
    join_command = ("kubeadm join 192.0.2.10:6443 --token abcdef.0123456789abcdef "
                    "--discovery-token-ca-cert-hash sha256:" + "0" * 64)
    text = render_role_template("worker", "kubeadm-join.yaml.j2", {
        **HOST, "inventory_hostname": "worker1", "ansible_host": "192.0.2.11",
        "control_plane_join_command": join_command, "control_plane_preflight_errors": [],
    })
    assert_no_document_without_content(text)
    (join,) = list(yaml.safe_load_all(text))
    assert join["kind"] == "JoinConfiguration"
    assert join["discovery"]["bootstrapToken"]["apiServerEndpoint"] == "192.0.2.10:6443"
    assert join["nodeRegistration"]["name"] == "worker1"
