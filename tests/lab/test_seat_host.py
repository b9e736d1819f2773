"""Hostile seats on the login host: each test performs an attack as a seat over SSH with its password.

A seat has a shell on its own login host, one of the lab's two: cp1 (also the
control plane) and login1 (a login host only); the attacks run on both, each
with a seat of that host (the credential sheet's login_host). These tests do what a participant could do and check that it does not reach anything beyond the
seat's own account: links in the home that root would follow, SSH keys and
forwarding, other seats' files and the admin kubeconfig, a fork bomb and a
memory hog, processes and jobs left for the next group, and secrets in the
instructor's verbose logs.

The module rotates credentials (reset.yml) on the way; later modules read the
credential sheet again.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import paramiko
import pytest
import yaml

from dralab_build.cache import cache_root
from podman_lab import paths as lab_paths
from podman_lab import topology

from conftest import (ARTIFACTS, HOMES, INVENTORY, KUBECONFIG, LOGIN_HOST, LOGIN_HOSTS, REPO, VERBOSE_LOGS, Session, ansible_env,
                      credentials, login, node_host, run_playbook, seat_host, seats_on)
from playbook import parse_recap

# Roles in the attacks below; each acts on its own login host (LINKER and LEAVER on cp1, CONFIG_LINKER and
# BYSTANDER on login1). The attacks parametrized by host take the first or the last seat of
# that host.
LINKER = "user01"  # ~/.kube -> /usr/local/bin
CONFIG_LINKER = "user02"  # ~/.kube/config -> a root file; its home left readable to the group
LEAVER = "user03"  # leaves processes, jobs and files for the next group
BYSTANDER = "user04"  # not in the per-seat reset

CANARY = "/etc/dralab-canary"
# Where cron keeps each user's crontab (root's `crontab -l -u` refuses a user of cron.deny).
CRONTABS = "/var/spool/cron/crontabs"
ROOT_DIR = "/usr/local/bin"
SLEEP_MARK = "7203"  # `sleep 7203`: the process a seat leaves behind
BOOTSTRAP_TOKEN = re.compile(r"(?<![a-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}(?![a-z0-9])")

# Memory limit and task limit of a seat (roles/workshop_users/defaults/main.yml).
SEAT_MEMORY_MIB = 1024
SEAT_TASKS_MAX = 256
# Disk quota of a seat's home and of each shared temporary folder (workshop_users_seat_disk_quota and
# workshop_users_shared_tmp_quota of inventories/local).
SEAT_DISK_MIB = 256

# A bounded fork bomb: at most FORKS children, each sleeping; the parent holds
# them for HOLD seconds (while the test asks the API server), then kills them.
FORK_BOMB = r"""
import os, signal, sys, time
forks, hold = int(sys.argv[1]), float(sys.argv[2])
pids, refused = [], 0
deadline = time.monotonic() + 30
for _ in range(forks):
    if time.monotonic() > deadline:
        break
    try:
        pid = os.fork()
    except OSError:
        refused += 1
        continue
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    pids.append(pid)
print("started", len(pids), "refused", refused, flush=True)
time.sleep(hold)
for pid in pids:
    os.kill(pid, signal.SIGKILL)
for pid in pids:
    os.waitpid(pid, 0)
print("done", flush=True)
"""

# A bounded memory hog: 64 MiB at a time, every page written, at most LIMIT MiB.
MEMORY_HOG = r"""
import sys
chunks = []
for i in range(int(sys.argv[1]) // 64):
    chunk = bytearray(64 << 20)
    chunk[::4096] = b"\x01" * (len(chunk) // 4096)
    chunks.append(chunk)
    print((i + 1) * 64, flush=True)
print("done", flush=True)
"""


def cp1(host: str = LOGIN_HOST):
    return node_host(host)


def first_seat_on(host: str) -> str:
    """The first seat whose login host is host."""
    return seats_on(host)[0]


def last_seat_on(host: str) -> str:
    """The last seat whose login host is host (the fork bomb, the memory hog, the disk fill, the jobs)."""
    return seats_on(host)[-1]


def root_state() -> dict:
    """What root owns that the attacks aim at, on each login host: owner, group, mode, content (not /etc/shadow's:
    rotation changes it; kubeadm and admin.conf only where they are, on cp1)."""
    state = {}
    for name in LOGIN_HOSTS:
        state[name] = cp1(name).check_output(
            f"for f in {ROOT_DIR} {ROOT_DIR}/kubectl {ROOT_DIR}/kubeadm {CANARY} /etc/shadow "
            f"/etc/kubernetes/admin.conf; do if test -e $f; then stat -c '%n %u %g %a %F' $f; fi; done; "
            f"sha256sum {CANARY} {ROOT_DIR}/kubectl; ls -A {ROOT_DIR}")
    return state


def kubeconfig_of(seat: str) -> str:
    return (ARTIFACTS / "seats" / f"{seat}.kubeconfig").read_text()


def home_entry(seat: str, path: str) -> str:
    """`stat` of a path in a seat's home on its login host, as root (reading only, not following links)."""
    return cp1(seat_host(seat)).check_output(f"stat -c '%F %U %G %a' {HOMES}/{seat}/{path}")


def plant_links(linker: Session, config_linker: Session) -> None:
    rc, _out, err = linker.run(f"rm -rf ~/.kube && ln -s {ROOT_DIR} ~/.kube && test -L ~/.kube")
    assert rc == 0, err
    rc, _out, err = config_linker.run(f"rm -rf ~/.kube/config && ln -s {CANARY} ~/.kube/config && test -L ~/.kube/config")
    assert rc == 0, err


def assert_links_replaced_not_followed(before: dict) -> None:
    assert root_state() == before, "root-owned files changed after the seats planted links"
    for seat in (LINKER, CONFIG_LINKER):
        assert home_entry(seat, ".kube") == f"directory {seat} {seat} 700"
        assert home_entry(seat, ".kube/config") == f"regular file {seat} {seat} 600"
        assert cp1(seat_host(seat)).check_output(f"cat {HOMES}/{seat}/.kube/config") == kubeconfig_of(seat).strip()


def run_logged(playbook: str, name: str, *args: str) -> subprocess.CompletedProcess:
    """Run a playbook at -vvv and keep its output for the secrets audit."""
    proc = run_playbook(REPO / "playbooks" / playbook, "-vvv", *args)
    VERBOSE_LOGS.mkdir(mode=0o700, parents=True, exist_ok=True)
    (VERBOSE_LOGS / f"{name}.log").write_text(proc.stdout + proc.stderr)
    return proc


def recap_tail(proc: subprocess.CompletedProcess) -> str:
    out = proc.stdout + proc.stderr
    errors = [line for line in out.splitlines() if "fatal:" in line or "FAILED!" in line or "ERROR" in line]
    return "\n".join(errors[-20:]) + "\n" + out[-3000:]


@pytest.fixture(scope="module")
def secrets_before() -> dict:
    """Passwords and tokens at the start of the module (those site.yml handled), for the audit."""
    creds = credentials()
    return {
        "passwords": {seat: row["password"] for seat, row in creds.items()},
        "kubeconfigs": {seat: kubeconfig_of(seat) for seat in creds},
    }


@pytest.fixture(scope="module")
def canary(secrets_before):
    """A root-only file on each login host that a seat would love to own."""
    content = secrets.token_hex(16)
    for name in LOGIN_HOSTS:
        cp1(name).check_output(f"umask 077; printf %s {content} > {CANARY}; chown root:root {CANARY}; "
                               f"chmod 0600 {CANARY}")
    yield CANARY
    for name in LOGIN_HOSTS:
        cp1(name).run(f"rm -f {CANARY}")


# --- sshd ---------------------------------------------------------------------

@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_seat_cannot_forward_ports(host):
    seat = login(first_seat_on(host), host=host)
    try:
        transport = seat.client.get_transport()
        # ssh -L: a TCP connection from the login host to anywhere.
        with pytest.raises(paramiko.ChannelException):
            transport.open_channel("direct-tcpip", ("127.0.0.1", 22), ("127.0.0.1", 0), timeout=10)
        # ssh -R: a port on the login host that leads back to the seat.
        with pytest.raises(paramiko.SSHException):
            transport.request_port_forward("127.0.0.1", 0)
    finally:
        seat.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_seat_key_in_authorized_keys_does_not_log_in(host):
    key = paramiko.RSAKey.generate(2048)
    name = first_seat_on(host)
    seat = login(name, host=host)
    try:
        rc, _out, err = seat.run("umask 077; mkdir -p ~/.ssh && cat >> ~/.ssh/authorized_keys",
                                 stdin=f"{key.get_name()} {key.get_base64()} seat-key\n")
        assert rc == 0, err
        with pytest.raises(paramiko.AuthenticationException):
            Session(topology.BY_NAME[host].access_ip, name, pkey=key)
    finally:
        seat.run("rm -rf ~/.ssh")
        seat.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_sshd_settings_for_seats(host):
    effective = cp1(host).check_output(f"sshd -T -C user={first_seat_on(host)},host=localhost,addr=127.0.0.1").splitlines()
    for line in ("authorizedkeysfile none", "disableforwarding yes", "allowtcpforwarding no", "permittunnel no",
                 "x11forwarding no", "allowagentforwarding no", "allowstreamlocalforwarding no", "maxauthtries 3",
                 "maxsessions 4", "persourcemaxstartups 40", "persourcenetblocksize 32:128"):
        assert line in effective, line
    # Root (how Ansible logs in) keeps its keys.
    root = cp1(host).check_output("sshd -T -C user=root,host=localhost,addr=127.0.0.1").splitlines()
    assert "authorizedkeysfile none" not in root


# --- privacy -------------------------------------------------------------------

@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_seat_cannot_read_other_homes_or_the_admin_kubeconfig(host):
    name, neighbour = first_seat_on(host), last_seat_on(host)
    assert name != neighbour, f"{host} has one seat only"
    seat = login(name, host=host)
    try:
        rc, out, err = seat.run(f"id -gn; id -Gn; ls {HOMES}/{neighbour}")
        primary, groups = out.splitlines()[:2]
        assert primary == name, "seats share a primary group"
        assert "workshop-seats" in groups.split()
        assert rc != 0 and "Permission denied" in err, f"{name} lists {neighbour}'s home: {out}"
        rc, out, err = seat.run(f"cat {HOMES}/{neighbour}/.kube/config")
        assert rc != 0 and "apiVersion" not in out
        rc, out, err = seat.run("cat /etc/kubernetes/admin.conf")
        # On cp1 the file is root's; a login host that is no node has none.
        reason = "Permission denied" if host in ("cp1",) else "No such file"
        assert rc != 0 and reason in err and "client-key-data" not in out, err
    finally:
        seat.close()


# --- resource limits -------------------------------------------------------------

@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_fork_bomb_is_contained_and_the_api_answers(core, host):
    name = last_seat_on(host)
    seat = login(name, host=host)
    try:
        forks = SEAT_TASKS_MAX + 150
        result = {}

        def bomb():
            result["out"] = seat.run(f"python3 -c '{FORK_BOMB}' {forks} 6", timeout=90)

        thread = threading.Thread(target=bomb)
        thread.start()
        time.sleep(3)
        # The admin asks the API server while the seat holds every task it may have.
        nodes_seen = core.list_node(_request_timeout=10).items
        thread.join(timeout=120)
        rc, out, err = result["out"]
        assert len(nodes_seen) == 3
        match = re.search(r"started (\d+) refused (\d+)", out)
        assert match, out + err
        started, refused = int(match[1]), int(match[2])
        assert started < SEAT_TASKS_MAX and refused > 0, f"{started} of {forks} forks ran (TasksMax {SEAT_TASKS_MAX})"
    finally:
        seat.run(f"pkill -KILL -u {name} -f '^python3 -c' || true")
        seat.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_memory_hog_is_contained_and_the_api_answers(core, host):
    name = last_seat_on(host)
    seat = login(name, host=host)
    try:
        ceiling = SEAT_MEMORY_MIB + 512
        result = {}

        def hog():
            result["out"] = seat.run(f"python3 -c '{MEMORY_HOG}' {ceiling}", timeout=120)

        thread = threading.Thread(target=hog)
        thread.start()
        time.sleep(2)
        nodes_seen = core.list_node(_request_timeout=10).items
        thread.join(timeout=150)
        rc, out, err = result["out"]
        assert len(nodes_seen) == 3
        reached = [int(line) for line in out.split() if line.isdigit()]
        assert "done" not in out and rc != 0, f"the seat allocated {ceiling} MiB (MemoryMax {SEAT_MEMORY_MIB}M)"
        assert max(reached, default=0) <= SEAT_MEMORY_MIB, reached
    finally:
        seat.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_disk_fill_is_contained_by_the_seats_quota(host):
    """A seat writes more than its quota into its home and the shared temporary folders: none of them is on the
    disk the host and etcd use. The home and the folders on disk sit on the seats' btrfs file system, each limited;
    a folder that is a tmpfs (the lab's /tmp) holds memory, which the seat's MemoryMax limits."""
    node = cp1(host)
    folders = [HOMES, "/tmp", "/var/tmp"]
    root, *devices = node.check_output(f"stat -c %d / {' '.join(folders)}").split()
    assert root not in devices, f"seat folders on the root file system: {dict(zip(folders, devices))}"
    kinds = dict(zip(folders, node.check_output(f"stat -f -c %T {' '.join(folders)}").split()))
    assert kinds[HOMES] == "btrfs" and set(kinds.values()) <= {"btrfs", "tmpfs"}, kinds
    on_disk = [folder for folder in folders[1:] if kinds[folder] == "btrfs"]
    assert on_disk, f"no shared folder on the seats' file system: {kinds}"
    name = last_seat_on(host)
    seat = login(name, host=host)
    targets = ["~/fill"] + [f"{folder}/fill-{name}" for folder in on_disk]
    try:
        for target in targets:
            rc, out, err = seat.run(f"dd if=/dev/zero of={target} bs=1M count={SEAT_DISK_MIB + 64} 2>&1; sync; "
                                    f"du -m {target} | cut -f1; rm -f {target}", timeout=180)
            assert "Disk quota exceeded" in out, f"{target}: {out}{err}"
            assert int(out.split()[-1]) <= SEAT_DISK_MIB, f"{target}: {out}"
        # Below the quota the seat writes as usual.
        rc, out, err = seat.run("dd if=/dev/zero of=~/small bs=1M count=16 2>&1 && rm ~/small")
        assert rc == 0, out + err
    finally:
        seat.run(f"rm -f {' '.join(targets)} ~/small")
        seat.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_seat_cannot_leave_cron_or_at_jobs(host):
    """cron and atd would run a seat's job outside its slice: both refuse the seat."""
    name = last_seat_on(host)
    seat = login(name, host=host)
    try:
        rc, out, err = seat.run("echo '* * * * * true' | crontab -")
        assert rc != 0 and "not allowed" in out + err, f"crontab accepted a job: {out}{err}"
        rc, out, err = seat.run("echo true | at now + 1 hour")
        assert rc != 0 and "permission" in (out + err).lower(), f"at accepted a job: {out}{err}"
        assert not cp1(host).file(f"{CRONTABS}/{name}").exists
        assert not [line for line in cp1(host).check_output("atq").splitlines() if line.split()[-1] == name]
    finally:
        seat.close()


# --- links in homes: users.yml and reset.yml never follow them ----------------------

def test_links_in_homes_are_not_followed_by_users_yml(canary):
    linker, config_linker = login(LINKER), login(CONFIG_LINKER)
    try:
        plant_links(linker, config_linker)
    finally:
        linker.close()
        config_linker.close()
    # As Ubuntu makes homes (HOME_MODE 0750) with the old shared primary group.
    cp1(seat_host(CONFIG_LINKER)).check_output(
        f"chgrp workshop-seats {HOMES}/{CONFIG_LINKER} && chmod 0750 {HOMES}/{CONFIG_LINKER}")
    before = root_state()
    proc = run_logged("users.yml", "users-vvv")
    assert proc.returncode == 0, recap_tail(proc)
    assert_links_replaced_not_followed(before)
    assert home_entry(CONFIG_LINKER, ".") == f"directory {CONFIG_LINKER} {CONFIG_LINKER} 700"


def test_unknown_seat_is_refused_before_any_change():
    sheet = (ARTIFACTS / "credentials.csv").read_text()
    proc = run_playbook(REPO / "playbooks" / "reset.yml", "-e", json.dumps(
        {"lab_reset_rotate_credentials": True, "lab_reset_seats": [LEAVER, "nosuchseat"]}))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "nosuchseat" in out and "not a seat" in out, out[-3000:]
    assert (ARTIFACTS / "credentials.csv").read_text() == sheet
    recap = parse_recap(proc.stdout)
    assert all(counts["changed"] == 0 for counts in recap.values()), recap


@pytest.fixture(scope="module")
def handover(canary, tmp_path_factory):
    """LEAVER and BYSTANDER leave a group's worth of traces, then a per-seat reset hands LEAVER (and LINKER) over."""
    old = {seat: {"password": credentials()[seat]["password"], "kubeconfig": kubeconfig_of(seat)}
           for seat in (LINKER, LEAVER, BYSTANDER)}
    for seat in (LEAVER, BYSTANDER):
        host = cp1(seat_host(seat))
        session = login(seat)
        try:
            rc, _out, err = session.run(
                f"setsid nohup sleep {SLEEP_MARK} >/dev/null 2>&1 </dev/null & "
                f"touch /tmp/{seat}-leftover /dev/shm/{seat}-leftover && echo notes > ~/leftover")
            assert rc == 0, err
        finally:
            session.close()
        # Seats may not make cron or at jobs (test_seat_cannot_leave_cron_or_at_jobs); jobs of a host where
        # workshop_users_deny_jobs is false must still end with the handover: made here as root for the seat.
        host.check_output(f"for deny in /etc/cron.deny /etc/at.deny; do cp -p $deny $deny.test && "
                          f"sed -i '/^{seat}$/d' $deny; done; "
                          f"echo '* * * * * touch $HOME/cron-ran' | crontab -u {seat} - && "
                          f"echo true | runuser -u {seat} -- at now + 3 hours 2>/dev/null; rc=$?; "
                          "for deny in /etc/cron.deny /etc/at.deny; do mv $deny.test $deny; done; exit $rc")
    linker, config_linker = login(LINKER), login(CONFIG_LINKER)
    try:
        plant_links(linker, config_linker)
    finally:
        linker.close()
        config_linker.close()
    # A lingering user manager keeps running after logout (loginctl enable-linger).
    host = cp1(seat_host(LEAVER))
    host.check_output(f"loginctl enable-linger {LEAVER}")
    assert host.run(f"pgrep -u {LEAVER} -f 'sleep {SLEEP_MARK}'").rc == 0
    assert host.file(f"{CRONTABS}/{LEAVER}").exists
    assert [line for line in host.check_output("atq").splitlines() if line.split()[-1] == LEAVER]
    before = root_state()
    proc = run_logged("reset.yml", "reset-vvv", "-e", json.dumps(
        {"lab_reset_rotate_credentials": True, "lab_reset_seats": [LINKER, LEAVER]}))
    assert proc.returncode == 0, recap_tail(proc)
    old_kubeconfigs = tmp_path_factory.mktemp("old-kubeconfigs")
    for seat, values in old.items():
        (old_kubeconfigs / seat).write_text(values["kubeconfig"])
    return {"old": old, "before": before, "old_kubeconfigs": old_kubeconfigs}


def test_links_in_homes_are_not_followed_by_reset_yml(handover):
    assert_links_replaced_not_followed(handover["before"])


def test_handover_ends_processes_and_jobs(handover):
    host = cp1(seat_host(LEAVER))
    assert host.run(f"pgrep -a -u {LEAVER}").stdout == "", "a process of the old group still runs"
    assert not host.file(f"{CRONTABS}/{LEAVER}").exists, "the old group's crontab survived"
    assert not [line for line in host.check_output("atq").splitlines() if line.split()[-1] == LEAVER]
    assert host.run(f"ls /tmp/{LEAVER}-leftover /dev/shm/{LEAVER}-leftover").rc != 0
    assert not host.file(f"/var/lib/systemd/linger/{LEAVER}").exists


def test_handover_gives_a_fresh_home_and_new_credentials(handover):
    host = cp1(seat_host(LEAVER))
    assert not host.file(f"{HOMES}/{LEAVER}/leftover").exists
    assert home_entry(LEAVER, ".") == f"directory {LEAVER} {LEAVER} 700"
    assert host.check_output(f"cat {HOMES}/{LEAVER}/.kube/config") == kubeconfig_of(LEAVER).strip()
    old = handover["old"][LEAVER]
    with pytest.raises(paramiko.AuthenticationException):
        Session(topology.BY_NAME[seat_host(LEAVER)].access_ip, LEAVER, old["password"])
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    # A seat kubeconfig names the API server's internal address (it is used on the login hosts); from this machine the
    # same token goes through cp1's access address, as the admin kubeconfig does.
    old = yaml.safe_load((handover["old_kubeconfigs"] / LEAVER).read_text())
    old["clusters"][0]["cluster"]["server"] = yaml.safe_load(KUBECONFIG.read_text())["clusters"][0]["cluster"]["server"]
    stale = config.new_client_from_config_dict(old)
    with pytest.raises(ApiException) as refused:
        client.CoreV1Api(stale).list_namespaced_pod(LEAVER)
    # 401: unknown; 403: kube-apiserver still accepts it from its 10 s cache, for an account without rights.
    assert refused.value.status in (401, 403)
    seat = login(LEAVER)
    try:
        rc, out, err = seat.run(f"kubectl -n {LEAVER} get pods -o name && ls -A ~")
        assert rc == 0, err
        assert "leftover" not in out
    finally:
        seat.close()


def test_per_seat_handover_leaves_the_other_seats_alone(handover):
    host = cp1(seat_host(BYSTANDER))
    assert host.run(f"pgrep -u {BYSTANDER} -f 'sleep {SLEEP_MARK}'").rc == 0
    assert host.file(f"{CRONTABS}/{BYSTANDER}").exists
    assert host.file(f"{HOMES}/{BYSTANDER}/leftover").exists
    # Clean up what this module left.
    host.run(f"pkill -KILL -u {BYSTANDER} -f 'sleep {SLEEP_MARK}'; rm -f {CRONTABS}/{BYSTANDER}; "
             f"rm -f {HOMES}/{BYSTANDER}/leftover /tmp/{BYSTANDER}-leftover /dev/shm/{BYSTANDER}-leftover; "
             f"for job in $(atq | awk '$NF == \"{BYSTANDER}\" {{print $1}}'); do atrm $job; done")


def test_the_cards_hold_the_new_passwords_after_the_reset(handover):
    """reset.yml rewrites the seat cards itself (no board.yml needed): the rotated seat's new password, not its old."""
    cards = (ARTIFACTS / "seat-cards.html").read_text()
    assert (ARTIFACTS / "seat-cards.html").stat().st_mode & 0o777 == 0o600
    assert credentials()[LEAVER]["password"] in cards
    assert handover["old"][LEAVER]["password"] not in cards


def test_a_one_seat_reset_repairs_a_seat_that_deleted_its_kubeconfig(handover):
    """The runbook's repair of a broken seat: the one-seat reset without rotation puts ~/.kube/config back on the
    seat's login host, keeps its password and its files, and touches no other seat's home."""
    seat, other = BYSTANDER, CONFIG_LINKER
    password = credentials()[seat]["password"]
    session = login(seat)
    try:
        rc, _out, err = session.run("rm -rf ~/.kube && echo mine > ~/notes && ! kubectl get pods 2>/dev/null")
        assert rc == 0, err
    finally:
        session.close()
    neighbour = login(other)  # another seat's own edit of its kubeconfig stays
    try:
        rc, _out, err = neighbour.run("echo '# mine' >> ~/.kube/config")
        assert rc == 0, err
    finally:
        neighbour.close()
    proc = run_playbook(REPO / "playbooks" / "reset.yml", "-e", json.dumps(
        {"lab_reset_seats": [seat], "lab_reset_rotate_credentials": False}))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = " ".join(proc.stdout.split())
    assert "Claims outside the seat namespaces" not in out, out[-3000:]
    assert credentials()[seat]["password"] == password
    assert home_entry(seat, ".kube/config") == f"regular file {seat} {seat} 600"
    session = login(seat)  # the same password
    try:
        rc, out, err = session.run(f"cat ~/notes && kubectl -n {seat} get pods -o name")
        assert rc == 0 and "mine" in out, err
    finally:
        session.close()
    neighbour = login(other)
    try:
        rc, out, err = neighbour.run("tail -n 1 ~/.kube/config && sed -i '/^# mine$/d' ~/.kube/config")
        assert rc == 0 and out.strip() == "# mine", (out, err)
    finally:
        neighbour.close()


# --- the cluster's own secrets and the instructor's tools ----------------------------

def test_no_bootstrap_token_is_left(core):
    tokens = core.list_namespaced_secret("kube-system", field_selector="type=bootstrap.kubernetes.io/token").items
    assert [t.metadata.name for t in tokens] == []


def test_teardown_with_limit_still_asks():
    # stdin is not a terminal: the prompt reads nothing, which is not "yes".
    cmd = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY),
           str(REPO / "playbooks" / "teardown.yml"), "--limit", "worker1"]
    proc = subprocess.run(cmd, cwd=REPO, env=ansible_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "Teardown not confirmed" in out
    assert "Reset kubeadm on the node" not in out
    assert node_host("worker1").file("/etc/kubernetes/kubelet.conf").exists


def test_ansible_refuses_a_node_with_another_host_key(tmp_path):
    """A machine that answers at cp1's address with other keys (ARP spoofing on the shared network) is refused."""
    fake_cache = tmp_path / "cache"
    (fake_cache / "lab" / "ssh").mkdir(parents=True)
    shutil.copy(lab_paths.ssh_key(), fake_cache / "lab" / "ssh" / "id_ed25519")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    kind, blob = (tmp_path / "other.pub").read_text().split()[:2]
    ip = topology.BY_NAME[LOGIN_HOST].access_ip
    (fake_cache / "lab" / "ssh" / "known_hosts").write_text(f"{ip},{LOGIN_HOST} {kind} {blob}\n")
    env = ansible_env()
    env["DRALAB_CACHE"] = str(fake_cache)
    env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = str(tmp_path / "cp")
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible")), "-i", str(INVENTORY), LOGIN_HOST,
                           "-m", "ansible.builtin.ping"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    out = " ".join((proc.stdout + proc.stderr).split())
    # OpenSSH's words, or Mitogen's for the same refusal (strategy linear_fast).
    assert proc.returncode != 0 and ("Host key verification failed" in out
                                     or "SSH reported an unrecognized or mismatching host key" in out), out
    # The real keys, as nodes.py recorded them, are accepted.
    env["DRALAB_CACHE"] = str(cache_root())
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible")), "-i", str(INVENTORY), LOGIN_HOST,
                           "-m", "ansible.builtin.ping"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_verbose_logs_hold_no_secret(handover, secrets_before):
    """site.yml (molecule side_effect), users.yml and reset.yml at -vvv: no password, token or join token."""
    logs = {name: (VERBOSE_LOGS / f"{name}.log") for name in ("site-vvv", "users-vvv", "reset-vvv")}
    missing = [str(path) for path in logs.values() if not path.is_file()]
    assert not missing, f"no -vvv log at {missing}: site-vvv comes from molecule's side_effect (make test-lab)"
    now = credentials()
    values = set(secrets_before["passwords"].values()) | {row["password"] for row in now.values()}
    for text in list(secrets_before["kubeconfigs"].values()) + [kubeconfig_of(seat) for seat in now]:
        values |= {user["user"]["token"] for user in yaml.safe_load(text)["users"]}
    # The lease reaper's token (participant_tool) is a secret of the same kind.
    reaper = yaml.safe_load((ARTIFACTS / "dralab-lease-reaper.kubeconfig").read_text())
    values.add(reaper["users"][0]["user"]["token"])
    values.discard("")
    assert len(values) >= 2 * len(now) + 1, "found fewer secrets than seats to look for"
    for name, path in logs.items():
        text = path.read_text(errors="replace")
        assert "PLAY RECAP" in text, f"{path} is not a playbook log"
        leaked = [value[:4] + "..." for value in values if value in text]
        assert not leaked, f"{name}: {len(leaked)} seat secret(s) in the -vvv output: {leaked}"
        joins = sorted(set(BOOTSTRAP_TOKEN.findall(text)))
        assert not joins, f"{name}: bootstrap token(s) in the -vvv output: {[j[:7] + '...' for j in joins]}"
