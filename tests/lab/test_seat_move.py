"""A seat moved to another login host by dralab_seat_login_hosts (a participant whose host failed): users.yml gives
it an account there and removes the one it made on the old host, a rerun changes nothing, and moving it back
restores the lab when the module ends."""

from __future__ import annotations

import json

import paramiko
import pytest

from conftest import REPO, credentials, login, node_host, run_playbook, seats_on
from playbook import parse_recap

USERS = REPO / "playbooks" / "users.yml"


def users_yml(overrides: dict) -> str:
    proc = run_playbook(USERS, "-e", json.dumps({"dralab_seat_login_hosts": overrides}), timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def has_account(host: str, seat: str) -> bool:
    return node_host(host).run(f"getent passwd {seat}").rc == 0


@pytest.fixture(scope="module")
def moved_seat():
    """A seat of cp1 moved to login1, moved back when the module ends."""
    seat = seats_on("cp1")[0]
    users_yml({seat: "login1"})
    try:
        yield seat
    finally:
        users_yml({})


def test_the_moved_seat_has_its_account_on_the_new_host_only(moved_seat):
    row = credentials()[moved_seat]
    assert row["login_host"] == "login1"
    assert has_account("login1", moved_seat) and not has_account("cp1", moved_seat)
    session = login(moved_seat)
    try:
        rc, out, err = session.run("hostname")
        assert (rc, out.strip()) == (0, "login1"), err
    finally:
        session.close()
    with pytest.raises(paramiko.AuthenticationException):
        login(moved_seat, host="cp1")


def test_a_rerun_with_the_move_changes_nothing(moved_seat):
    recap = parse_recap(users_yml({moved_seat: "login1"}))
    assert recap and all(counts["changed"] == 0 for counts in recap.values()), recap


def test_the_other_seats_stay_where_they_were(moved_seat):
    hosts = {seat: row["login_host"] for seat, row in credentials().items() if seat != moved_seat}
    assert hosts == {"user02": "login1", "user03": "cp1", "user04": "login1"}
    assert all(has_account(host, seat) for seat, host in hosts.items())
