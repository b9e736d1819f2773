"""A throw-away CA, the certificates of the local control plane and the kubeconfigs that carry them."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
from pathlib import Path


class PKI:
    """A throw-away CA and the certificates this cluster needs (ECDSA P-256)."""

    def __init__(self, directory: Path):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        self.x509, self.hashes, self.ser, self.ec = x509, hashes, serialization, ec
        self.EKU, self.NameOID = ExtendedKeyUsageOID, NameOID
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dralab-test-ca")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.ca_cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            # Python 3.13's ssl verifies strictly (VERIFY_X509_STRICT): key identifiers are required.
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()), critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        self._write("ca", self.ca_cert, self.ca_key)

    def _pem_key(self, key) -> bytes:
        return key.private_bytes(self.ser.Encoding.PEM, self.ser.PrivateFormat.PKCS8,
                                 self.ser.NoEncryption())

    def _write(self, stem: str, cert, key) -> None:
        (self.dir / f"{stem}.crt").write_bytes(cert.public_bytes(self.ser.Encoding.PEM))
        keyfile = self.dir / f"{stem}.key"
        keyfile.touch(mode=0o600)
        keyfile.write_bytes(self._pem_key(key))

    def path(self, stem: str, kind: str) -> Path:
        return self.dir / f"{stem}.{kind}"

    def pem(self, stem: str, kind: str) -> bytes:
        return self.path(stem, kind).read_bytes()

    def issue(self, stem: str, cn: str, orgs: tuple[str, ...] = (), *, server_names: tuple[str, ...] = (),
              client: bool = True) -> None:
        x509, NameOID = self.x509, self.NameOID
        key = self.ec.generate_private_key(self.ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
        now = datetime.datetime.now(datetime.timezone.utc)
        usages = ([self.EKU.SERVER_AUTH] if server_names else []) + ([self.EKU.CLIENT_AUTH] if client else [])
        builder = (
            x509.CertificateBuilder().subject_name(x509.Name(attrs))
            .issuer_name(self.ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                           critical=False)
        )
        if server_names:
            sans = []
            for n in server_names:
                try:
                    sans.append(x509.IPAddress(ipaddress.ip_address(n)))
                except ValueError:
                    sans.append(x509.DNSName(n))
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        self._write(stem, builder.sign(self.ca_key, self.hashes.SHA256()), key)

    def service_account_keys(self) -> None:
        key = self.ec.generate_private_key(self.ec.SECP256R1())
        keyfile = self.dir / "sa.key"
        keyfile.touch(mode=0o600)
        keyfile.write_bytes(self._pem_key(key))
        (self.dir / "sa.pub").write_bytes(key.public_key().public_bytes(
            self.ser.Encoding.PEM, self.ser.PublicFormat.SubjectPublicKeyInfo))


def write_kubeconfig(path: Path, server: str, pki: PKI, stem: str) -> Path:
    """A self-contained kubeconfig (JSON is valid YAML) for the client cert `stem`."""
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "dralab",
        "clusters": [{"name": "dralab", "cluster": {
            "server": server, "certificate-authority-data": b64(pki.pem("ca", "crt"))}}],
        "users": [{"name": stem, "user": {
            "client-certificate-data": b64(pki.pem(stem, "crt")),
            "client-key-data": b64(pki.pem(stem, "key"))}}],
        "contexts": [{"name": "dralab", "context": {"cluster": "dralab", "user": stem}}],
    }
    path.touch(mode=0o600)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path
