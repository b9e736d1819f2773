"""The lab's "upstream" (podman_lab/upstream_server.py, upstream.py) on loopback: each upstream host name gets what
an online node asks it for, over TLS that the lab's CA vouches for; nothing outside the files tree is served."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
for path in (HARNESS, HARNESS.parents[1]):  # podman_lab, and the dralab_build it imports
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
from podman_lab import topology, upstream  # noqa: E402
from podman_lab.upstream_server import Upstream, serve, simple_index  # noqa: E402

BLOB = bytes(range(256)) * 12288  # 3 MiB
MANIFEST = json.dumps({"schemaVersion": 2}).encode()


class FakeRegistryHandler(BaseHTTPRequestHandler):
    """Stands in for the mirror's registry (the lab tier pulls through the real one)."""

    def do_GET(self):  # noqa: N802
        if self.path == "/v2/pause/manifests/3.10.1":
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
            self.send_header("Docker-Content-Digest", "sha256:abc")
            self.send_header("Content-Length", str(len(MANIFEST)))
            self.end_headers()
            self.wfile.write(MANIFEST)
        elif self.path == "/v2/library/busybox/blobs/sha256:big":
            self.send_response(200)  # HTTP/1.0 without a length: the body ends when the connection closes
            self.end_headers()
            self.wfile.write(BLOB)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upstream")
    monkey = pytest.MonkeyPatch()
    monkey.setenv("DRALAB_CACHE", str(tmp / "cache"))
    certs = upstream.ensure_certificates()
    files = tmp / "files"
    (files / "dl.k8s.io/release/v1.35.4/bin/linux/amd64").mkdir(parents=True)
    (files / "dl.k8s.io/release/v1.35.4/bin/linux/amd64/kubeadm").write_bytes(b"kubeadm binary")
    (files / "wheels").mkdir()
    for name in ("kubernetes-35.0.0-py2.py3-none-any.whl", "cel_python-0.5.0-py3-none-any.whl",
                 "setuptools-80.9.0-py3-none-any.whl", "pip-26.3-py3-none-any.whl"):
        (files / "wheels" / name).write_bytes(name.encode())
    (tmp / "secret").write_text("not for nodes")
    registry = HTTPServer(("127.0.0.1", 0), FakeRegistryHandler)
    threading.Thread(target=registry.serve_forever, daemon=True).start()
    log = tmp / "access.jsonl"
    server = serve("127.0.0.1", 0, certs / "server.crt", certs / "server.key",
                   Upstream(files, f"http://127.0.0.1:{registry.server_address[1]}", log))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"port": server.server_address[1], "ca": certs / "ca.crt", "log": log, "files": files}
    server.shutdown()
    registry.shutdown()
    monkey.undo()


def fetch(lab, host, path, method="GET"):
    """A request to host (as an online node names it) that reaches the server on loopback."""
    context = ssl.create_default_context(cafile=str(lab["ca"]))
    conn = http.client.HTTPSConnection(host, lab["port"], context=context, timeout=10)
    conn.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", lab["port"])), server_hostname=host)
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_every_upstream_name_is_vouched_for_by_the_lab_ca(lab):
    for host in topology.UPSTREAM_HOSTS:
        response = fetch(lab, host, "/")[0]
        assert response.status in (400, 404), host


def test_a_name_the_certificate_does_not_carry_is_refused(lab):
    with pytest.raises(ssl.SSLCertVerificationError):
        fetch(lab, "example.org", "/")


def test_files_are_served_under_their_upstream_host_and_path(lab):
    response, body = fetch(lab, "dl.k8s.io", "/release/v1.35.4/bin/linux/amd64/kubeadm")
    assert (response.status, body) == (200, b"kubeadm binary")
    head, body = fetch(lab, "dl.k8s.io", "/release/v1.35.4/bin/linux/amd64/kubeadm", "HEAD")
    assert (head.status, head.getheader("Content-Length"), body) == (200, "14", b"")
    assert fetch(lab, "github.com", "/release/v1.35.4/bin/linux/amd64/kubeadm")[0].status == 404


@pytest.mark.parametrize("path", ["/../secret", "/../../secret", "/%2e%2e/secret", "/.."])
def test_nothing_outside_the_files_tree_is_served(lab, path):
    response, body = fetch(lab, "dl.k8s.io", path)
    assert response.status == 404 and b"not for nodes" not in body


def test_the_package_index_lists_a_projects_wheels_on_files_pythonhosted_org(lab):
    response, body = fetch(lab, "pypi.org", "/simple/cel-python/")
    assert response.status == 200
    assert ('href="https://files.pythonhosted.org/packages/dralab/cel_python-0.5.0-py3-none-any.whl"'
            in body.decode())
    assert "kubernetes" not in body.decode()
    assert fetch(lab, "pypi.org", "/simple/Cel_Python/")[0].status == 200
    assert fetch(lab, "pypi.org", "/simple/not-in-the-mirror/")[0].status == 404
    response, body = fetch(lab, "files.pythonhosted.org", "/packages/py3/p/pip/pip-26.3-py3-none-any.whl")
    assert (response.status, body) == (200, b"pip-26.3-py3-none-any.whl")


def test_simple_index_has_no_page_for_a_project_without_wheels(tmp_path):
    (tmp_path / "kubernetes-35.0.0-py2.py3-none-any.whl").write_bytes(b"")
    assert simple_index(tmp_path, "kube") is None
    assert "kubernetes-35.0.0" in simple_index(tmp_path, "Kubernetes")


def test_registry_names_reach_the_mirror_registry(lab):
    response, body = fetch(lab, "registry.k8s.io", "/v2/pause/manifests/3.10.1")
    assert (response.status, body) == (200, MANIFEST)
    assert response.getheader("Docker-Content-Digest") == "sha256:abc"
    assert response.getheader("Content-Type") == "application/vnd.oci.image.manifest.v1+json"
    response, body = fetch(lab, "registry-1.docker.io", "/v2/library/busybox/blobs/sha256:big")
    assert (response.status, len(body), body == BLOB) == (200, len(BLOB), True)
    assert fetch(lab, "ghcr.io", "/v2/flannel-io/flannel/manifests/v0")[0].status == 404


def test_each_request_is_in_the_access_log(lab):
    fetch(lab, "get.helm.sh", "/helm-v3.20.2-linux-amd64.tar.gz")
    records = [json.loads(line) for line in lab["log"].read_text().splitlines()]
    assert {"host": "get.helm.sh", "method": "GET", "path": "/helm-v3.20.2-linux-amd64.tar.gz",
            "status": 404, "client": "127.0.0.1"} in records


def test_certificates_are_made_once_and_remade_when_the_names_change(tmp_path, monkeypatch):
    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path))
    folder = upstream.ensure_certificates(("dl.k8s.io",))
    first = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert oct((folder / "server.key").stat().st_mode & 0o777) == "0o600"
    assert oct((folder / "ca.key").stat().st_mode & 0o777) == "0o600"
    upstream.ensure_certificates(("dl.k8s.io",))
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == first
    upstream.ensure_certificates(("dl.k8s.io", "github.com"))
    assert (folder / "ca.crt").read_bytes() == first["ca.crt"]
    assert (folder / "server.crt").read_bytes() != first["server.crt"]


def test_an_online_node_resolves_every_upstream_name_to_the_mirror_and_mounts_the_ca(tmp_path, monkeypatch):
    monkeypatch.setenv("DRALAB_CACHE", str(tmp_path))
    args = upstream.online_node_args(topology.MIRROR)
    hosts = {args[i + 1] for i, a in enumerate(args) if a == "--add-host"}
    assert hosts == {f"{h}:{topology.MIRROR.ip}" for h in topology.UPSTREAM_HOSTS}
    assert f"{upstream.ca_cert()}:{topology.UPSTREAM_CA_PATH}:ro" in args


def test_the_lab_has_an_online_node_and_offline_ones():
    cluster = [n for n in topology.NODES if n.cluster and n.kind == "node"]
    assert any(n.online for n in cluster) and not all(n.online for n in cluster)
