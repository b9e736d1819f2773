"""The lab's "upstream": HTTPS on the mirror node under the upstream host names, so a node that installs with the
roles' defaults (no mirror variables) finds what it asks for at the URLs an instructor's VMs would use.

Run on the mirror node (Python standard library only) by a systemd unit that podman_lab/upstream.py writes; the
online nodes resolve every name in UPSTREAM_HOSTS (topology.py) to the mirror node and trust the lab's CA.
By the Host header:
  registry hosts (/v2/...)      -> the mirror's registry, flat layout (registry.k8s.io/pause is <registry>/pause)
  pypi.org /simple/<project>/   -> a PEP 503 index of the mirror's wheels, links on files.pythonhosted.org
  files.pythonhosted.org        -> the wheel of that name in the mirror's files/wheels/
  any other host                -> <files root>/<host>/<path> (the mirror's files tree is laid out so)
Each request is appended to the access log as one JSON line (client, host, method, path, status), which
tests/lab/test_online_path.py reads.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import ssl
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

REGISTRY_HOSTS = frozenset({"registry.k8s.io", "registry-1.docker.io", "docker.io", "ghcr.io", "quay.io"})
INDEX_HOST = "pypi.org"
WHEEL_HOST = "files.pythonhosted.org"
# Headers passed between a client and the registry.
FORWARDED_REQUEST_HEADERS = ("Accept", "Range", "If-None-Match")
FORWARDED_RESPONSE_HEADERS = ("Content-Type", "Content-Length", "Docker-Content-Digest", "Docker-Distribution-Api-Version",
                              "Etag", "Content-Range", "Accept-Ranges", "Link")
CHUNK = 1 << 20


def project_name(filename: str) -> str:
    """The normalized project name of a wheel or sdist file name (PEP 503)."""
    stem = filename.split("-", 1)[0]
    return re.sub(r"[-_.]+", "-", stem).lower()


def simple_index(wheels: Path, project: str) -> str | None:
    """The PEP 503 page of a project, or None when the mirror has none of its files."""
    wanted = re.sub(r"[-_.]+", "-", project).lower()
    files = sorted(p.name for p in wheels.glob("*.whl") if project_name(p.name) == wanted)
    if not files:
        return None
    links = "\n".join(f'<a href="https://{WHEEL_HOST}/packages/dralab/{html.escape(name)}">{html.escape(name)}</a><br>'
                      for name in files)
    return f"<!DOCTYPE html>\n<html><body>\n<h1>Links for {html.escape(wanted)}</h1>\n{links}\n</body></html>\n"


def inside(root: Path, relative: str) -> Path | None:
    """root/relative when it stays inside root (no .. or symlink escape), else None."""
    target = (root / relative.lstrip("/")).resolve()
    base = root.resolve()
    return target if target == base or base in target.parents else None


class Upstream:
    def __init__(self, files_root: Path, registry: str, log_path: Path | None):
        self.files_root = files_root
        self.wheels = files_root / "wheels"
        self.registry = registry.rstrip("/")
        self.log_path = log_path
        self.log_lock = threading.Lock()

    def log(self, record: dict) -> None:
        if self.log_path is None:
            return
        with self.log_lock, self.log_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "dralab-lab-upstream"
    upstream: Upstream

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.answer(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self.answer(body=False)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (http.server's signature)
        pass  # the JSON access log says it

    def answer(self, body: bool) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
        path = unquote(urlsplit(self.path).path)
        status = 500
        try:
            if host in REGISTRY_HOSTS and path.startswith("/v2"):
                status = self.proxy_registry(body)
            elif host == INDEX_HOST:
                status = self.index(path, body)
            elif host == WHEEL_HOST:
                status = self.file(inside(self.upstream.wheels, path.rsplit("/", 1)[-1]), body)
            elif host and "/" not in host and host not in (".", ".."):
                status = self.file(inside(self.upstream.files_root, f"{host}/{path}"), body)
            else:
                status = self.send_text(400, "no such host\n", body)
        except (BrokenPipeError, ConnectionResetError):
            status = 499
        finally:
            self.upstream.log({"client": self.client_address[0], "host": host, "method": self.command,
                               "path": path, "status": status})

    def send_text(self, status: int, text: str, body: bool, content_type: str = "text/plain") -> int:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)
        return status

    def file(self, target: Path | None, body: bool) -> int:
        if target is None or not target.is_file():
            return self.send_text(404, "not found\n", body)
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(target.stat().st_size))
        self.end_headers()
        if body:
            with target.open("rb") as src:
                shutil.copyfileobj(src, self.wfile, CHUNK)
        return 200

    def index(self, path: str, body: bool) -> int:
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "simple":
            page = simple_index(self.upstream.wheels, parts[1])
            if page is not None:
                return self.send_text(200, page, body, "text/html")
        return self.send_text(404, "not found\n", body)

    def proxy_registry(self, body: bool) -> int:
        request = urllib.request.Request(self.upstream.registry + self.path, method=self.command)
        for name in FORWARDED_REQUEST_HEADERS:
            if self.headers.get(name):
                request.add_header(name, self.headers[name])
        try:
            response = urllib.request.urlopen(request, timeout=60)  # noqa: S310 (the mirror's own registry)
        except urllib.error.HTTPError as error:
            response = error
        with response:
            data = None if response.headers.get("Content-Length") is not None else response.read()
            self.send_response(response.status)
            for name in FORWARDED_RESPONSE_HEADERS:
                if response.headers.get(name) is not None:
                    self.send_header(name, response.headers[name])
            if data is not None:
                self.send_header("Content-Length", str(len(data) if body else 0))
            self.end_headers()
            if body and data is not None:
                self.wfile.write(data)
            elif body:
                shutil.copyfileobj(response, self.wfile, CHUNK)
            return response.status


def serve(listen: str, port: int, cert: Path, key: Path, upstream: Upstream) -> ThreadingHTTPServer:
    """The server on listen:port with the lab's certificate (call serve_forever). The TLS handshake happens in
    each request's thread, so a slow client holds no one else up."""
    handler = type("BoundHandler", (Handler,), {"upstream": upstream})
    server = ThreadingHTTPServer((listen, port), handler)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--port", type=int, default=443)
    parser.add_argument("--files-root", type=Path, required=True)
    parser.add_argument("--registry", required=True, help="http://host:port of the mirror's registry")
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args(argv)
    server = serve(args.listen, args.port, args.cert, args.key, Upstream(args.files_root, args.registry, args.log))
    print(f"serving https://{args.listen}:{args.port} for {os.fspath(args.files_root)} and {args.registry}",
          file=sys.stderr, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
