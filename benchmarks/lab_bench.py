"""make bench's lab rows (issue 28): the instructor's real path on the podman lab that `make lab` left up, seats with
Linux accounts on the two login hosts (cp1 and login1), each figure against its baseline in the same run.

  seats  The shell floor first (one SSH command on login1: useradd + chpasswd + userdel of 72 accounts; and the
         handover's: lock, kill, clear the shared folders, a new home from /etc/skel and a new password for 72
         accounts), then users.yml 4 -> 72 seats cold, rerun, --check and the rerun through Mitogen; reset.yml with
         72 busy seats (a claim and a pod each) and the full handover, checked afterwards (every GPU free, every old
         password and token refused); a one-seat reset; users.yml 72 -> 300 seats and reset.yml of 300 seats, with
         the ratio against 72 (--lab-big-seats N: another size; 72 or less leaves them out). The lab keeps 300 seats
         afterwards (users.yml -e dralab_seats=4 does not shrink it:
         teardown.yml removes seats).
  site   site.yml cold (with --lab-cold: the nodes made anew, then mirror.yml and site.yml) and rerun, each with its
         split per stage (play), rerun --check, and the rerun through Mitogen (its baseline: the stock rerun).

Both run only with BENCH_LAB=1 (the lab belongs to whoever made it) and the lab's nodes up.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO))

from playbook import parse_recap  # noqa: E402  (tests/integration/playbook.py)
from podman_lab import paths as lab_paths  # noqa: E402  (tests/harness/podman_lab)
from podman_lab.podman import container_state  # noqa: E402
from podman_lab.topology import BY_NAME, NODES  # noqa: E402

ANSIBLE_BIN = Path(sys.executable).parent
INVENTORY = "inventories/local/hosts.yml"
MITOGEN_STRATEGY = "dralab.workshop.linear_fast"
FLOOR_SEATS = 72
FLOOR_PREFIX = "dlfloor"  # the floor's throwaway accounts, never a seat name
# Each busy seat's claim: a share of a card (the lab runs consumable_capacity), so 72 fit on 24. Without a compute
# request the claim would consume all of the card's compute, which leaves no room for a second claim.
SHARE = {"memory": "10Gi", "compute": "10"}


def lab_state() -> str:
    """'' when every lab node runs and BENCH_LAB=1 is set, else why the lab rows are skipped."""
    states = {node.name: container_state(node) for node in NODES}
    if any(state != "running" for state in states.values()):
        return "no lab up (" + ", ".join(f"{n} {s}" for n, s in states.items()) + ")"
    if os.environ.get("BENCH_LAB") != "1":
        return "lab up but BENCH_LAB=1 not set (it belongs to whoever made it)"
    return ""


def ssh(host: str, script: str, timeout: float = 1800) -> tuple[float, subprocess.CompletedProcess]:
    """script run by bash as root on a lab node over SSH, as Ansible reaches it; (seconds, the process)."""
    node = BY_NAME[host]
    argv = ["ssh", "-i", str(lab_paths.ssh_key()), "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={lab_paths.known_hosts()}", "-o", "LogLevel=ERROR", "-o", "BatchMode=yes",
            f"root@{node.access_ip}", "bash", "-euo", "pipefail", "-s"]
    started = time.monotonic()
    proc = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=timeout, check=False)
    return time.monotonic() - started, proc


def floor_names(count: int) -> str:
    return " ".join(f"{FLOOR_PREFIX}{i:03d}" for i in range(1, count + 1))


def users_floor(count: int = FLOOR_SEATS) -> float:
    """useradd + one chpasswd + userdel of count accounts in one SSH command on login1: the Linux work alone."""
    seconds, proc = ssh("login1", f"""
names="{floor_names(count)}"
for n in $names; do useradd -m -U -s /bin/bash "$n"; done
for n in $names; do echo "$n:floor-$n"; done | chpasswd
for n in $names; do userdel -r "$n" 2>/dev/null; done
""")
    if proc.returncode != 0:
        raise RuntimeError(f"the users floor failed: {proc.stderr[-2000:]}")
    return seconds


def handover_floor(count: int = FLOOR_SEATS) -> float:
    """The handover's Linux work for count accounts in one SSH command on login1 (each with a running process and a
    file in /tmp, made before the clock starts): lock, kill, the shared folders, a new home from /etc/skel and a
    new password."""
    names = floor_names(count)
    _setup, proc = ssh("login1", f"""
for n in {names}; do useradd -m -U -s /bin/bash "$n"; done
for n in {names}; do runuser -u "$n" -- setsid sleep 3600 </dev/null >/dev/null 2>&1 &
  runuser -u "$n" -- touch "/tmp/$n-leftover"; done
""")
    if proc.returncode != 0:
        raise RuntimeError(f"the handover floor's setup failed: {proc.stderr[-2000:]}")
    try:
        seconds, proc = ssh("login1", f"""
for n in {names}; do
  usermod -L "$n"; pkill -KILL -u "$n" || true
  find /tmp /var/tmp /dev/shm -xdev -user "$n" -delete
  rm -rf "/home/$n"; cp -a /etc/skel "/home/$n"; chown -R "$n:$n" "/home/$n"; chmod 0700 "/home/$n"
done
for n in {names}; do echo "$n:floor2-$n"; done | chpasswd
""")
        if proc.returncode != 0:
            raise RuntimeError(f"the handover floor failed: {proc.stderr[-2000:]}")
        return seconds
    finally:
        ssh("login1", f"for n in {names}; do pkill -KILL -u \"$n\" || true; userdel -r \"$n\" 2>/dev/null || true; done")


class LabRuns:
    """Timed ansible-playbook runs against the lab, with the task and play times of bench_tasks."""

    def __init__(self, work: Path, timed_env, run_class):
        self.work = work
        self.timed_env = timed_env
        self.run_class = run_class
        self.count = 0

    def play(self, playbook: str, *args: str, extra_vars: dict | None = None, strategy: str = "") -> dict:
        self.count += 1
        name = f"lab-{self.count:02d}-{Path(playbook).stem}{'-check' if '--check' in args else ''}"
        tasks = self.work / f"{name}-tasks.jsonl"
        env = self.timed_env(dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg")), tasks, strategy)
        cmd = [ANSIBLE_BIN / "ansible-playbook", "-i", INVENTORY, playbook, *args]
        if extra_vars:
            cmd += ["-e", json.dumps(extra_vars)]
        run = self.run_class(cmd, env, self.work / f"{name}.log")
        recap = parse_recap(run.output)
        lines = [json.loads(line) for line in tasks.read_text().splitlines()] if tasks.exists() else []
        result = {"seconds": run.seconds, "rc": run.rc, "changed": sum(h["changed"] for h in recap.values()),
                  "per_host": {h: c["changed"] for h, c in recap.items()}, "lines": lines,
                  "log": self.work / f"{name}.log"}
        print(f"[bench lab] {playbook} {' '.join(args)} {extra_vars or ''} {strategy}: rc {run.rc}, "
              f"{run.seconds:.1f}s, changed={result['changed']} ({result['log']})", file=sys.stderr, flush=True)
        if run.rc != 0:
            print("\n".join(run.output.splitlines()[-40:]), file=sys.stderr)
        return result


def stages(lines: list[dict], end: float | None = None) -> list[tuple[str, float]]:
    """(play, seconds) in order, from bench_tasks' play lines: each play lasts until the next one starts."""
    plays = [line for line in lines if "play" in line]
    last = end if end is not None else max((line.get("at", 0) for line in lines), default=0)
    ends = [line["at"] for line in plays[1:]] + [last]
    split = {}
    for play, until in zip(plays, ends):
        split[play["play"]] = split.get(play["play"], 0.0) + max(0.0, until - play["at"])
    return list(split.items())


def split_text(lines: list[dict]) -> str:
    done = [line for line in lines if line.get("stats")]
    parts = stages(lines, done[-1]["at"] if done else None)
    return "; ".join(f"{name} {seconds:.0f}s" for name, seconds in parts if seconds >= 0.5)


# --------------------------------------------------------------------------- the seats on the login hosts

def admin_api():
    from kubernetes import config

    return config.new_client_from_config(str(lab_paths.artifacts_dir() / "admin.conf"))


def seat_list(count: int) -> list[str]:
    return [f"user{i:02d}" for i in range(1, count + 1)]


def make_busy(api, seats: list[str]) -> int:
    """A claim (a share of a card) and a running pod using it in every seat namespace; waits until every pod runs.
    Returns the claims allocated."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core, res = client.CoreV1Api(api), client.ResourceV1Api(api)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bench-gpu"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "gpu-shared.example.com", "capacity": {"requests": SHARE}}}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench-job"}, "spec": {
        "terminationGracePeriodSeconds": 30, "resourceClaims": [{"name": "gpu", "resourceClaimName": "bench-gpu"}],
        "containers": [{"name": "ctr", "image": "busybox:1.37", "command": ["sleep", "86400"],
                        # Small: the seats' default requests (100m) would fill the lab's CPUs before its GPUs.
                        "resources": {"claims": [{"name": "gpu"}], "requests": {"cpu": "10m", "memory": "16Mi"},
                                      "limits": {"cpu": "50m", "memory": "32Mi"}}}]}}

    def one(seat):
        for call, body in ((res.create_namespaced_resource_claim, claim), (core.create_namespaced_pod, pod)):
            try:
                call(seat, body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(one, seats))
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        running = sum(1 for p in core.list_pod_for_all_namespaces(field_selector="metadata.name=bench-job").items
                      if p.metadata.namespace in seats and p.status.phase == "Running")
        if running == len(seats):
            break
        time.sleep(3)
    else:
        raise RuntimeError(f"only {running} of {len(seats)} busy pods run after 15 minutes")
    return allocated(api, seats)


def allocated(api, seats: list[str]) -> int:
    from kubernetes import client

    return sum(1 for c in client.ResourceV1Api(api).list_resource_claim_for_all_namespaces().items
               if c.metadata.namespace in seats and c.status and c.status.allocation)


def credential_sheet() -> dict[str, dict]:
    import csv

    with open(lab_paths.artifacts_dir() / "credentials.csv", newline="") as handle:
        return {row["seat"]: row for row in csv.DictReader(handle)}


def kubeconfigs(seats: list[str]) -> dict[str, str]:
    folder = lab_paths.artifacts_dir() / "seats"
    return {seat: (folder / f"{seat}.kubeconfig").read_text() for seat in seats}


def old_credentials_refused(old_sheet: dict, old_configs: dict, seats: list[str]) -> tuple[int, int]:
    """(passwords refused, tokens refused) of the seats' credentials before the reset: SSH with the old password on
    the seat's login host, the old token against the API server (through cp1's access address, as the admin
    kubeconfig reaches it)."""
    import paramiko
    import yaml
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException

    server = yaml.safe_load((lab_paths.artifacts_dir() / "admin.conf").read_text())["clusters"][0]["cluster"]["server"]

    def password_refused(seat):
        ssh_client = paramiko.SSHClient()
        ssh_client.load_host_keys(str(lab_paths.known_hosts()))
        ssh_client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            ssh_client.connect(BY_NAME[old_sheet[seat]["login_host"]].access_ip, username=seat,
                               password=old_sheet[seat]["password"], look_for_keys=False, allow_agent=False,
                               timeout=60, banner_timeout=60, auth_timeout=60)
        except paramiko.AuthenticationException:
            return True
        finally:
            ssh_client.close()
        return False

    def token_refused(seat):
        stale = yaml.safe_load(old_configs[seat])
        stale["clusters"][0]["cluster"]["server"] = server
        try:
            client.CoreV1Api(config.new_client_from_config_dict(stale)).list_namespaced_pod(seat)
        except ApiException as exc:
            return exc.status in (401, 403)
        return False
    time.sleep(11)  # kube-apiserver caches a successful authentication for 10 s
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        passwords = sum(pool.map(password_refused, seats))
        tokens = sum(pool.map(token_refused, seats))
    return passwords, tokens


def bench_seats(table, runs: LabRuns, verdict, big: int = 300) -> None:
    floor = users_floor()
    table.add(f"lab: shell floor, useradd + chpasswd + userdel x{FLOOR_SEATS} (login1)", f"{floor:.1f} s")
    cold = runs.play("playbooks/users.yml", extra_vars={"dralab_seats": 72})
    table.add("lab: users.yml 4 -> 72 seats", f"{cold['seconds']:.1f} s (rc {cold['rc']})", f"shell floor {floor:.1f} s",
              f"{cold['seconds'] / floor:.1f}x", "<= 20 s: " + verdict(cold["rc"] == 0 and cold["seconds"] <= 20))
    rerun = runs.play("playbooks/users.yml", extra_vars={"dralab_seats": 72})
    table.add("lab: users.yml rerun, 72 seats", f"{rerun['seconds']:.1f} s, changed={rerun['changed']}", "", "",
              "<= 10 s, changed=0: " + verdict(rerun["rc"] == 0 and rerun["changed"] == 0 and rerun["seconds"] <= 10))
    check = runs.play("playbooks/users.yml", "--check", extra_vars={"dralab_seats": 72})
    table.add("lab: users.yml --check, 72 seats", f"{check['seconds']:.1f} s, changed={check['changed']}", "", "",
              "<= 10 s, changed=0: " + verdict(check["rc"] == 0 and check["changed"] == 0 and check["seconds"] <= 10))
    fast = runs.play("playbooks/users.yml", extra_vars={"dralab_seats": 72}, strategy=MITOGEN_STRATEGY)
    table.add("lab: users.yml rerun with Mitogen, 72 seats", f"{fast['seconds']:.1f} s, changed={fast['changed']}",
              f"stock ansible.builtin.linear {rerun['seconds']:.1f} s", f"{rerun['seconds'] / fast['seconds']:.2f}x")

    api = admin_api()
    seats = seat_list(72)
    held = make_busy(api, seats)
    old_sheet, old_configs = credential_sheet(), kubeconfigs(seats)
    hand_floor = handover_floor()
    table.add(f"lab: shell floor, handover x{FLOOR_SEATS} (login1)", f"{hand_floor:.1f} s")
    busy = runs.play("playbooks/reset.yml", extra_vars={"dralab_seats": 72})
    left = allocated(api, seats)
    passwords, tokens = old_credentials_refused(old_sheet, old_configs, seats)
    table.add("lab: reset.yml, 72 busy seats, handover", f"{busy['seconds']:.1f} s (rc {busy['rc']}); {held} claims "
              f"held before, {left} after; old passwords refused {passwords}/72, old tokens {tokens}/72",
              f"shell floor {hand_floor:.1f} s", f"{busy['seconds'] / hand_floor:.1f}x",
              "<= 20 s, all free, all refused: " + verdict(busy["rc"] == 0 and left == 0 and passwords == 72
                                                           and tokens == 72 and busy["seconds"] <= 20))
    one = runs.play("playbooks/reset.yml", extra_vars={"dralab_seats": 72, "lab_reset_seats": ["user03"]})
    table.add("lab: reset.yml of one seat (user03)", f"{one['seconds']:.1f} s (rc {one['rc']})", "", "",
              "<= 5 s: " + verdict(one["rc"] == 0 and one["seconds"] <= 5))

    if big <= 72:
        table.add("lab: users.yml and reset.yml beyond 72 seats", f"skipped (--lab-big-seats {big})")
        return
    grown = runs.play("playbooks/users.yml", extra_vars={"dralab_seats": big})
    per72, per_big = cold["seconds"] / (72 - 4), grown["seconds"] / (big - 72)
    table.add(f"lab: users.yml 72 -> {big} seats", f"{grown['seconds']:.1f} s (rc {grown['rc']}), {per_big:.2f} s per "
              "new seat", f"4 -> 72: {per72:.2f} s per new seat", f"{per_big / per72:.2f}x per seat",
              "linear (<= 1.2x per seat): " + verdict(grown["rc"] == 0 and per_big <= 1.2 * per72))
    reset_big = runs.play("playbooks/reset.yml", extra_vars={"dralab_seats": big})
    ratio = (reset_big["seconds"] / big) / (busy["seconds"] / 72)
    table.add(f"lab: reset.yml, {big} idle seats, handover", f"{reset_big['seconds']:.1f} s (rc {reset_big['rc']})",
              f"72 busy seats {busy['seconds']:.1f} s", f"{ratio:.2f}x per seat",
              "linear (<= 1.2x per seat): " + verdict(reset_big["rc"] == 0 and ratio <= 1.2))


# --------------------------------------------------------------------------- site.yml

def bench_site(table, runs: LabRuns, verdict, cold: bool) -> None:
    if cold:
        env = dict(os.environ)
        started = time.monotonic()
        for argv in ([sys.executable, "tests/harness/nodes.py", "down"], [sys.executable, "tests/harness/nodes.py", "up"]):
            subprocess.run(argv, cwd=REPO, env=env, check=True, capture_output=True)
        nodes = time.monotonic() - started
        mirror = runs.play("playbooks/mirror.yml")
        site = runs.play("playbooks/site.yml")
        total = nodes + mirror["seconds"] + site["seconds"]
        table.add("lab: site.yml cold, 4 nodes (nodes made, mirror.yml, site.yml)",
                  f"{total:.0f} s (nodes {nodes:.0f} s, mirror.yml {mirror['seconds']:.0f} s, site.yml "
                  f"{site['seconds']:.0f} s, rc {site['rc']})", "", "",
                  "<= 8 min: " + verdict(site["rc"] == 0 and total <= 480))
        table.note("site.yml cold, per stage: " + split_text(site["lines"]))
    rerun = runs.play("playbooks/site.yml")
    table.add("lab: site.yml rerun", f"{rerun['seconds']:.1f} s (rc {rerun['rc']}), changed={rerun['changed']}", "", "",
              "<= 60 s, changed=0: " + verdict(rerun["rc"] == 0 and rerun["changed"] == 0 and rerun["seconds"] <= 60))
    table.note("site.yml rerun, per stage: " + split_text(rerun["lines"]))
    check = runs.play("playbooks/site.yml", "--check")
    table.add("lab: site.yml rerun --check", f"{check['seconds']:.1f} s (rc {check['rc']}), changed={check['changed']}",
              "", "", "changed=0: " + verdict(check["rc"] == 0 and check["changed"] == 0))
    fast = runs.play("playbooks/site.yml", strategy=MITOGEN_STRATEGY)
    table.add("lab: site.yml rerun with Mitogen", f"{fast['seconds']:.1f} s (rc {fast['rc']}), changed={fast['changed']}",
              f"stock ansible.builtin.linear {rerun['seconds']:.1f} s", f"{rerun['seconds'] / fast['seconds']:.2f}x")
