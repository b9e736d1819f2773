# -*- coding: utf-8 -*-
# Copyright: dralab.workshop contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every address a role renders, (a) from one ansible_host as before the address model, (b) from an internal and an
access address (README.md, Addresses): the cluster's own traffic uses the internal one, the controller and people
the access one."""

from __future__ import annotations

import base64
import csv
import io

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader

from render import REPO, evaluate, parse_unit, render_role_template, role_vars, template_value

FACTS = {"default_ipv4": {"address": "10.9.9.9"}, "hostname": "ip-10-0-0-10"}
# (a) one address for everything, as in the sample inventory and the podman lab.
ONE = {"cp1": {"ansible_host": "192.0.2.10", "ansible_facts": FACTS},
       "worker1": {"ansible_host": "192.0.2.11", "ansible_facts": FACTS},
       "login1": {"ansible_host": "192.0.2.21", "ansible_facts": FACTS}}
# (b) a NAT cloud: Ansible and people reach the public addresses, the VMs have the private ones.
NAT = {"cp1": {"ansible_host": "203.0.113.10", "internal_address": "10.0.0.10", "ansible_facts": FACTS},
       "worker1": {"ansible_host": "203.0.113.11", "internal_address": "10.0.0.11", "ansible_facts": FACTS},
       "login1": {"ansible_host": "198.51.100.21", "internal_address": "10.0.0.21", "access_address": "203.0.113.21",
                  "ansible_facts": FACTS}}
GROUPS = {"all": ["cp1", "worker1", "login1"], "control_plane": ["cp1"], "workers": ["worker1"], "login": ["login1"]}
JOIN = ("kubeadm join %s:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:" + "0" * 64)


def host(hostvars, name, **extra):
    """What a task on host `name` sees: its own variables, groups and every host's variables."""
    return {**hostvars[name], "inventory_hostname": name, "groups": GROUPS, "hostvars": hostvars, **extra}


def kubeadm(hostvars, **extra):
    text = render_role_template("control_plane", "kubeadm-config.yaml.j2", host(hostvars, "cp1", **extra))
    return {doc["kind"]: doc for doc in yaml.safe_load_all(text) if doc}


def test_kubeadm_config_with_one_address_is_unchanged():
    docs = kubeadm(ONE)
    init = docs["InitConfiguration"]
    assert init["localAPIEndpoint"]["advertiseAddress"] == "192.0.2.10"
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": "192.0.2.10"}]
    assert "certSANs" not in docs["ClusterConfiguration"]["apiServer"]
    sans = kubeadm(ONE, control_plane_apiserver_cert_sans=["api.lab.example.org"])
    assert sans["ClusterConfiguration"]["apiServer"]["certSANs"] == ["api.lab.example.org"]


def test_kubeadm_config_advertises_the_internal_address_and_certifies_both():
    docs = kubeadm(NAT)
    init = docs["InitConfiguration"]
    assert init["localAPIEndpoint"]["advertiseAddress"] == "10.0.0.10"
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": "10.0.0.10"}]
    assert docs["ClusterConfiguration"]["apiServer"]["certSANs"] == ["10.0.0.10", "203.0.113.10"]
    sans = kubeadm(NAT, control_plane_apiserver_cert_sans=["api.lab.example.org", "10.0.0.10"])
    assert sans["ClusterConfiguration"]["apiServer"]["certSANs"] == ["api.lab.example.org", "10.0.0.10", "203.0.113.10"]


def test_a_dns_name_ansible_host_keeps_the_facts_internal_address():
    named = {"cp1": {"ansible_host": "cp1.lab.example.org", "ansible_facts": FACTS}}
    docs = kubeadm(named)
    assert docs["InitConfiguration"]["localAPIEndpoint"]["advertiseAddress"] == "10.9.9.9"
    assert docs["ClusterConfiguration"]["apiServer"]["certSANs"] == ["10.9.9.9", "cp1.lab.example.org"]


@pytest.mark.parametrize("hostvars, node_ip", [(ONE, "192.0.2.11"), (NAT, "10.0.0.11")])
def test_a_worker_registers_its_internal_address(hostvars, node_ip):
    text = render_role_template("worker", "kubeadm-join.yaml.j2", host(
        hostvars, "worker1", control_plane_join_command=JOIN % hostvars["cp1"].get("internal_address", "192.0.2.10"),
        control_plane_preflight_errors=[]))
    (join,) = list(yaml.safe_load_all(text))
    assert join["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": node_ip}]


def fetched_admin_kubeconfig(hostvars, **extra):
    """The admin kubeconfig as control_plane's fetch.yml writes it on the controller from the node's admin.conf."""
    tasks = DataLoader().load_from_file(str(REPO / "roles" / "control_plane" / "tasks" / "fetch.yml"))
    task = next(task for task in tasks if "ansible.builtin.copy" in task)
    node_copy = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n"
                 "    server: https://%s:6443\n  name: kubernetes\n" % ONE["cp1"]["ansible_host"]
                 if hostvars is ONE else
                 "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: Q0E=\n"
                 "    server: https://10.0.0.10:6443\n  name: kubernetes\n")
    slurped = {"content": base64.b64encode(node_copy.encode()).decode()}
    content = template_value("control_plane", task["ansible.builtin.copy"]["content"],
                             host(hostvars, "cp1", control_plane_admin_kubeconfig=slurped, **extra))
    return node_copy, content


def test_the_admin_kubeconfig_names_the_access_address():
    node_copy, content = fetched_admin_kubeconfig(ONE)
    assert content == node_copy, "one address: the node's file, unchanged"
    node_copy, content = fetched_admin_kubeconfig(NAT)
    assert yaml.safe_load(content)["clusters"][0]["cluster"] == {
        "certificate-authority-data": "Q0E=", "server": "https://203.0.113.10:6443"}
    dummy, content = fetched_admin_kubeconfig(NAT, control_plane_endpoint="api.lab.example.org:6443")
    assert "server: https://api.lab.example.org:6443" in content


@pytest.mark.parametrize("hostvars, expected", [(ONE, ""), (NAT, "https://10.0.0.10:6443")])
def test_kubeconfigs_used_on_the_hosts_name_the_internal_address(hostvars, expected):
    # "" is the admin kubeconfig's server, as before; with two addresses the login hosts and the node programs
    # reach the API server directly, not through the translation.
    assert evaluate("workshop_users", "workshop_users_api_server", host(hostvars, "cp1")) == expected
    assert evaluate("participant_tool", "participant_tool_api_server", host(hostvars, "cp1")) == expected
    assert evaluate("lab_board", "lab_board_api_server", host(hostvars, "cp1")) == expected
    shared = dict(hostvars, cp1=dict(hostvars["cp1"], control_plane_endpoint="api.lab.example.org:6443"))
    assert evaluate("workshop_users", "workshop_users_api_server", host(shared, "cp1")) == ""


@pytest.mark.parametrize("hostvars, address", [(ONE, "192.0.2.21"), (NAT, "203.0.113.21")])
def test_the_credential_sheet_names_the_access_address(hostvars, address):
    variables = dict(role_vars("workshop_users"), **host(
        hostvars, "login1", workshop_users_seat_names=["user01"], workshop_users_login_hosts=["login1"],
        workshop_users_passwords={"user01": "pw"}, workshop_users_artifacts_dir="/a"))
    rows = list(csv.DictReader(io.StringIO(render_role_template("workshop_users", "credentials.csv.j2", variables))))
    assert [(row["login_host"], row["login_address"]) for row in rows] == [("login1", address)]


@pytest.mark.parametrize("hostvars, listen, url", [
    (ONE, "192.0.2.10:8088", "http://192.0.2.10:8088/"),
    (NAT, "10.0.0.10:8088", "http://203.0.113.10:8088/"),
])
def test_the_board_listens_inside_and_is_shown_outside(hostvars, listen, url):
    unit = parse_unit(render_role_template("lab_board", "dralab-board.service.j2", host(hostvars, "cp1")))
    assert "--listen %s " % listen in dict(unit["Service"])["ExecStart"]
    assert evaluate("lab_board", "lab_board_url | trim", host(hostvars, "cp1")) == url
    sheet = [{"seat": "user01", "login_host": "login1", "login_address": "203.0.113.21", "password": "pw",
              "namespace": "user01"}]
    cards = render_role_template("lab_board", "seat-cards.html.j2", host(hostvars, "cp1", lab_board_credentials={
        "list": sheet}))
    assert url in cards and "ssh user01@203.0.113.21" in cards


def test_the_board_checks_itself_at_its_listen_address():
    tasks = DataLoader().load_from_file(str(REPO / "roles" / "lab_board" / "tasks" / "service.yml"))
    task = next(task for task in tasks if task["name"] == "Wait for the board to answer")
    assert template_value("lab_board", task["ansible.builtin.uri"]["url"], host(NAT, "cp1")) == (
        "http://10.0.0.10:8088/healthz")
    ipv6 = {"cp1": {"ansible_host": "fd00::10"}}
    assert evaluate("lab_board", "lab_board_url | trim", host(ipv6, "cp1")) == "http://[fd00::10]:8088/"


@pytest.mark.parametrize("hostvars, lines", [
    (ONE, ["192.0.2.10 cp1 ip-10-0-0-10", "192.0.2.11 worker1 ip-10-0-0-10", "192.0.2.21 login1 ip-10-0-0-10"]),
    (NAT, ["10.0.0.10 cp1 ip-10-0-0-10", "10.0.0.11 worker1 ip-10-0-0-10", "10.0.0.21 login1 ip-10-0-0-10"]),
])
def test_etc_hosts_lists_the_internal_addresses(hostvars, lines):
    text = render_role_template("prereqs", "etc_hosts.j2", host(hostvars, "cp1", prereqs_hosts_group=GROUPS["all"]))
    assert [line for line in text.splitlines() if line.strip()] == lines
    pinned = dict(hostvars, worker1=dict(hostvars["worker1"], prereqs_node_address="10.1.1.1"))
    text = render_role_template("prereqs", "etc_hosts.j2", host(pinned, "cp1", prereqs_hosts_group=["worker1"]))
    assert text.strip() == "10.1.1.1 worker1 ip-10-0-0-10"
