"""can-has-gpu on the lab, as a participant uses it: SSH in with the seat's password (paramiko), then
reserve, run busybox printing GPU_DEVICE_N, status, why on a >= 100Gi request, release; a second seat
can neither see nor release the first seat's claim. The tool was installed offline by the
participant_tool role from the mirror's wheels, and the lease reaper runs as a systemd service on cp1."""

from __future__ import annotations

import json
import re

import pytest

from conftest import node_host, unit_installed
from podman_lab import topology
from test_seats import Session, credentials

# SEAT's login host is login1 (a login host that is no cluster node), OTHER's is cp1.
SEAT, OTHER = "user02", "user01"


def login(seat: str) -> Session:
    """The seat on its own login host, at the address of its card."""
    row = credentials()[seat]
    return Session(row["login_address"], seat, row["password"])


@pytest.fixture(scope="module")
def seats():
    first, second = login(SEAT), login(OTHER)
    assert first.client.get_transport().getpeername()[0] == topology.BY_NAME["login1"].access_ip
    assert second.client.get_transport().getpeername()[0] == topology.BY_NAME["cp1"].access_ip
    for session in (first, second):
        session.run("can-has-gpu release --all")
    yield first, second
    for session in (first, second):
        session.run("can-has-gpu release --all")
        session.close()


def test_the_tool_and_the_reaper_are_installed():
    cp1 = node_host("cp1")
    for host in ("cp1", "login1"):
        assert node_host(host).file("/usr/local/bin/can-has-gpu").is_symlink
    assert not unit_installed(node_host("login1"), "dralab-lease-reaper")
    reaper = cp1.service("dralab-lease-reaper")
    assert reaper.is_enabled and reaper.is_running
    kubeconfig = cp1.file("/etc/dralab/lease-reaper.kubeconfig")
    assert kubeconfig.user == "dralab-reaper" and kubeconfig.mode == 0o600
    assert cp1.process.filter(user="dralab-reaper"), "the reaper does not run as its own user"
    # Installed offline: from the mirror's wheels, no package index.
    assert cp1.file("/etc/dralab/can-has-gpu.json").exists


def test_reserve_run_status_why_release(seats):
    me = seats[0]
    rc, out, err = me.run("can-has-gpu reserve --for 30m", timeout=180)
    assert rc == 0, out + err
    match = re.search(r"^Reserved (gpu-\w+): (gpu-\d+) on (\S+)", out, re.M)
    assert match, out
    name, device, node = match.groups()
    assert node in {n.name for n in topology.NODES if n.cluster and n.kind == "node"}, out

    rc, out, err = me.run("can-has-gpu run -- busybox:1.37 sh -c 'echo GPU_DEVICE_N=$GPU_DEVICE_N; "
                          "env | grep ^GPU_DEVICE_'", timeout=300)
    assert rc == 0, out + err
    assert re.search(rf"^GPU_DEVICE_\d+={device}$", out, re.M), out + err

    rc, out, err = me.run("can-has-gpu status -o json")
    assert rc == 0, out + err
    status = json.loads(out)
    [row] = [c for c in status["claims"] if c["name"] == name]
    assert row["state"] == "in use" and [d["device"] for d in row["devices"]] == [device]
    assert 0 < row["lease_left_seconds"] <= 1800
    assert status["free"] is not None and status["free"]["published"] == 24

    rc, out, err = me.run("can-has-gpu release --all")
    assert rc == 0 and f"Released {name}" in out, out + err
    rc, out, err = me.run("can-has-gpu reserve --memory 100Gi --wait 60s", timeout=180)
    assert rc == 5, out + err  # never fits as asked: refused at once, nothing made
    assert "100Gi" in out and "80Gi" in out, out
    rc, out, err = me.run("can-has-gpu status -o json")
    assert json.loads(out)["claims"] == [], out


def test_why_on_a_pending_100gi_claim(seats):
    me = seats[0]
    claim = ("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: big-gpu\nspec:\n  devices:\n"
             "    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n"
             "        selectors:\n        - cel:\n            expression: \"device.capacity['gpu.example.com']"
             ".memory.compareTo(quantity('100Gi')) >= 0\"\n")
    rc, out, err = me.run(f"kubectl -n {SEAT} apply -f -", stdin=claim)
    assert rc == 0, err
    rc, out, err = me.run("can-has-gpu why big-gpu")
    assert rc == 5 and "never fits as asked" in out, out + err
    assert "100Gi" in out and "80Gi" in out, out
    rc, out, err = me.run("can-has-gpu release big-gpu")
    assert rc == 0, out + err


def test_a_second_seat_cannot_see_or_release_the_first_seats_claim(seats):
    me, other = seats
    rc, out, err = me.run("can-has-gpu reserve -o json", timeout=180)
    assert rc == 0, out + err
    name = json.loads(out)["claim"]
    rc, out, err = other.run("can-has-gpu status -o json")
    assert rc == 0 and json.loads(out)["claims"] == [], out + err
    rc, out, err = other.run(f"can-has-gpu release {name}")
    assert rc == 1 and f"You have no claim {name}" in err, out + err
    rc, out, err = other.run(f"kubectl -n {SEAT} delete resourceclaim {name}")
    assert rc != 0 and "forbidden" in err.lower(), out + err
    rc, out, err = me.run("can-has-gpu status -o json")
    assert [c["name"] for c in json.loads(out)["claims"]] == [name]
    assert me.run(f"can-has-gpu release {name}")[0] == 0
