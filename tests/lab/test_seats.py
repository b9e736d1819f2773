"""A seat logs in over SSH with its password and runs demo 1 of the workshop (one GPU per pod)."""

from __future__ import annotations

import re
import time

import paramiko
import pytest

from conftest import CLUSTER_NODES, LOGIN_HOSTS, SEATS, Session, credentials, seats_on
from podman_lab import topology

SEAT = "user01"

# Demo 1 of the workshop (shared/seeds 004), one pod: a claim per pod from a template.
DEMO_1 = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: single-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata:
  name: pod-a
spec:
  containers:
  - name: ctr
    image: busybox:1.37
    command: ["sh", "-c", "env | grep GPU_DEVICE; trap 'exit 0' TERM; sleep 3600 & wait"]
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: single-gpu
"""


@pytest.fixture(scope="module")
def seat():
    creds = credentials()
    assert len(creds) == SEATS
    row = creds[SEAT]
    assert row["password"], "no password on the credential sheet"
    assert row["login_host"] == "cp1", row["login_host"]
    host = row["login_address"]
    assert host == topology.BY_NAME["cp1"].access_ip
    session = Session(host, SEAT, row["password"])
    yield session
    session.run(f"kubectl -n {SEAT} delete pod pod-a --ignore-not-found --wait=false; "
                f"kubectl -n {SEAT} delete resourceclaimtemplate single-gpu --ignore-not-found")
    session.close()


def test_wrong_password_is_refused():
    with pytest.raises(paramiko.AuthenticationException):
        Session(topology.BY_NAME["cp1"].access_ip, SEAT, "not-the-password")


def test_each_seat_has_its_own_password():
    creds = credentials()
    passwords = [row["password"] for row in creds.values()]
    assert len(set(passwords)) == len(passwords) == SEATS, "seats share a password"
    # Another seat's password does not open this seat's account.
    other = creds["user02"]["password"]
    with pytest.raises(paramiko.AuthenticationException):
        Session(topology.BY_NAME["cp1"].access_ip, SEAT, other)


def test_seat_sees_the_resourceslices(seat):
    rc, out, err = seat.run("whoami && kubectl get resourceslices -o name")
    assert rc == 0, err
    lines = out.split()
    assert lines[0] == SEAT
    assert len([line for line in lines[1:] if line.startswith("resourceslice")]) == len(CLUSTER_NODES), out


def test_each_seat_has_one_login_host_and_its_address():
    """The seats take turns over the sorted login hosts; the sheet (so the card) gives the address of the seat's own."""
    creds = credentials()
    assert {seat: row["login_host"] for seat, row in creds.items()} == {
        "user01": "cp1", "user02": "login1", "user03": "cp1", "user04": "login1"}
    for row in creds.values():
        assert row["login_address"] == topology.BY_NAME[row["login_host"]].access_ip, row["seat"]
    assert sorted(set(row["login_host"] for row in creds.values())) == LOGIN_HOSTS


def test_a_seat_has_no_account_on_another_login_host():
    """A seat's account exists on its own login host only: its password opens no other."""
    row = credentials()[SEAT]
    with pytest.raises(paramiko.AuthenticationException):
        Session(topology.BY_NAME["login1"].access_ip, SEAT, row["password"])


def test_seat_works_on_a_login_host_that_is_no_node():
    """login1 runs no Kubernetes: its seats have their account, kubectl and their own namespace there."""
    seat = seats_on("login1")[0]
    row = credentials()[seat]
    assert row["login_address"] == topology.BY_NAME["login1"].access_ip
    session = Session(row["login_address"], seat, row["password"])
    try:
        rc, out, err = session.run("hostname; systemctl is-active kubelet containerd; "
                                   "kubectl get resourceslices -o name; kubectl auth can-i list pods; "
                                   f"kubectl auth can-i list pods -n {SEAT}")
        lines = out.split()
        assert lines[0] == "login1", out
        assert lines[1:3] != ["active", "active"], f"login1 runs Kubernetes services: {out}"
        assert len([line for line in lines if line.startswith("resourceslice")]) == len(CLUSTER_NODES), out + err
        assert lines[-2:] == ["yes", "no"], out + err
    finally:
        session.close()


def test_seat_runs_demo_1(seat):
    rc, out, err = seat.run(f"kubectl -n {SEAT} apply -f -", stdin=DEMO_1)
    assert rc == 0, err
    deadline = time.monotonic() + 300
    while True:
        rc, phase, err = seat.run(f"kubectl -n {SEAT} get pod pod-a -o jsonpath={{.status.phase}}")
        if phase == "Running" or time.monotonic() > deadline:
            break
        time.sleep(3)
    if phase != "Running":
        describe = seat.run(f"kubectl -n {SEAT} describe pod pod-a")[1]
        pytest.fail(f"pod-a is {phase or 'missing'}:\n{describe[-3000:]}")
    for _attempt in range(20):
        rc, logs, err = seat.run(f"kubectl -n {SEAT} logs pod-a")
        if "GPU_DEVICE_" in logs:
            break
        time.sleep(2)
    assert re.search(r"^GPU_DEVICE_\d+=gpu-\d+$", logs, re.M), logs + err
    rc, device, err = seat.run(f"kubectl -n {SEAT} get resourceclaims "
                               "-o jsonpath={.items[0].status.allocation.devices.results[0].device}")
    assert rc == 0 and re.fullmatch(r"gpu-\d+", device), device + err
