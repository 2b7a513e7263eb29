"""Certificates for the webhook: a CA, a serving certificate for the Service, rotation with overlap.

Why built in: the API server only calls a webhook whose serving certificate chains to the
`caBundle` of its configuration and names `<service>.<namespace>.svc`. Operators without
cert-manager need a one-command way to produce exactly that, and a rotation that never leaves
the API server trusting a CA the webhook no longer uses — peers got this wrong (a self-managed CA
expiring unrenewed, TLS errors right after renewal), so the rules here are explicit:

* the CA lives 10 years, serving certificates 1 year, both back-dated an hour for clock skew
  (cert-controller's numbers);
* `rotate` re-signs a fresh serving certificate with the existing CA when it can; when it must
  (or is asked to) make a new CA, the *old CA stays in `ca.crt`* next to the new one, so a
  `caBundle` built from it trusts both the pods still serving the old certificate and the ones
  already serving the new one. Expired CAs are dropped from the bundle.

Everything is a value until `write_dir` puts it on disk (keys mode 0600, atomic replace, so a
server watching the directory never reads half a file).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
CLIENT_VALIDITY = dt.timedelta(days=365)
BACKDATE = dt.timedelta(hours=1)
"""NotBefore is set this far in the past: a node whose clock lags must still accept the cert."""

CA_CRT, CA_KEY, TLS_CRT, TLS_KEY = "ca.crt", "ca.key", "tls.crt", "tls.key"

KeyType = Literal["ecdsa-p256", "rsa-2048"]
KEY_TYPES: tuple[KeyType, ...] = ("ecdsa-p256", "rsa-2048")
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key."""

    certificate: x509.Certificate
    key: PrivateKey

    def cert_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


@dataclass(frozen=True)
class CertSet:
    """What a cert directory holds: the signing CA, the CA bundle to trust, the serving pair."""

    ca: Issued | None
    """The CA that signs new serving certificates (None when only `ca.crt` is known)."""
    bundle: tuple[x509.Certificate, ...]
    """`ca.crt`: the CA certificates a client must trust, newest first (the overlap)."""
    serving: Issued

    def bundle_pem(self) -> bytes:
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.bundle)

    def ca_bundle_base64(self) -> str:
        """The `caBundle` value of a ValidatingWebhookConfiguration."""
        return base64.b64encode(self.bundle_pem()).decode("ascii")

    @property
    def dns_names(self) -> tuple[str, ...]:
        return san_values(self.serving.certificate, x509.DNSName)

    @property
    def ip_addresses(self) -> tuple[str, ...]:
        return san_values(self.serving.certificate, x509.IPAddress)


@dataclass(frozen=True)
class CertProblem:
    """Why a directory's certificates cannot be used (a value, for the CLI to print)."""

    message: str


def service_dns_names(service: str, namespace: str, cluster_domain: str = "cluster.local") -> tuple[str, ...]:
    """The names the API server (and in-cluster clients) may use to reach a Service.

    The API server dials `<service>.<namespace>.svc`; the shorter and the fully qualified
    forms are there for clients that resolve through the search path or by FQDN.
    """
    names = [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]
    if cluster_domain:
        names.append(f"{service}.{namespace}.svc.{cluster_domain.strip('.')}")
    return tuple(names)


def new_private_key(key_type: KeyType = "ecdsa-p256") -> PrivateKey:
    """ECDSA P-256 by default: as trusted by Go's TLS stack, and generated in microseconds."""
    if key_type == "rsa-2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _builder(subject: x509.Name, issuer: x509.Name, key: PrivateKey, now: dt.datetime,
             validity: dt.timedelta) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def create_ca(common_name: str, *, now: dt.datetime | None = None,
              validity: dt.timedelta = CA_VALIDITY, key_type: KeyType = "ecdsa-p256") -> Issued:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    now = now or _now()
    key = new_private_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(name, name, key, now, validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False, data_encipherment=False,
                          key_agreement=False, encipher_only=False, decipher_only=False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(cert, key)


def issue(ca: Issued, common_name: str, *, dns_names: Sequence[str] = (),
          ip_addresses: Sequence[str] = (), usage: Literal["server", "client"] = "server",
          now: dt.datetime | None = None, validity: dt.timedelta = SERVING_VALIDITY,
          key_type: KeyType = "ecdsa-p256") -> Issued:
    """A leaf certificate signed by `ca`: a serving certificate, or a client one for mTLS."""
    now = now or _now()
    # A leaf must not outlive its CA: clients reject the chain once the CA expires anyway.
    validity = min(validity, ca.certificate.not_valid_after_utc - now)
    key = new_private_key(key_type)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    eku = ExtendedKeyUsageOID.SERVER_AUTH if usage == "server" else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(subject, ca.certificate.subject, key, now, validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(digital_signature=True, key_encipherment=isinstance(key, rsa.RSAPrivateKey),
                          key_cert_sign=False, crl_sign=False, content_commitment=False,
                          data_encipherment=False, key_agreement=False, encipher_only=False,
                          decipher_only=False),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([eku]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alt_names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


def san_values(cert: x509.Certificate, kind: type[x509.DNSName] | type[x509.IPAddress]) -> tuple[str, ...]:
    """The certificate's subject alternative names of one kind (DNS names or IP addresses),
    as text; () without the extension."""
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return ()
    return tuple(str(value) for value in ext.value.get_values_for_type(kind))


def build_bundle(certs: Iterable[x509.Certificate], now: dt.datetime | None = None) -> tuple[
        x509.Certificate, ...]:
    """The CAs to trust: in the given order, without duplicates or expired certificates."""
    now = now or _now()
    seen: set[bytes] = set()
    out: list[x509.Certificate] = []
    for cert in certs:
        fingerprint = cert.fingerprint(hashes.SHA256())
        if fingerprint in seen or cert.not_valid_after_utc <= now:
            continue
        seen.add(fingerprint)
        out.append(cert)
    return tuple(out)


def generate(service: str, namespace: str, *, cluster_domain: str = "cluster.local",
             extra_dns_names: Sequence[str] = (), ip_addresses: Sequence[str] = (),
             now: dt.datetime | None = None,
             ca_validity: dt.timedelta = CA_VALIDITY, validity: dt.timedelta = SERVING_VALIDITY,
             key_type: KeyType = "ecdsa-p256") -> CertSet:
    """A new CA and a serving certificate for `<service>.<namespace>.svc` and its other names."""
    now = now or _now()
    ca = create_ca(f"dra-affinity-webhook-ca@{int(now.timestamp())}", now=now, validity=ca_validity,
                   key_type=key_type)
    names = (*service_dns_names(service, namespace, cluster_domain), *extra_dns_names)
    serving = issue(ca, f"{service}.{namespace}.svc", dns_names=names, ip_addresses=ip_addresses, now=now,
                    validity=validity, key_type=key_type)
    return CertSet(ca=ca, bundle=(ca.certificate,), serving=serving)


def rotate(current: CertSet, *, new_ca: bool = False, dns_names: Sequence[str] | None = None,
           now: dt.datetime | None = None, ca_validity: dt.timedelta = CA_VALIDITY,
           validity: dt.timedelta = SERVING_VALIDITY, key_type: KeyType = "ecdsa-p256") -> CertSet:
    """A new serving certificate; a new CA only when asked, when the CA key is unknown, or when
    the CA would expire before the new certificate. A new CA is *prepended* to the bundle and the
    old CAs stay until they expire: the overlap that lets every replica and the API server switch
    at their own pace.
    """
    now = now or _now()
    ca = current.ca
    bundle: list[x509.Certificate] = list(current.bundle)
    if new_ca or ca is None or ca.certificate.not_valid_after_utc < now + validity:
        ca = create_ca(f"dra-affinity-webhook-ca@{int(now.timestamp())}", now=now,
                       validity=ca_validity, key_type=key_type)
        bundle.insert(0, ca.certificate)
    names = tuple(dns_names) if dns_names else current.dns_names
    serving = issue(ca, names[0] if names else "dra-affinity-webhook", dns_names=names,
                    ip_addresses=current.ip_addresses, now=now, validity=validity, key_type=key_type)
    return CertSet(ca=ca, bundle=build_bundle(bundle, now), serving=serving)


def _load_key(data: bytes) -> PrivateKey | CertProblem:
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return CertProblem(f"unsupported private key type {type(key).__name__}")
    return key


def _same_key(cert: x509.Certificate, key: PrivateKey) -> bool:
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    return cert.public_key().public_bytes(serialization.Encoding.DER, spki) == \
        key.public_key().public_bytes(serialization.Encoding.DER, spki)


def read_dir(directory: Path) -> CertSet | CertProblem:
    """Load `ca.crt`, `tls.crt`, `tls.key` and, when present, `ca.key` from `directory`."""
    try:
        bundle = tuple(x509.load_pem_x509_certificates((directory / CA_CRT).read_bytes()))
        leaf = x509.load_pem_x509_certificates((directory / TLS_CRT).read_bytes())[0]
        leaf_key = _load_key((directory / TLS_KEY).read_bytes())
        ca_key_path = directory / CA_KEY
        ca_key = _load_key(ca_key_path.read_bytes()) if ca_key_path.exists() else None
    except (OSError, ValueError, TypeError) as exc:  # TypeError: an encrypted key
        return CertProblem(f"cannot read certificates in {directory}: {exc}")
    for key in (leaf_key, ca_key):
        if isinstance(key, CertProblem):
            return key
    assert not isinstance(leaf_key, CertProblem) and not isinstance(ca_key, CertProblem)
    if not _same_key(leaf, leaf_key):
        return CertProblem(f"{directory / TLS_KEY} does not match {directory / TLS_CRT}")
    ca = None
    if ca_key is not None:
        ca_cert = next((c for c in bundle if _same_key(c, ca_key)), None)
        if ca_cert is None:
            return CertProblem(f"{directory / CA_KEY} matches no certificate in {directory / CA_CRT}")
        ca = Issued(ca_cert, ca_key)
    return CertSet(ca=ca, bundle=bundle, serving=Issued(leaf, leaf_key))


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Write beside `path`, then rename over it: a watcher sees the old file or the new one.

    The temporary file is created exclusively (`O_EXCL`, never following a link) under an
    unpredictable name: a file or symlink planted beside the key cannot receive it.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        tmp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(8)}")
        try:
            fd = os.open(tmp, flags, mode)
            break
        except FileExistsError:
            continue
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)  # the umask must not widen or narrow what we promise
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def write_dir(certs: CertSet, directory: Path) -> list[Path]:
    """Write the set; the key is replaced before the certificate, so a reader that catches the
    pair in between sees a mismatch (and keeps its old context) rather than a stale key later."""
    directory.mkdir(parents=True, exist_ok=True)
    files: list[tuple[Path, bytes, int]] = []
    if certs.ca is not None:
        files.append((directory / CA_KEY, certs.ca.key_pem(), 0o600))
    files += [(directory / CA_CRT, certs.bundle_pem(), 0o644),
              (directory / TLS_KEY, certs.serving.key_pem(), 0o600),
              (directory / TLS_CRT, certs.serving.cert_pem(), 0o644)]
    written: list[Path] = []
    for path, data, mode in files:
        if _holds(path, data):  # a rotation that keeps the CA leaves its files alone, and says so
            continue
        _atomic_write(path, data, mode)
        written.append(path)
    return written


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def secret_manifest(certs: CertSet, name: str, namespace: str) -> str:
    """A `kubernetes.io/tls` Secret with `tls.crt`, `tls.key` and `ca.crt` (never the CA key)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    doc = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {"app.kubernetes.io/name": "dra-affinity-webhook"}},
        "type": "kubernetes.io/tls",
        "data": {
            CA_CRT: b64(certs.bundle_pem()),
            TLS_CRT: b64(certs.serving.cert_pem()),
            TLS_KEY: b64(certs.serving.key_pem()),
        },
    }
    return yaml.safe_dump(doc, sort_keys=False)
