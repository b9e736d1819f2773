"""The lab's "upstream" for the online path: a CA of the lab's own and a certificate for every upstream host name,
the podman arguments that make an online node resolve those names to the mirror node and trust the CA, and the
systemd unit that runs upstream_server.py on the mirror node.

An online node (topology.Node.online) installs with the roles' defaults, as an instructor's VMs with internet
would: https://dl.k8s.io/..., https://github.com/..., registry.k8s.io, ... reach the mirror node's files and
registry through upstream_server.py. The key and certificates live in $DRALAB_CACHE/lab/upstream/."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from podman_lab.paths import lab_dir
from podman_lab.podman import podman
from podman_lab.topology import (MIRROR_FILES_ROOT, MIRROR_REGISTRY_PORT, UPSTREAM_CA_PATH, UPSTREAM_HOSTS,
                                 UPSTREAM_LOG, UPSTREAM_PORT, UPSTREAM_SERVICE, Node, log)

SERVER_SOURCE = Path(__file__).with_name("upstream_server.py")
# Where the mirror node finds the program and its certificate (read-only mounts).
NODE_DIR = "/opt/dralab-lab-upstream"
VALID_DAYS = 825


def upstream_dir() -> Path:
    return lab_dir() / "upstream"


def ca_cert() -> Path:
    return upstream_dir() / "ca.crt"


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def _load_key(path: Path) -> ec.EllipticCurvePrivateKey:
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def _certificate(subject: str, public_key, issuer: x509.Name, signer, ca: bool, hosts: tuple[str, ...] = ()):
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(issuer).public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               # Python 3.13's ssl verifies strictly (VERIFY_X509_STRICT): key identifiers are required.
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                              critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        builder = (builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    return builder.sign(signer, hashes.SHA256())


def ensure_certificates(hosts: tuple[str, ...] = UPSTREAM_HOSTS) -> Path:
    """The lab CA (made once) and a server certificate for `hosts`, remade when the names change or it nears its
    end. Returns the folder holding ca.crt, server.crt and server.key."""
    folder = upstream_dir()
    folder.mkdir(parents=True, exist_ok=True)
    ca_key_path, server_key_path = folder / "ca.key", folder / "server.key"
    if not (ca_key_path.exists() and ca_cert().exists()):
        key = ec.generate_private_key(ec.SECP256R1())
        _write_key(ca_key_path, key)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dralab podman lab upstream CA")])
        cert = _certificate("dralab podman lab upstream CA", key.public_key(), name, key, ca=True)
        ca_cert().write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / "server.crt").unlink(missing_ok=True)
    ca = x509.load_pem_x509_certificate(ca_cert().read_bytes())
    server_path = folder / "server.crt"
    if server_path.exists():
        current = x509.load_pem_x509_certificate(server_path.read_bytes())
        names = tuple(current.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                      .get_values_for_type(x509.DNSName))
        fresh = current.not_valid_after_utc - datetime.datetime.now(datetime.timezone.utc) > datetime.timedelta(30)
        if names == tuple(hosts) and fresh and current.issuer == ca.subject:
            return folder
    key = ec.generate_private_key(ec.SECP256R1())
    _write_key(server_key_path, key)
    cert = _certificate(hosts[0], key.public_key(), ca.subject, _load_key(ca_key_path), ca=False, hosts=hosts)
    server_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    log(f"upstream certificate for {', '.join(hosts)} in {folder}")
    return folder


def online_node_args(mirror: Node) -> list[str]:
    """podman run arguments of an online node: every upstream name resolves to the mirror node, the lab CA is
    where update-ca-certificates takes it from."""
    args = []
    for host in UPSTREAM_HOSTS:
        args += ["--add-host", f"{host}:{mirror.ip}"]
    return args + ["--volume", f"{ca_cert()}:{UPSTREAM_CA_PATH}:ro"]


def unit_path() -> Path:
    return upstream_dir() / f"{UPSTREAM_SERVICE}.service"


def mirror_node_args(mirror: Node) -> list[str]:
    """podman run arguments of the mirror node: the server program, its certificate and its unit, read-only."""
    folder = upstream_dir()
    write_unit(mirror)
    return ["--volume", f"{SERVER_SOURCE}:{NODE_DIR}/upstream_server.py:ro",
            "--volume", f"{folder / 'server.crt'}:{NODE_DIR}/server.crt:ro",
            "--volume", f"{folder / 'server.key'}:{NODE_DIR}/server.key:ro",
            "--volume", f"{unit_path()}:/etc/systemd/system/{UPSTREAM_SERVICE}.service:ro"]


def unit_text(mirror: Node) -> str:
    command = ["/usr/bin/python3", f"{NODE_DIR}/upstream_server.py", "--listen", mirror.ip,
               "--port", str(UPSTREAM_PORT), "--files-root", MIRROR_FILES_ROOT,
               "--registry", f"http://{mirror.ip}:{MIRROR_REGISTRY_PORT}",
               "--cert", f"{NODE_DIR}/server.crt", "--key", f"{NODE_DIR}/server.key", "--log", UPSTREAM_LOG]
    return ("[Unit]\nDescription=dralab podman lab: upstream host names served from the mirror (test harness)\n"
            "After=network-online.target\n\n"
            f"[Service]\nExecStart={' '.join(command)}\nRestart=always\n\n"
            "[Install]\nWantedBy=multi-user.target\n")


def write_unit(mirror: Node) -> bool:
    """The unit file the mirror node mounts; True when it changed."""
    text = unit_text(mirror)
    path = unit_path()
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def start_server(mirror: Node) -> None:
    """Enable and start the unit on the mirror node; restart it when the unit changed since the node started."""
    changed = write_unit(mirror)
    podman("exec", mirror.container, "systemctl", "daemon-reload")
    podman("exec", mirror.container, "systemctl", "enable", "--now", UPSTREAM_SERVICE)
    if changed:
        podman("exec", mirror.container, "systemctl", "restart", UPSTREAM_SERVICE)


def trust_ca(node: Node) -> None:
    """Put the lab CA into the node's system trust store (Python, Go, pip's truststore and helm read it)."""
    podman("exec", node.container, "update-ca-certificates")


def access_log(mirror: Node) -> list[dict]:
    """The requests upstream_server.py answered, oldest first."""
    out = podman("exec", mirror.container, "cat", UPSTREAM_LOG, check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]
