"""Smoke check of the offline mirror that dralab_build/mirror builds (`make mirror`).

Serves the mirror's files tree on 127.0.0.1 with `python3 -m http.server` (what
the mirror role runs) and computes every download URL the roles would use with
dralab_download_mirror pointing at it, from the roles' own defaults and vars
rendered by Ansible (the dralab.workshop.mirror_url convention): each URL and
its checksum URL resolve, the checksum file answers the way get_url reads it,
and archives hold the files the roles install. Then loads every image archive
into Debian's docker-registry on 127.0.0.1 (configured by the mirror role's
template) with skopeo under the flat layout, inspects each, and pushes and
reads back the chart with the mirror's own helm.

Not part of `make test`: run `make mirror` first, then
    pytest -q tests/lab/test_mirror.py
The role variables the mirror was built for (its inventory overrides, e.g.
containerd_crictl_version) are read from mirror.json.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit"))
from render import render_role_template, role_defaults, trusted, use_this_checkout  # noqa: E402  (tests/unit/render.py)

# The dralab.workshop.* filters the roles' variables use (mirror_url) resolve to this checkout, as in tests/unit.
use_this_checkout()

CACHE = Path(os.environ.get("DRALAB_CACHE") or Path.home() / ".cache" / "dralab")
MIRROR = CACHE / "mirror"
FACTS = {"ansible_facts": {"architecture": "x86_64", "os_family": "Debian", "distribution": "Debian"}}


# --- fixtures --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def manifest() -> dict:
    path = MIRROR / "mirror.json"
    if not path.is_file():
        pytest.fail(f"no complete mirror at {MIRROR}: run `make mirror` (python -m dralab_build.mirror)")
    return json.loads(path.read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen, what: str, log: Path) -> None:
    for _attempt in range(100):
        if proc.poll() is not None:
            pytest.fail(f"{what} exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url, timeout=1).close()
            return
        time.sleep(0.1)
    pytest.fail(f"{what} did not answer at {url}")


@contextlib.contextmanager
def running(argv: list[str], url: str, what: str, log: Path):
    """A server for the duration of the block; its output goes to `log` (a pipe nobody reads would block it)."""
    with open(log, "w") as logf:
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(url, proc, what, log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def files_url(manifest, tmp_path_factory):
    """The files tree served read-only on loopback, as the mirror role's unit does."""
    port = free_port()
    argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(MIRROR / "files"),
            str(port)]
    log = tmp_path_factory.mktemp("files") / "http.server.log"
    with running(argv, f"http://127.0.0.1:{port}/", "http.server", log):
        yield f"http://127.0.0.1:{port}"


def evaluate(role: str, expression: str, inventory: dict):
    """One expression as a task of `role` sees it: role defaults, vars/main.yml, inventory, facts."""
    variables = dict(role_defaults(role))
    vars_file = REPO / "roles" / role / "vars" / "main.yml"
    if vars_file.is_file():
        variables.update(trusted(DataLoader().load_from_file(str(vars_file)) or {}))
    variables.update(FACTS)
    variables.update(inventory)
    loader = DataLoader()
    loader.set_basedir(str(REPO / "roles" / role))
    return Templar(loader=loader, variables=variables).template(trust_as_template("{{ %s }}" % expression))


@pytest.fixture(scope="module")
def inventory(manifest, files_url) -> dict:
    return {**manifest.get("overrides", {}), "dralab_download_mirror": files_url}


# --- downloads ------------------------------------------------------------------------

def fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        pytest.fail(f"{url}: HTTP {exc.code}")


def head(url: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def checksum_from_file(text: str, filename: str) -> str | None:
    """The hash for filename in a checksum file, as ansible.builtin.get_url reads one."""
    lines = [line.rstrip("\n") for line in text.splitlines()]
    if len(lines) == 1 and len(lines[0].split()) == 1:
        return lines[0]
    for line in lines:
        parts = line.split(" ", 1)
        if len(parts) == 2:
            name = parts[1][1:] if parts[1].startswith((" ", "*")) else parts[1]
            if name.lstrip("./") == filename:
                return parts[0]
    return None


def role_downloads(inventory: dict) -> list[tuple[str, str, str, str]]:
    """(what, url, checksum 'sha256:<url>' or '', file a role expects inside an archive or '')."""
    downloads = []
    for artifact in evaluate("containerd", "__containerd_artifacts", inventory):
        inside = {"containerd": "bin/containerd", "cni-plugins": "bridge", "crictl": "crictl"}.get(artifact["name"], "")
        downloads.append((artifact["name"], artifact["url"], artifact["checksum"], inside))
    for binary in evaluate("kubernetes", "__kubernetes_downloads", inventory):
        downloads.append((binary["name"], binary["url"], binary["checksum"], ""))
    downloads.append(("helm", evaluate("dra_driver", "dra_driver_helm_url | trim", inventory),
                      evaluate("dra_driver", "dra_driver_helm_checksum | trim", inventory), "linux-amd64/helm"))
    downloads.append(("kube-flannel.yml", evaluate("cni", "cni_flannel_manifest_url | trim", inventory), "", ""))
    return downloads


def test_every_role_download_resolves_with_its_checksum(inventory, files_url, tmp_path):
    downloads = role_downloads(inventory)
    assert len(downloads) >= 8
    problems = []
    for what, url, checksum, inside in downloads:
        assert url.startswith(files_url + "/"), f"{what}: {url} does not use the mirror"
        if head(url) != 200:
            problems.append(f"{what}: HEAD {url} -> {head(url)}")
            continue
        data = fetch(url)
        if checksum:
            assert checksum.startswith("sha256:http"), checksum
            checksum_url = checksum[len("sha256:"):]
            if head(checksum_url) != 200:
                problems.append(f"{what}: HEAD {checksum_url} -> {head(checksum_url)}")
                continue
            wanted = checksum_from_file(fetch(checksum_url).decode(), url.rsplit("/", 1)[-1])
            actual = hashlib.sha256(data).hexdigest()
            if wanted != actual:
                problems.append(f"{what}: {checksum_url} gives {wanted}, the file has {actual}")
        if inside:
            path = tmp_path / url.rsplit("/", 1)[-1]
            path.write_bytes(data)
            with tarfile.open(path) as tar:
                names = [n.lstrip("./") if n.startswith("./") else n for n in tar.getnames()]
            if inside not in names:
                problems.append(f"{what}: {inside} not in {url} ({names[:8]})")
    assert not problems, "\n".join(problems)


def index_refs() -> set[str]:
    return {f"{i['name']}:{i['tag']}" for i in json.loads((MIRROR / "images" / "index.json").read_text())}


def test_flannel_manifest_renders_with_images_from_the_mirror(inventory):
    """The cni role's template over the mirrored kube-flannel.yml runs only images the mirror holds."""
    text = fetch(evaluate("cni", "cni_flannel_manifest_url | trim", inventory)).decode()
    upstream = [d for d in yaml.safe_load_all(text) if d]
    assert {"Namespace", "ConfigMap", "DaemonSet", "ServiceAccount"} <= {d["kind"] for d in upstream}
    rendered = render_role_template("cni", "kube-flannel.yml.j2", {**inventory, "cni_flannel_upstream_docs": upstream})
    daemonset = next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "DaemonSet")
    pod = daemonset["spec"]["template"]["spec"]
    images = {c["image"] for key in ("initContainers", "containers") for c in pod[key]}
    assert images and not images - index_refs(), images


# --- images ---------------------------------------------------------------------------

def flat_path(name: str) -> str:
    """Repository in the mirror (mirror_registry_layout flat), as roles/mirror/tasks/publish.yml computes it."""
    full = re.sub(r"^(?![^/]*[.:][^/]*/|localhost/)", "docker.io/", name)
    full = re.sub(r"^(?:index[.])?docker[.]io/([^/]+)$", r"docker.io/library/\1", full)
    return re.sub(r"^[^/]+/", "", full)


def test_images_the_roles_run_are_in_the_index(manifest, inventory):
    index = json.loads((MIRROR / "images" / "index.json").read_text())
    refs = index_refs()
    wanted = [evaluate("containerd", "containerd_sandbox_image", inventory),
              evaluate("cni", "cni_flannel_image", inventory),
              evaluate("cni", "cni_flannel_cni_plugin_image", inventory),
              evaluate("dra_driver", "dra_driver_image_repository ~ ':' ~ dra_driver_image_tag", inventory)]
    assert not [w for w in wanted if w not in refs], refs
    assert all((MIRROR / "images" / i["archive"]).is_file() for i in index)


@pytest.fixture(scope="module")
def registry(tmp_path_factory, manifest):
    binary = os.environ.get("DRALAB_DOCKER_REGISTRY") or shutil.which("docker-registry") or \
        str(CACHE / "debs" / "docker-registry-2.8.2" / "usr" / "bin" / "docker-registry")
    assert Path(binary).is_file(), "docker-registry is missing: run `make test-tools`"
    tmp = tmp_path_factory.mktemp("registry")
    port = free_port()
    config = tmp / "config.yml"
    config.write_text(render_role_template("mirror", "registry-config.yml.j2", {
        "mirror_listen_address": "127.0.0.1", "mirror_registry_port": port,
        "mirror_registry_root": str(tmp / "storage"), "__mirror_registry_writable": True}))
    with running([binary, "serve", str(config)], f"http://127.0.0.1:{port}/v2/", "docker-registry",
                 tmp / "registry.log"):
        yield f"127.0.0.1:{port}"


def skopeo(*argv: str) -> str:
    proc = subprocess.run(["skopeo", *argv], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"skopeo {' '.join(argv)}: {proc.stderr.strip()}"
    return proc.stdout


def test_every_image_loads_into_the_registry_and_inspects(registry):
    index = json.loads((MIRROR / "images" / "index.json").read_text())
    for image in index:
        source = f"docker-archive:{MIRROR / 'images' / image['archive']}"
        target = f"docker://{registry}/{flat_path(image['name'])}:{image['tag']}"
        skopeo("copy", "--quiet", "--dest-tls-verify=false", source, target)
        inspected = json.loads(skopeo("inspect", "--tls-verify=false", target))
        assert inspected["Architecture"] == "amd64" and inspected["Os"] == "linux", inspected
        # The mirror role compares config digests (the image ID) to decide what to push.
        archive_config = json.loads(skopeo("inspect", "--raw", source))["config"]["digest"]
        registry_config = json.loads(skopeo("inspect", "--raw", "--tls-verify=false", target))["config"]["digest"]
        assert archive_config == registry_config, image


def test_chart_pushes_and_installs_from_the_registry(manifest, registry, tmp_path, inventory):
    """The chart as the mirror role pushes it and the dra_driver role reads it (oci://<mirror>/...)."""
    helm_url = evaluate("dra_driver", "dra_driver_helm_url | trim", inventory)
    archive = tmp_path / "helm.tar.gz"
    archive.write_bytes(fetch(helm_url))
    with tarfile.open(archive) as tar:
        tar.extract("linux-amd64/helm", tmp_path, filter="data")
    helm = str(tmp_path / "linux-amd64" / "helm")
    env = {**os.environ, "HELM_CACHE_HOME": str(tmp_path / "c"), "HELM_CONFIG_HOME": str(tmp_path / "cf"),
           "HELM_DATA_HOME": str(tmp_path / "d")}
    version = evaluate("dra_driver", "dra_driver_chart_version", inventory)
    shown = subprocess.run([helm, "version", "--short"], capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.startswith("v" + evaluate("dra_driver", "dra_driver_helm_version", inventory))
    chart = MIRROR / "images" / f"dra-example-driver-{version}.tgz"
    assert chart.is_file() and (MIRROR / "files" / "charts" / chart.name).is_file()
    push = subprocess.run([helm, "push", str(chart), f"oci://{registry}/dra-example-driver/charts", "--plain-http"],
                          capture_output=True, text=True, env=env, check=False)
    assert push.returncode == 0, push.stderr
    mirrored = {**inventory, "dralab_registry_mirror": registry}
    ref = evaluate("dra_driver", "dra_driver_chart_ref | trim", mirrored)
    shown = subprocess.run([helm, "show", "chart", ref, "--version", version, "--plain-http"],
                           capture_output=True, text=True, env=env, check=False)
    assert shown.returncode == 0, shown.stderr
    assert f"version: {version}" in shown.stdout and "name: dra-example-driver" in shown.stdout
