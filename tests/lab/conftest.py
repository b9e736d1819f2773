"""The lab tier's checks: the podman lab of tests/harness/nodes.py (tests/harness/podman_lab) after playbooks/site.yml.

molecule/default runs these as its verifier; with a lab already built
(make lab) they run alone: `pytest tests/lab`. Nodes are reached with
`podman exec` (testinfra's podman backend), the API with the admin kubeconfig
that control_plane fetched, and the seats over SSH with their passwords, as a
participant logs in.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "harness"))
sys.path.insert(0, str(REPO))  # dralab_build, which podman_lab imports
sys.path.insert(0, str(REPO / "tests" / "integration"))  # playbook.py: parse_recap
from podman_lab import paths as lab_paths  # noqa: E402  (tests/harness/podman_lab: cache paths)
from podman_lab import topology  # noqa: E402  (the nodes' names and addresses)

# testinfra's podman backend runs `podman`, which needs the lab's containers.conf.
os.environ.setdefault("CONTAINERS_CONF", str(lab_paths.containers_conf()))

INVENTORY = REPO / "inventories" / "local" / "hosts.yml"
# dralab_artifacts_dir of inventories/local/group_vars/all.yml.
ARTIFACTS = lab_paths.artifacts_dir()
KUBECONFIG = ARTIFACTS / "admin.conf"
CLUSTER_NODES = ["cp1", "worker1", "worker2"]
KUBERNETES_VERSION = "v1.35.4"
DEVICES_PER_NODE = 8
DRIVER = "gpu.example.com"
SEATS = 4
HEALTH_PLAYBOOK = REPO / "tests" / "integration" / "playbooks" / "dra_health_json.yml"
# Logs of playbooks run at -vvv, for the secrets audit (test_seat_host.py).
VERBOSE_LOGS = ARTIFACTS / "logs"
# The lab's login hosts (inventories/local): cp1 is also the control plane,
# login1 is a login host only. Each seat has its account on one of them (the
# credential sheet's login_host: user01 and user03 on cp1, user02 and user04 on
# login1); attacks run on both, each with a seat of that host.
LOGIN_HOSTS = ["cp1", "login1"]
LOGIN_HOST = LOGIN_HOSTS[0]
# workshop_users_home_base: the seats' own file system on each login host.
HOMES = "/home/seats"


def pytest_configure(config):
    config.addinivalue_line("markers", "faults: injects a fault into the lab (make test-reliability runs them; "
                                       "the molecule verifier leaves them out)")


def credentials() -> dict[str, dict]:
    """The instructor's credential sheet, per seat."""
    with open(ARTIFACTS / "credentials.csv", newline="") as fh:
        return {row["seat"]: row for row in csv.DictReader(fh)}


class Session:
    """An SSH login with a password, as a participant logs in.

    The node's host key must be the one nodes.py recorded (known_hosts), as
    Ansible checks it.
    """

    def __init__(self, host: str, user: str, password: str | None = None, pkey=None, patience: float = 15):
        import paramiko

        self.client = paramiko.SSHClient()
        self.client.load_host_keys(str(lab_paths.known_hosts()))
        self.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        # patience: seconds to wait for the connection, sshd's banner and the authentication each (paramiko's
        # defaults: 15 s for the banner, 30 s for the authentication; OpenSSH's client waits without limit).
        self.client.connect(host, username=user, password=password, pkey=pkey, look_for_keys=False,
                            allow_agent=False, timeout=patience, banner_timeout=max(patience, 15),
                            auth_timeout=max(patience, 30))

    def run(self, command: str, stdin: str | None = None, timeout: float = 120) -> tuple[int, str, str]:
        chan_in, chan_out, chan_err = self.client.exec_command(command, timeout=timeout)
        if stdin is not None:
            chan_in.write(stdin)
            chan_in.channel.shutdown_write()
        out, err = chan_out.read().decode(), chan_err.read().decode()
        return chan_out.channel.recv_exit_status(), out, err

    def close(self):
        self.client.close()


def seat_host(seat: str) -> str:
    """The seat's own login host (inventory name), as the credential sheet says."""
    return credentials()[seat]["login_host"]


def seats_on(host: str) -> list[str]:
    """The seats whose login host is host, in seat order."""
    return [seat for seat, row in credentials().items() if row["login_host"] == host]


def login(seat: str, password: str | None = None, host: str | None = None, patience: float = 15) -> Session:
    """Log in as a seat with its password (from the credential sheet by default) on its own login host (by default)."""
    if password is None:
        password = credentials()[seat]["password"]
    return Session(topology.BY_NAME[host or seat_host(seat)].access_ip, seat, password, patience=patience)


def node_host(name: str):
    import testinfra

    return testinfra.get_host(f"podman://{topology.BY_NAME[name].container}")


def unit_installed(host, unit: str) -> bool:
    """Whether the node knows the unit at all (testinfra's is_enabled fails on systemd 257, which answers a
    missing unit with exit code 4, "not-found")."""
    return host.run(f"systemctl list-unit-files --no-legend {unit}.service").stdout.strip() != ""


@pytest.fixture(scope="session")
def api():
    """A kubernetes ApiClient with the admin kubeconfig (fails when the lab is not built)."""
    if not KUBECONFIG.is_file():
        pytest.fail(f"no admin kubeconfig at {KUBECONFIG}: build the lab first (make lab)")
    from kubernetes import config

    return config.new_client_from_config(str(KUBECONFIG))


@pytest.fixture(scope="session")
def core(api):
    from kubernetes import client

    return client.CoreV1Api(api)


@pytest.fixture(scope="session")
def custom(api):
    from kubernetes import client

    return client.CustomObjectsApi(api)


def ansible_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "MOLECULE_"))}
    env.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_RETRY_FILES_ENABLED="false",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


def run_playbook(playbook: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    cmd = [str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(INVENTORY), str(playbook), *args]
    return subprocess.run(cmd, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="session")
def health(tmp_path_factory) -> dict:
    """dralab.workshop.dra_health's result for the lab (the integration tier's JSON playbook)."""
    out = tmp_path_factory.mktemp("health") / "health.json"
    proc = run_playbook(HEALTH_PLAYBOOK, "-e", json.dumps({"health_json_path": str(out),
                                                          "health_options": {"fail_on_unhealthy": False}}))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


def wait_for(what: str, check, timeout: float = 120, interval: float = 2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
