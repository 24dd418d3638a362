"""PKI for the test bed: one self-signed CA and one admin leaf (CN=gpuops-admin, O=system:masters).

The admin pair serves the API server, authenticates every control-plane component and the admin user, and
signs service-account tokens, as a throwaway loopback cluster allows.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CN = "gpuops-testbed-ca"
ADMIN_CN = "gpuops-admin"


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _write_key(path: Path, key) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def generate(pki_dir: Path, days: int = 3650) -> dict:
    """Write ca.crt/ca.key/admin.crt/admin.key under pki_dir; return their paths."""
    pki_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=days)

    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_CN)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=True,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = _key()
    sans = [
        x509.DNSName(n)
        for n in (
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "localhost",
        )
    ]
    sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "::1")]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(
            x509.Name(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                    x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_CN),
                ]
            )
        )
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                key_cert_sign=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    paths = {n: pki_dir / n for n in ("ca.crt", "ca.key", "admin.crt", "admin.key")}
    _write_cert(paths["ca.crt"], ca)
    _write_key(paths["ca.key"], ca_key)
    _write_cert(paths["admin.crt"], leaf)
    _write_key(paths["admin.key"], key)
    return {k: str(v) for k, v in paths.items()}


def issue_client(pki_dir: Path, name: str, common_name: str, organization: str, days: int = 3650) -> dict:
    """Write <name>.crt/<name>.key under pki_dir: a client certificate for ``common_name`` in group
    ``organization``, signed by the CA ``generate`` wrote there (a kubelet's system:node:<node> identity)."""
    ca = x509.load_pem_x509_certificate((pki_dir / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki_dir / "ca.key").read_bytes(), password=None)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    key = _key()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = {"crt": pki_dir / f"{name}.crt", "key": pki_dir / f"{name}.key"}
    _write_cert(paths["crt"], cert)
    _write_key(paths["key"], key)
    return {k: str(v) for k, v in paths.items()}
