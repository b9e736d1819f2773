"""Shared resources of the lab's hosts, attacked as issue 27 did, each bounded per seat or per source
(docs/security.md, "Shared resources and their per-seat bounds"):

- sshd's pre-authentication slots: one lab node (worker2, another source address than this machine) opens
  300 idle connections to a login host's port 22, reopening every one sshd drops (at most 3000 tries);
  a seat's login from this machine and the instructor's Ansible (a new SSH connection) still get in;
- sshd's sessions and password guesses: a seat's fifth session on one connection is refused, and so is its
  right password as the fourth guess on one connection (worker2's ssh, its password from an askpass program);
- the board's streams: worker2 opens 1,100 `GET /events` streams; it gets its per-client share, the
  projector's page and a stream from this machine still answer, and the board's service, as systemd runs it on
  cp1, is held to its limits (open files, memory, tasks) and stays below them;
- every kubelet: a seat's pod runs with the runtime's default seccomp profile and gets at most podPidsLimit
  PIDs (a bounded fork loop of 1,500 sleeps);
- a seat cannot rewrite its account's comment or shell (chfn, chsh);
- the login host's disk: a btrfs subvolume a seat makes in its own home stays inside the home's quota;
- the login hosts' kernel settings: what the lab decided (its nodes share this machine's kernel).

Each attack is bounded (counts and time) and sends traffic to the lab's own nodes only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from podman_lab import topology

from conftest import HOMES, INVENTORY, LOGIN_HOSTS, REPO, ansible_env, credentials, login, node_host, seats_on

ATTACKER = "worker2"  # a lab node: its address is not this machine's, as a participant's laptop is not
SSH_CONNECTIONS = 300
SSH_PER_SOURCE = 40  # workshop_users_sshd_per_source_max_startups
BOARD_STREAMS = 1100
BOARD_PER_CLIENT = 20  # lab_board_streams_per_client
BOARD_LIMITS = {"LimitNOFILE": 2048, "MemoryMax": 512 * 2**20, "TasksMax": 64}  # lab_board_limit_nofile, ...
POD_PIDS_LIMIT = 1024  # control_plane_kubelet_pod_pids_limit
FORKS = 1500
SEAT_DISK_MIB = 256  # inventories/local: workshop_users_seat_disk_quota
SSH_SEAT_SESSIONS = 4  # workshop_users_sshd_seat_max_sessions
SSH_SEAT_GUESSES = 3  # workshop_users_sshd_seat_max_auth_tries

SSH_FLOOD = r"""
import socket, sys, time
target, want, budget, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
held, tries, dropped = [], 0, 0
deadline = time.monotonic() + budget
while len(held) < want and time.monotonic() < deadline and tries < want * 10:
    tries += 1
    try:
        conn = socket.create_connection((target, 22), timeout=5)
        conn.settimeout(3)
        banner = conn.recv(64)
    except OSError:
        banner, conn = b"", None
    if banner.startswith(b"SSH-"):
        held.append(conn)  # idle from here on: it never sends its own banner
    else:
        dropped += 1
        if conn is not None:
            conn.close()
print("held=%d tries=%d dropped=%d" % (len(held), tries, dropped), flush=True)
time.sleep(hold)
"""

BOARD_FLOOD = r"""
import json, socket, sys, time
host, port, want, budget, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
held, codes = [], {}
deadline = time.monotonic() + budget
for _ in range(want):
    if time.monotonic() > deadline:
        codes["not tried (time)"] = codes.get("not tried (time)", 0) + 1
        continue
    code, conn = "closed", None
    try:
        conn = socket.create_connection((host, port), timeout=5)
        conn.settimeout(5)
        conn.sendall(b"GET /events HTTP/1.1\r\nHost: board\r\n\r\n")
        line = b""
        while not line.endswith(b"\r\n"):
            chunk = conn.recv(1)
            if not chunk:
                break
            line += chunk
        if len(line.split()) > 1:
            code = line.split()[1].decode()
    except OSError as exc:
        code = type(exc).__name__
    codes[code] = codes.get(code, 0) + 1
    if code == "200":
        held.append(conn)
    elif conn is not None:
        conn.close()
print(json.dumps({"held": len(held), "codes": codes}), flush=True)
time.sleep(hold)
"""


def on_node(node: str, script: str, *args) -> subprocess.Popen:
    """Run a Python script on a lab node (podman exec), in the background; its first line says it is in place."""
    return subprocess.Popen(["podman", "exec", "-i", topology.BY_NAME[node].container, "python3", "-", *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def started(proc: subprocess.Popen, script: str) -> str:
    proc.stdin.write(script)
    proc.stdin.close()
    line = proc.stdout.readline().strip()
    assert line, f"the attack did not start: {proc.stderr.read()[-2000:]}"
    return line


def finish(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def ansible_ping(host: str) -> subprocess.CompletedProcess:
    """The instructor's Ansible on a new SSH connection (no reuse of a master connection)."""
    env = dict(ansible_env(), ANSIBLE_SSH_ARGS="-o ControlMaster=no -o ControlPath=none -o ServerAliveInterval=15")
    return subprocess.run([str(Path(sys.executable).with_name("ansible")), "-i", str(INVENTORY), host, "-m", "ping"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_idle_ssh_connections_from_one_source_leave_the_room_and_the_instructor_their_slots():
    host = "login1"
    seat = seats_on(host)[0]
    attack = on_node(ATTACKER, SSH_FLOOD, topology.BY_NAME[host].ip, SSH_CONNECTIONS, 60, 60)
    try:
        figures = started(attack, SSH_FLOOD)
        print(f"\n[sshd] {ATTACKER} -> {host}:22: {figures}", file=sys.stderr)
        held = int(figures.split()[0].split("=")[1])
        began = time.monotonic()
        session = login(seat, host=host, patience=15)
        try:
            rc, out, err = session.run("whoami")
        finally:
            session.close()
        seconds = time.monotonic() - began
        ping = ansible_ping(host)
        print(f"[sshd] during the attack: {seat}'s login {seconds:.1f}s; Ansible ping rc {ping.returncode}",
              file=sys.stderr)
        assert rc == 0 and out.strip() == seat, err
        assert ping.returncode == 0 and "pong" in ping.stdout, ping.stdout[-2000:] + ping.stderr[-2000:]
        assert held <= SSH_PER_SOURCE, f"one source holds {held} unauthenticated connections"
    finally:
        finish(attack)


# ssh on the attacker's node, given guess after guess by an askpass program (no terminal): wrong ones first, the
# seat's right password last, all on one connection (NumberOfPasswordPrompts). The password is in the script
# (standard input), not on a command line.
SSH_GUESSES = r"""
import json, os, subprocess, sys, tempfile
target, seat, guesses = sys.argv[1], sys.argv[2], GUESSES
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "guesses"), "w") as out:
    out.write("\n".join(guesses) + "\n")
askpass = os.path.join(folder, "askpass")
with open(askpass, "w") as out:
    out.write('#!/bin/sh\nd=$(dirname "$0"); echo x >> "$d/asked"; sed -n "$(wc -l < "$d/asked")p" "$d/guesses"\n')
os.chmod(askpass, 0o700)
env = dict(os.environ, SSH_ASKPASS=askpass, SSH_ASKPASS_REQUIRE="force", DISPLAY="none")
proc = subprocess.run(["ssh", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
                       "-o", "PreferredAuthentications=password", "-o", "PubkeyAuthentication=no",
                       "-o", "NumberOfPasswordPrompts=%d" % len(guesses), "-o", "ConnectTimeout=15",
                       "%s@%s" % (seat, target), "whoami"],
                      env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
try:
    asked = len(open(os.path.join(folder, "asked")).read().split())
except OSError:
    asked = 0
print(json.dumps({"rc": proc.returncode, "asked": asked, "out": proc.stdout.strip(), "err": proc.stderr.strip()[-600:]}))
"""


def test_a_seat_gets_three_password_guesses_and_four_sessions_per_connection():
    import paramiko

    host = "login1"
    seat = seats_on(host)[0]
    password = credentials()[seat]["password"]
    guesses = [f"not-{seat}-{n}" for n in range(SSH_SEAT_GUESSES)] + [password]
    script = SSH_GUESSES.replace("GUESSES", repr(guesses))
    attack = on_node(ATTACKER, script, topology.BY_NAME[host].ip, seat)
    try:
        result = json.loads(started(attack, script))
    finally:
        finish(attack)
    print(f"\n[sshd] {ATTACKER}: {len(guesses)} guesses for {seat} on one connection: rc {result['rc']}, "
          f"asked {result['asked']}, {result['err'][-200:]!r}", file=sys.stderr)
    assert result["out"] != seat, f"the right password got in as guess {len(guesses)}: {result}"
    assert result["asked"] == SSH_SEAT_GUESSES and result["rc"] == 255, result
    assert "Too many authentication failures" in result["err"], result

    session = login(seat, password, host=host)
    try:
        channels, refused = [], None
        try:
            for _session in range(SSH_SEAT_SESSIONS + 1):
                channels.append(session.client.get_transport().open_session(timeout=15))
        except paramiko.ChannelException as exc:
            refused = exc
        print(f"[sshd] {seat}: {len(channels)} sessions on one connection, then {refused!r}", file=sys.stderr)
        assert len(channels) == SSH_SEAT_SESSIONS and refused is not None
        channels[0].exec_command("whoami")
        assert channels[0].makefile().read().decode().strip() == seat
    finally:
        session.close()


def board_url() -> str:
    from conftest import ARTIFACTS

    return json.loads((ARTIFACTS / "board" / "board.json").read_text())["url"]


def board_service_usage() -> dict[str, int]:
    """The board service's limits as systemd applies them on cp1 (the process's own open-file limit, the cgroup's
    memory and task limits) and what it uses of them now."""
    cp1 = node_host("cp1")
    shown = cp1.run("systemctl show -p MainPID -p MemoryMax -p TasksMax -p MemoryCurrent -p TasksCurrent dralab-board")
    values = dict(line.split("=", 1) for line in shown.stdout.split())
    pid = values.pop("MainPID")
    limits = cp1.run(f"cat /proc/{pid}/limits").stdout
    nofile = next(line.split()[3] for line in limits.splitlines() if line.startswith("Max open files"))
    usage = {name: int(value) if value.isdigit() else value for name, value in values.items()}
    usage["LimitNOFILE"] = int(nofile) if nofile.isdigit() else nofile
    usage["open files"] = int(cp1.run(f"ls /proc/{pid}/fd | wc -l").stdout)
    return usage


def test_a_thousand_board_streams_from_one_client_leave_the_projector_answering():
    cp1 = topology.BY_NAME["cp1"]
    attack = on_node(ATTACKER, BOARD_FLOOD, cp1.ip, 8088, BOARD_STREAMS, 90, 45)
    try:
        figures = json.loads(started(attack, BOARD_FLOOD))
        print(f"\n[board] {ATTACKER}: {figures}", file=sys.stderr)
        url = board_url()
        began = time.monotonic()
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.status, response.read()
        with urllib.request.urlopen(url + "events", timeout=10) as stream:
            first = stream.status, stream.readline()
        seconds = time.monotonic() - began
        with urllib.request.urlopen(url + "healthz", timeout=10) as response:
            health = json.loads(response.read())
        print(f"[board] projector's page and a stream from this machine in {seconds:.2f}s; healthz clients "
              f"{health['clients']}, refused {health.get('streams_refused')}", file=sys.stderr)
        usage = board_service_usage()
        print(f"[board] its service during the attack: {usage}", file=sys.stderr)
        assert page[0] == 200 and b"<html" in page[1].lower()
        assert first == (200, b"retry: 2000\n")
        assert {name: usage[name] for name in BOARD_LIMITS} == BOARD_LIMITS, usage
        assert usage["open files"] < BOARD_LIMITS["LimitNOFILE"] and usage["TasksCurrent"] < BOARD_LIMITS["TasksMax"]
        assert 0 < usage["MemoryCurrent"] < BOARD_LIMITS["MemoryMax"], usage
        assert seconds < 10
        assert figures["held"] <= BOARD_PER_CLIENT, figures
        assert figures["codes"].get("429", 0) >= BOARD_STREAMS - BOARD_PER_CLIENT, figures
    finally:
        finish(attack)


FORK_POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: pids-{n}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.37
    resources:
      requests: {{cpu: 100m, memory: 256Mi}}
      limits: {{cpu: 500m, memory: 1Gi}}
    command:
    - sh
    - -c
    - >-
      grep Seccomp: /proc/self/status; i=0;
      while [ $i -lt {n} ]; do sleep 300 & i=$((i+1)); [ $((i % 50)) = 0 ] && echo started=$i; done 2>/dev/null;
      sleep 3; echo procs=$(ls -d /proc/[0-9]* | wc -l); sleep 600
"""


def test_a_seats_pod_runs_with_the_default_seccomp_profile_and_bounded_pids():
    seat = seats_on("login1")[0]
    session = login(seat, host="login1")
    name = f"pids-{FORKS}"
    try:
        rc, out, err = session.run("kubectl apply -f -", stdin=FORK_POD.format(n=FORKS))
        assert rc == 0, out + err
        deadline = time.monotonic() + 180
        logs = ""
        phase = ""
        # busybox sh ends when a fork fails (the pod fails); without a limit it counts the processes it holds.
        while time.monotonic() < deadline and "procs=" not in logs and phase != "Failed":
            time.sleep(3)
            logs = session.run(f"kubectl logs {name} 2>/dev/null")[1]
            phase = session.run(f"kubectl get pod {name} -o jsonpath='{{.status.phase}}'")[1].strip()
        started = [int(line.split("=")[1]) for line in logs.split() if line.startswith("started=")]
        print(f"\n[pids] {seat}'s pod ({phase}): Seccomp {logs.split('Seccomp:')[1].split()[0] if 'Seccomp:' in logs else '?'}, "
              f"forks started {max(started, default=0)}, {logs.split()[-1]!r}", file=sys.stderr)
        assert "Seccomp:" in logs, session.run(f"kubectl describe pod {name}")[1][-3000:]
        seccomp = logs.split("Seccomp:")[1].split()[0]
        assert seccomp == "2", f"the pod's container runs without a seccomp filter (Seccomp: {seccomp})"
        assert max(started, default=0) < POD_PIDS_LIMIT, f"{max(started)} processes started in one pod"
        if "procs=" in logs:
            procs = int(logs.split("procs=")[1].split()[0])
            assert procs <= POD_PIDS_LIMIT, f"{procs} processes in one pod"
        else:
            assert phase == "Failed", (phase, logs[-500:])
    finally:
        session.run(f"kubectl delete pod {name} --ignore-not-found --wait=false")
        session.close()


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_a_seat_cannot_rewrite_its_accounts_comment_or_shell(host):
    seat = seats_on(host)[-1]
    password = credentials()[seat]["password"]
    node = node_host(host)
    before = node.check_output(f"getent passwd {seat}")
    session = login(seat, host=host)
    try:
        for command in ("chfn -r 101", "chfn -f 'the instructor'", "chsh -s /bin/sh"):
            rc, out, err = session.run(command, stdin=password + "\n")
            print(f"\n[chfn] {host} {seat}: {command}: rc {rc} {(out + err).strip()!r}", file=sys.stderr)
            assert rc != 0, f"{command} worked: {out}{err}"
    finally:
        session.close()
    assert node.check_output(f"getent passwd {seat}") == before


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_a_subvolume_in_the_home_stays_inside_the_homes_quota(host):
    """Any user may make a btrfs subvolume (or a snapshot of its home) in a folder it owns; its quota group is
    not the home's, so what the seat wrote there escaped the home's quota (measured: 120 MiB into a subvolume of
    a home limited to 50 MiB). The seat tries it in its shell, through its user manager, and writes twice its
    quota into what it got."""
    seat = seats_on(host)[0]
    node = node_host(host)
    session = login(seat, host=host)
    try:
        out = session.run("btrfs subvolume create ~/escape 2>&1; btrfs subvolume snapshot ~ ~/snap 2>&1; "
                          "systemd-run --user --wait btrfs subvolume create ~/escape2 2>&1; true")[1]
        print(f"\n[disk] {host} {seat}: {out.strip()!r}", file=sys.stderr)
        made = [path for path in ("escape", "snap", "escape2")
                if node.run(f"btrfs subvolume show {HOMES}/{seat}/{path}").rc == 0]
        out = session.run("mkdir -p ~/escape; "
                          f"dd if=/dev/zero of=~/escape/fill bs=1M count={SEAT_DISK_MIB * 2} 2>&1; sync; "
                          "du -m ~/escape/fill | cut -f1", timeout=180)[1]
        print(f"[disk] {host} {seat}: subvolumes made {made}; {out.strip()!r}", file=sys.stderr)
        written = int(out.split()[-1])
        assert written <= SEAT_DISK_MIB, f"{written} MiB written past a {SEAT_DISK_MIB} MiB quota: {out}"
        assert made == [], f"the seat made subvolumes {made}"
    finally:
        session.run("rm -rf ~/escape/fill")
        session.close()
        for path in ("escape", "snap", "escape2"):
            node.run(f"btrfs subvolume delete {HOMES}/{seat}/{path} >/dev/null 2>&1 || rm -rf {HOMES}/{seat}/{path}")


@pytest.mark.parametrize("host", LOGIN_HOSTS)
def test_a_seat_gets_no_user_namespace_and_the_lab_leaves_the_shared_kernel_alone(host):
    """A seat cannot make a user namespace (where it would be "root" over netfilter, mounts and more): its login
    shell's filter refuses it on any kernel. The login hosts' kernel settings (ptrace scope, user namespaces) are not
    set in the lab: its nodes share this machine's kernel (inventories/local: workshop_users_kernel_settings {});
    what the kernel has is printed."""
    lab = yaml.safe_load((REPO / "inventories" / "local" / "group_vars" / "all.yml").read_text())
    assert lab["workshop_users_kernel_settings"] == {}
    defaults = yaml.safe_load((REPO / "roles" / "workshop_users" / "defaults" / "main.yml").read_text())
    node = node_host(host)
    assert not node.file(defaults["workshop_users_kernel_settings_file"]).exists
    present = {key: node.run(f"cat /proc/sys/{key.replace('.', '/')}").stdout.strip() or "absent"
               for key in defaults["workshop_users_kernel_settings"]}
    seat = seats_on(host)[0]
    session = login(seat, host=host)
    try:
        rc, out, err = session.run("unshare -U -r id -u")
        python_rc, python_out, python_err = session.run(
            "python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
            "print(\"inside\" if libc.unshare(0x10000000) == 0 else os.strerror(ctypes.get_errno()))'")
        kubectl_rc = session.run("kubectl version --client -o json >/dev/null")[0]
    finally:
        session.close()
    print(f"\n[kernel] {host}: {present}; a seat's `unshare -U -r id -u`: rc {rc} {(out + err).strip()!r}; "
          f"os.unshare(CLONE_NEWUSER): rc {python_rc} {(python_out + python_err).strip()[-80:]!r}", file=sys.stderr)
    assert rc != 0 and "0" != out.strip(), "a seat became root in a user namespace of its own"
    assert (python_rc, python_out.strip()) == (0, "Operation not permitted"), "unshare(CLONE_NEWUSER) is refused"
    assert kubectl_rc == 0, "a Go program (kubectl) runs under the filter"
    assert os.uname().release == node.check_output("uname -r"), "the lab's nodes run this machine's kernel"
