"""The mirror role: registry configuration, files server unit, and the listen-address validation."""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from render import REPO, render_role_template

ADDRESS = "10.89.0.1"


def registry_config(**extra_vars) -> dict:
    text = render_role_template("mirror", "registry-config.yml.j2", {"mirror_listen_address": ADDRESS, **extra_vars})
    return yaml.safe_load(text)


def files_unit(**extra_vars) -> dict[str, list[str]]:
    """The files server unit as {key: [values]} (keys may repeat)."""
    text = render_role_template("mirror", "dralab-mirror-files.service.j2", {"mirror_listen_address": ADDRESS, **extra_vars})
    unit: dict[str, list[str]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "[")):
            continue
        key, _sep, value = line.partition("=")
        unit.setdefault(key, []).append(value)
    return unit


# Registry configuration (distribution 2.8)


def test_registry_listens_on_the_address_and_port():
    assert registry_config()["http"]["addr"] == f"{ADDRESS}:5000"
    assert registry_config(mirror_registry_port=5001)["http"]["addr"] == f"{ADDRESS}:5001"


def test_registry_wraps_ipv6_addresses():
    assert registry_config(mirror_listen_address="fd00::1")["http"]["addr"] == "[fd00::1]:5000"


@pytest.mark.parametrize(
    "lab_wide, addr",
    [("192.0.2.1:5000", "192.0.2.1:5000"), ("http://192.0.2.1:5000", "192.0.2.1:5000"), ("[fd00::1]:5000", "[fd00::1]:5000")],
)
def test_registry_address_defaults_to_the_lab_wide_registry_mirror(lab_wide, addr):
    text = render_role_template("mirror", "registry-config.yml.j2", {"dralab_registry_mirror": lab_wide})
    assert yaml.safe_load(text)["http"]["addr"] == addr


def test_registry_storage_root():
    assert registry_config()["storage"]["filesystem"]["rootdirectory"] == "/var/lib/docker-registry"
    config = registry_config(mirror_registry_root="/srv/dralab-mirror/registry")
    assert config["storage"]["filesystem"]["rootdirectory"] == "/srv/dralab-mirror/registry"


def test_registry_is_plain_http_without_auth_and_keeps_blobs():
    config = registry_config()
    assert "tls" not in config["http"]
    assert "auth" not in config
    assert config["storage"]["delete"]["enabled"] is False
    assert config["version"] == 0.1


@pytest.mark.parametrize(
    "extra_vars, readonly",
    [
        ({}, True),
        ({"__mirror_registry_writable": True}, False),
        ({"mirror_registry_readonly": False}, False),
        ({"mirror_registry_readonly": False, "__mirror_registry_writable": True}, False),
    ],
)
def test_registry_is_read_only_except_while_pushing(extra_vars, readonly):
    assert registry_config(**extra_vars)["storage"]["maintenance"]["readonly"]["enabled"] is readonly


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status(method: str, url: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.needs_tools
@pytest.mark.parametrize("writable", [False, True])
def test_registry_binary_accepts_the_config(tmp_path, writable):
    """Debian's docker-registry (provided by `make test-tools`, run by `make test-unit-tools`) serves the rendered config on loopback only."""
    binary = os.environ.get("DRALAB_DOCKER_REGISTRY") or shutil.which("docker-registry")
    assert binary, "docker-registry is missing: run `make test-tools` (or set DRALAB_DOCKER_REGISTRY)"
    port = _free_loopback_port()
    config = tmp_path / "config.yml"
    config.write_text(
        render_role_template(
            "mirror",
            "registry-config.yml.j2",
            {
                "mirror_listen_address": "127.0.0.1",
                "mirror_registry_port": port,
                "mirror_registry_root": str(tmp_path / "storage"),
                "__mirror_registry_writable": writable,
            },
        )
    )
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}/v2/"
        for _attempt in range(50):
            if proc.poll() is not None:
                pytest.fail(f"docker-registry exited: {proc.stderr.read()}")
            try:
                if _status("GET", base) == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("docker-registry did not answer on loopback")
        # Read-only: uploads are refused; writable (while the role pushes): accepted.
        assert _status("POST", base + "probe/blobs/uploads/") == (202 if writable else 405)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# Files server unit (python3 -m http.server)


def test_files_server_binds_the_address_and_port():
    exec_start = files_unit()["ExecStart"]
    assert exec_start == [f'/usr/bin/python3 -m http.server --bind {ADDRESS} --directory "/srv/dralab-mirror/files" 8080']


def test_files_server_custom_root_port_and_python():
    exec_start = files_unit(mirror_files_root="/var/cache/dralab/files", mirror_files_port=8081, mirror_files_python="/usr/bin/python3.11")[
        "ExecStart"
    ][0]
    assert exec_start == f'/usr/bin/python3.11 -m http.server --bind {ADDRESS} --directory "/var/cache/dralab/files" 8081'


def test_files_server_is_sandboxed_and_read_only():
    unit = files_unit()
    assert unit["DynamicUser"] == ["yes"]
    assert unit["ProtectSystem"] == ["strict"]
    assert unit["ReadOnlyPaths"] == ["/srv/dralab-mirror/files"]
    assert unit["NoNewPrivileges"] == ["yes"]
    assert unit["Restart"] == ["on-failure"]
    assert unit["CapabilityBoundingSet"] == [""]
    assert "AmbientCapabilities" not in unit


def test_files_server_on_a_privileged_port_gets_only_bind_capability():
    unit = files_unit(mirror_files_port=80)
    assert unit["AmbientCapabilities"] == ["CAP_NET_BIND_SERVICE"]
    assert unit["CapabilityBoundingSet"] == ["CAP_NET_BIND_SERVICE"]
    assert unit["ExecStart"][0].endswith(" 80")


def test_files_server_command_serves_the_tree_read_only(tmp_path):
    """Run the unit's ExecStart (with this Python) on loopback against a small upstream-like tree."""
    root = tmp_path / "files"
    kubeadm = root / "dl.k8s.io/release/v1.35.4/bin/linux/amd64/kubeadm.sha256"
    kubeadm.parent.mkdir(parents=True)
    kubeadm.write_text("0" * 64 + "\n")
    port = _free_loopback_port()
    exec_start = files_unit(mirror_listen_address="127.0.0.1", mirror_files_root=str(root), mirror_files_port=port)["ExecStart"][0]
    argv = shlex.split(exec_start)
    assert argv[0] == "/usr/bin/python3"
    proc = subprocess.Popen([sys.executable, *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/dl.k8s.io/release/v1.35.4/bin/linux/amd64/kubeadm.sha256"
        for _attempt in range(50):
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    assert response.read().decode() == "0" * 64 + "\n"
                break
            except urllib.error.URLError:
                time.sleep(0.1)
        else:
            pytest.fail("the files server did not answer on loopback")
        assert _status("PUT", url) == 501
        assert _status("POST", url) == 501
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_no_template_listens_on_all_interfaces():
    for template in ("registry-config.yml.j2", "dralab-mirror-files.service.j2", "registry-dropin.conf.j2"):
        text = render_role_template("mirror", template, {"mirror_listen_address": ADDRESS})
        assert "0.0.0.0" not in text
        assert "addr: :" not in text


def test_registry_dropin_waits_for_the_network_and_retries():
    text = render_role_template("mirror", "registry-dropin.conf.j2", {})
    assert "After=network-online.target" in text
    assert "Restart=on-failure" in text


# Validation: the role's `validate` entry point (its argument spec, then tasks/validate.yml), run by
# ansible-playbook against localhost; nothing else of the role runs.

VALIDATION_CASES = {
    "loopback": ({"mirror_listen_address": "127.0.0.1"}, True),
    "gateway": ({"mirror_listen_address": "10.89.0.1"}, True),
    "ipv6": ({"mirror_listen_address": "fd00::1"}, True),
    "from-lab-wide-setting": ({"dralab_registry_mirror": "192.0.2.1:5000"}, True),
    "from-lab-wide-ipv6": ({"dralab_registry_mirror": "[fd00::1]:5000"}, True),
    "from-lab-wide-url": ({"dralab_registry_mirror": "http://192.0.2.1:5000"}, True),
    "all-interfaces": ({"mirror_listen_address": "0.0.0.0"}, False),
    "all-interfaces-ipv6": ({"mirror_listen_address": "::"}, False),
    "empty": ({"mirror_listen_address": ""}, False),
    "unset": ({}, False),
    "wildcard": ({"mirror_listen_address": "*"}, False),
    "hostname": ({"mirror_listen_address": "mirror.lab"}, False),
    "bad-octet": ({"mirror_listen_address": "10.89.0.256"}, False),
    "same-ports": ({"mirror_listen_address": "127.0.0.1", "mirror_files_port": 5000}, False),
    "files-under-root": ({"mirror_listen_address": "127.0.0.1", "mirror_files_root": "/root/mirror"}, False),
    "image-without-tag": ({"mirror_listen_address": "127.0.0.1", "mirror_images": [{"name": "registry.k8s.io/pause"}]}, False),
}


def _ansible_playbook() -> str:
    beside = pathlib.Path(sys.executable).parent / "ansible-playbook"
    found = str(beside) if beside.exists() else shutil.which("ansible-playbook")
    assert found, "ansible-playbook is missing: run `make setup`"
    return found


@pytest.fixture(scope="module")
def validation(tmp_path_factory) -> dict[str, str]:
    """Run every case in one play; each case's block records 'ok' or the failure message."""
    work = tmp_path_factory.mktemp("mirror-validate")
    out = work / "results.json"
    tasks = []
    for case, (variables, _accepted) in VALIDATION_CASES.items():
        tasks.append(
            {
                "name": f"Case {case}",
                "block": [
                    {
                        "name": f"Validate {case}",
                        "ansible.builtin.include_role": {"name": "dralab.workshop.mirror", "tasks_from": "validate"},
                        "vars": variables,
                    },
                    {
                        "name": f"Record {case}",
                        "ansible.builtin.set_fact": {"results": "{{ results | default({}) | combine({%r: 'ok'}) }}" % case},
                    },
                ],
                "rescue": [
                    {
                        "name": f"Record the failure of {case}",
                        "ansible.builtin.set_fact": {
                            "results": "{{ results | default({}) | combine({%r: ansible_failed_result.msg | string}) }}" % case
                        },
                    }
                ],
            }
        )
    tasks.append(
        {
            "name": "Write the results",
            "ansible.builtin.copy": {"content": "{{ results | to_json }}", "dest": str(out), "mode": "0644"},
        }
    )
    play = [{"name": "Validate the mirror variables", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]
    (work / "validate.yml").write_text(json.dumps(play))
    (work / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(work / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(REPO / "collections"),
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
    }
    proc = subprocess.run(
        [_ansible_playbook(), "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", str(work / "validate.yml")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", sorted(VALIDATION_CASES))
def test_validation(validation, case):
    _variables, accepted = VALIDATION_CASES[case]
    result = validation[case]
    if accepted:
        assert result == "ok"
    else:
        assert result != "ok"


@pytest.mark.parametrize("case", ["all-interfaces", "all-interfaces-ipv6", "empty", "unset", "wildcard", "hostname"])
def test_rejected_address_names_the_variable(validation, case):
    assert "mirror_listen_address" in validation[case]
    assert "0.0.0.0" in validation[case]


def test_argument_spec_checks_the_image_entries(validation):
    assert "tag" in validation["image-without-tag"]
