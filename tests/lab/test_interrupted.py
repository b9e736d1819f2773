"""Interrupted runs: the lab torn down (teardown.yml), then site.yml building it again stopped with SIGINT
(a closed laptop, a Ctrl-C) after a random task, three times at different points; the next run converges
and the one after it reports changed=0 on every host. Marker `faults` (make test-reliability); the seed is
printed (DRALAB_INTERRUPT_SEED repeats a run).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INVENTORY, REPO, ansible_env, run_playbook
from playbook import parse_recap

SITE = REPO / "playbooks" / "site.yml"
SEED = int(os.environ.get("DRALAB_INTERRUPT_SEED", time.time()))


def interrupted_run(after_tasks: int) -> tuple[str, int, str]:
    """Start site.yml, SIGINT it once its output has started `after_tasks` tasks; (the last task, rc, how).

    As at a terminal: Ctrl-C to the whole process group; a second Ctrl-C when it is still running 15 s later
    (Python drops a KeyboardInterrupt that lands in a weakref callback, and then Ansible goes on); a closed
    laptop (SIGKILL of the group) when it still runs 60 s after that."""
    cmd = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY), str(SITE)]
    proc = subprocess.Popen(cmd, cwd=REPO, env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    started, last = 0, ""
    for line in proc.stdout:
        if line.startswith("TASK ["):
            started += 1
            last = line.strip()
            if started == after_tasks:
                break
    assert started == after_tasks, f"site.yml ended after {started} tasks, before task {after_tasks}"
    how = "SIGINT"
    for signum, wait, name in ((signal.SIGINT, 15, "SIGINT"), (signal.SIGINT, 60, "a second SIGINT"),
                               (signal.SIGKILL, 60, "SIGKILL")):
        how = name
        os.killpg(proc.pid, signum)
        try:
            proc.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait(timeout=60)
    return last, proc.returncode, how


def full_run() -> dict:
    cmd = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY), str(SITE)]
    proc = subprocess.run(cmd, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return parse_recap(proc.stdout)


@pytest.mark.faults
def test_site_yml_interrupted_three_times_converges():
    rng = random.Random(SEED)
    proc = run_playbook(REPO / "playbooks" / "teardown.yml", "-e", "dralab_teardown_confirm=yes", timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # A build from scratch starts a few hundred tasks; three different points across them.
    points = sorted(rng.sample(range(10, 250), 3))
    print(f"\n[interrupted] seed {SEED}: SIGINT after task {points}", file=sys.stderr)
    for point in points:
        last, rc, how = interrupted_run(point)
        print(f"[interrupted] stopped at {last} by {how} (rc {rc})", file=sys.stderr)
        assert rc != 0
    full_run()
    recap = full_run()
    changed = {host: counts["changed"] for host, counts in recap.items() if counts["changed"]}
    assert not changed, f"the run after the interrupted ones changed: {changed}"
