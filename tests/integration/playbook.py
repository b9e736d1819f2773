"""Run the collection's playbooks with ansible-playbook against the integration control plane.

`Lab` writes an inventory into a temporary directory: localhost only (local
connection, this venv's Python), the lab-wide variables pointing at the test
cluster (dralab_kubeconfig, dralab_artifacts_dir in tmp, 72 seats, 8 devices
per node) and an EMPTY `login` group, so no Linux account is ever created on
this machine. `Lab.run("playbooks/users.yml")` runs the real playbook from
the repository and returns a `PlaybookRun` with the PLAY RECAP counts.

`Lab.health()` runs dralab.workshop.dra_health through a small playbook
(tests/integration/playbooks/dra_health_json.yml) that writes the module's
result as JSON, and returns it as a dict.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).with_name("ansible-playbook")
HEALTH_JSON_PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "dra_health_json.yml"

SEATS = 72
DEVICES_PER_NODE = 8

RECAP_LINE = re.compile(
    r"^(?P<host>\S+)\s*:\s*ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)\s+"
    r"failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)\s+ignored=(?P<ignored>\d+)",
    re.MULTILINE)


# The playbooks that work on a running cluster: each imports preflight.yml with preflight_check_api: true
# (tests/integration/test_api_check.py checks the list against the playbooks; tests/lab/test_faults.py stops the
# lab's API server and runs them).
API_PLAYBOOKS = ("health.yml", "users.yml", "reset.yml", "board.yml")


def parse_recap(output: str) -> dict[str, dict[str, int]]:
    """Per host, the counts of the PLAY RECAP (the last recap wins)."""
    recap_at = output.rfind("PLAY RECAP")
    if recap_at < 0:
        return {}
    return {m["host"]: {k: int(v) for k, v in m.groupdict().items() if k != "host"}
            for m in RECAP_LINE.finditer(output[recap_at:])}


@dataclass
class PlaybookRun:
    playbook: str
    args: list[str]
    rc: int
    stdout: str
    stderr: str
    seconds: float
    log: Path
    recap: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, key: str, host: str = "localhost") -> int:
        if host not in self.recap:
            raise AssertionError(f"no PLAY RECAP line for {host} in {self.log}:\n{self.tail()}")
        return self.recap[host][key]

    @property
    def changed(self) -> int:
        return self.count("changed")

    @property
    def failed(self) -> int:
        return self.count("failed")

    @property
    def output(self) -> str:
        return self.stdout + "\n" + self.stderr

    @property
    def flat(self) -> str:
        """The output with YAML line wrapping undone (newline + indentation -> one space), for substring checks."""
        return re.sub(r"\n[ \t]+", " ", self.output)

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def describe(self) -> str:
        return (f"ansible-playbook {self.playbook} {' '.join(self.args)} -> rc {self.rc} in {self.seconds:.1f}s "
                f"(full output: {self.log})\n{self.tail()}")

    def changed_tasks(self) -> list[str]:
        """The names of the tasks that reported `changed` (for idempotence messages)."""
        names, current = [], None
        for line in self.stdout.splitlines():
            if line.startswith("TASK ["):
                current = line[len("TASK ["):].rsplit("]", 1)[0]
            elif line.startswith("changed:") and current and current not in names:
                names.append(current)
        return names


class Lab:
    """ansible-playbook runs against the integration control plane, with a generated inventory."""

    def __init__(self, kubeconfig: Path, workdir: Path, seats: int = SEATS):
        self.kubeconfig = Path(kubeconfig)
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.artifacts = self.dir / "artifacts"
        self.inventory = self.dir / "hosts.yml"
        self.logs = self.dir / "logs"
        self.logs.mkdir(exist_ok=True)
        self.seats = seats
        self.runs: list[PlaybookRun] = []
        inventory = {"all": {
            "hosts": {"localhost": {
                "ansible_connection": "local",
                # As for Ansible's implicit localhost: the Python that runs ansible-playbook (this venv's, with
                # the kubernetes client). The preflight plays use that one too, so with Mitogen every play on the
                # controller shares one interpreter (a second path, even to the same Python, starts a second one).
                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            }},
            "vars": {
                "dralab_kubeconfig": str(self.kubeconfig),
                "dralab_artifacts_dir": str(self.artifacts),
                "dralab_seats": seats,
                "dralab_devices_per_node": DEVICES_PER_NODE,
                # The harness runs the driver's kubelet plugins as processes, not as pods of a DaemonSet.
                "lab_health_check_plugins": False,
            },
            # Seats get Linux accounts only on login hosts: none here.
            "children": {"login": {"hosts": {}}},
        }}
        self.inventory.write_text(json.dumps(inventory, indent=2) + "\n")  # JSON is YAML

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("K8S_AUTH_") or k == "KUBECONFIG" or k.startswith("ANSIBLE_"))}
        env.update(
            ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
            # Keep the fact cache and temporary files out of the repository.
            ANSIBLE_CACHE_PLUGIN_CONNECTION=str(self.dir / "facts"),
            ANSIBLE_LOCAL_TEMP=str(self.dir / "ansible-local"),
            ANSIBLE_REMOTE_TEMP=str(self.dir / "ansible-remote"),
            ANSIBLE_RETRY_FILES_ENABLED="false",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
            ANSIBLE_DEPRECATION_WARNINGS="false",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        return env

    def installed_env(self, collections_path: Path) -> dict[str, str]:
        """env() for a collection installed under collections_path, as an instructor runs it: no checkout's
        ansible.cfg (an empty one: stock settings, ansible.builtin.linear), no collections/ link."""
        env = self.env()
        empty_cfg = self.dir / "installed-ansible.cfg"
        empty_cfg.write_text("[defaults]\n")
        env.update(ANSIBLE_CONFIG=str(empty_cfg), ANSIBLE_COLLECTIONS_PATH=str(collections_path))
        return env

    def run(self, playbook: str | Path, *args: str, extra_vars: dict | None = None, check: bool = False,
            timeout: float = 600, installed: Path | None = None) -> PlaybookRun:
        """ansible-playbook PLAYBOOK (relative to the repository) with the lab inventory; with `installed` (a
        collections path holding dralab.workshop), PLAYBOOK is a name such as dralab.workshop.users, run from
        the lab's folder with installed_env()."""
        cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(self.inventory), str(playbook), *args]
        if extra_vars:
            vars_file = self.dir / f"extra-vars-{len(self.runs):03d}.json"
            vars_file.write_text(json.dumps(extra_vars, indent=2))
            cmd += ["-e", f"@{vars_file}"]
        if check:
            cmd.append("--check")
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=self.dir if installed else REPO,
                              env=self.installed_env(installed) if installed else self.env(),
                              capture_output=True, text=True, timeout=timeout, check=False)
        seconds = time.monotonic() - started
        stem = f"{len(self.runs):03d}-{Path(playbook).stem}{'-check' if check else ''}"
        log = self.logs / f"{stem}.log"
        log.write_text(f"$ {' '.join(cmd)}\n# rc {proc.returncode}, {seconds:.1f}s\n"
                       f"{proc.stdout}\n--- stderr ---\n{proc.stderr}")
        run = PlaybookRun(str(playbook), list(cmd[4:]), proc.returncode, proc.stdout, proc.stderr, seconds, log,
                          parse_recap(proc.stdout))
        self.runs.append(run)
        print(f"[lab] ansible-playbook {playbook}{' --check' if check else ''}: rc {run.rc}, "
              f"{seconds:.1f}s, recap {run.recap.get('localhost')}", file=sys.stderr)
        return run

    def converge(self, playbook: str | Path, *args: str, **kwargs) -> PlaybookRun:
        """run() that must succeed (no failed task, rc 0)."""
        run = self.run(playbook, *args, **kwargs)
        assert run.rc == 0 and run.failed == 0, run.describe()
        return run

    def health(self, stale_claim_age: str | int = "1h", **options) -> dict:
        """The result of dralab.workshop.dra_health (fail_on_unhealthy false) as a dict."""
        out = self.dir / f"health-{len(self.runs):03d}.json"
        module_options = {"stale_claim_age": stale_claim_age, "fail_on_unhealthy": False, **options}
        run = self.run(HEALTH_JSON_PLAYBOOK, extra_vars={
            "health_json_path": str(out), "health_options": module_options})
        assert run.rc == 0 and run.failed == 0, run.describe()
        return json.loads(out.read_text())

    def seat_kubeconfig(self, seat: str) -> Path:
        return self.artifacts / "seats" / f"{seat}.kubeconfig"


def seat_names(count: int = SEATS, prefix: str = "user", width: int = 2) -> list[str]:
    return [f"{prefix}{i:0{width}d}" for i in range(1, count + 1)]


def problems_of(report: dict, kind: str) -> list[dict]:
    return [p for p in report["problems"] if p["type"] == kind]


def converge_lab(lab: Lab, lab_vars: dict | None = None) -> Lab:
    """The converged lab: driver.yml (the DeviceClass menu) and users.yml (the seats), with lab_vars as extra vars."""
    lab.converge("playbooks/driver.yml", extra_vars=lab_vars)
    lab.converge("playbooks/users.yml", extra_vars=lab_vars)
    return lab


def feature_session(features: list[str], lab_vars: dict):
    """The fixtures a session folder's conftest.py overrides (tests/integration/conftest.py): its DRA features
    (the cluster's gates, API versions, driver values) and its lab, converged with lab_vars.

        dra_features, workshop = feature_session(FEATURES, LAB_VARS)
    """
    @pytest.fixture(scope="session", name="dra_features")
    def session_features() -> list[str]:
        return list(features)

    @pytest.fixture(scope="session", name="workshop")
    def session_workshop(lab):
        return converge_lab(lab, lab_vars)
    return session_features, session_workshop
