"""--check on the converged lab: site.yml runs through and would change nothing."""

from __future__ import annotations

from conftest import CLUSTER_NODES, REPO, run_playbook
from playbook import parse_recap


def test_site_check_mode_changes_nothing():
    proc = run_playbook(REPO / "playbooks" / "site.yml", "--check")
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    recap = parse_recap(proc.stdout)
    assert set(CLUSTER_NODES) | {"localhost"} <= set(recap), tail
    busy = {host: counts for host, counts in recap.items()
            if counts["changed"] or counts["failed"] or counts["unreachable"]}
    assert not busy, busy
