"""Certificates: what the API server will verify, checked with a real X.509 path validator
(cryptography's WebPKI verifier), plus the `certs` command's files and outputs."""

from __future__ import annotations

import base64
import datetime as dt
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError
from dra_affinity.webhook import certs

from tests.cli import run
from tests.webhook.support import HOSTNAME, NAMESPACE, SERVICE

NOW = dt.datetime.now(dt.UTC)


def _verify(bundle: tuple[x509.Certificate, ...], leaf: x509.Certificate, name: str = HOSTNAME,
            at: dt.datetime = NOW) -> None:
    verifier = PolicyBuilder().store(Store(list(bundle))).time(at).build_server_verifier(
        x509.DNSName(name))
    verifier.verify(leaf, [])


def test_generated_serving_certificate_verifies_for_every_service_name() -> None:
    made = certs.generate(SERVICE, NAMESPACE, now=NOW)
    assert made.dns_names == (SERVICE, f"{SERVICE}.{NAMESPACE}", HOSTNAME, f"{HOSTNAME}.cluster.local")
    for name in made.dns_names:
        _verify(made.bundle, made.serving.certificate, name)
    with pytest.raises(VerificationError):
        _verify(made.bundle, made.serving.certificate, "other.dra-system.svc")
    leaf = made.serving.certificate
    assert leaf.not_valid_before_utc <= NOW - dt.timedelta(minutes=59)  # back-dated for skew
    assert abs(leaf.not_valid_after_utc - NOW - certs.SERVING_VALIDITY) < dt.timedelta(seconds=1)
    ca = made.bundle[0]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_rotation_with_the_same_ca_keeps_the_bundle() -> None:
    first = certs.generate(SERVICE, NAMESPACE, now=NOW)
    later = NOW + dt.timedelta(days=300)
    second = certs.rotate(first, now=later)
    assert second.bundle == first.bundle
    assert second.serving.certificate.serial_number != first.serving.certificate.serial_number
    assert second.dns_names == first.dns_names
    _verify(first.bundle, second.serving.certificate, at=later)  # the published caBundle still works


def test_rotation_to_a_new_ca_overlaps_old_and_new() -> None:
    first = certs.generate(SERVICE, NAMESPACE, now=NOW)
    second = certs.rotate(first, new_ca=True, now=NOW)
    assert len(second.bundle) == 2 and second.bundle[1] == first.bundle[0]
    # with the new bundle published, the API server accepts pods not yet reloaded and reloaded ones
    _verify(second.bundle, first.serving.certificate)
    _verify(second.bundle, second.serving.certificate)
    with pytest.raises(VerificationError):  # ...which the old bundle alone would not
        _verify(first.bundle, second.serving.certificate)


def test_a_ca_about_to_expire_is_replaced_and_dropped_once_expired() -> None:
    short = certs.generate(SERVICE, NAMESPACE, now=NOW, ca_validity=dt.timedelta(days=30),
                           validity=dt.timedelta(days=20))
    renewed = certs.rotate(short, now=NOW)  # a 365-day leaf would outlive the 30-day CA
    assert renewed.ca is not None and renewed.ca.certificate != short.bundle[0]
    assert len(renewed.bundle) == 2
    much_later = certs.rotate(renewed, now=NOW + dt.timedelta(days=40))
    assert short.bundle[0] not in much_later.bundle  # expired CAs leave the bundle


def test_leaf_never_outlives_its_ca() -> None:
    ca = certs.create_ca("ca", now=NOW, validity=dt.timedelta(days=10))
    leaf = certs.issue(ca, "x", dns_names=["x"], now=NOW, validity=dt.timedelta(days=365))
    assert leaf.certificate.not_valid_after_utc <= ca.certificate.not_valid_after_utc


def test_rsa_keys_work_too() -> None:
    made = certs.generate(SERVICE, NAMESPACE, now=NOW, key_type="rsa-2048")
    _verify(made.bundle, made.serving.certificate)


def test_write_and_read_round_trip_with_private_modes(tmp_path: Path) -> None:
    made = certs.generate(SERVICE, NAMESPACE, now=NOW)
    written = certs.write_dir(made, tmp_path)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in written}
    assert modes == {"ca.key": 0o600, "ca.crt": 0o644, "tls.key": 0o600, "tls.crt": 0o644}
    back = certs.read_dir(tmp_path)
    assert isinstance(back, certs.CertSet)
    assert back.serving.certificate == made.serving.certificate and back.bundle == made.bundle
    assert back.ca is not None and back.ca.certificate == made.bundle[0]
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


def test_mismatched_or_missing_files_are_reported(tmp_path: Path) -> None:
    certs.write_dir(certs.generate(SERVICE, NAMESPACE, now=NOW), tmp_path)
    other = certs.generate(SERVICE, NAMESPACE, now=NOW)
    (tmp_path / "tls.key").write_bytes(other.serving.key_pem())
    problem = certs.read_dir(tmp_path)
    assert isinstance(problem, certs.CertProblem) and "does not match" in problem.message
    (tmp_path / "tls.crt").unlink()
    problem = certs.read_dir(tmp_path)
    assert isinstance(problem, certs.CertProblem) and "tls.crt" in problem.message


def test_cli_generate_prints_the_ca_bundle_and_refuses_to_overwrite(tmp_path: Path) -> None:
    result = run("certs", "generate", "--service", SERVICE, "--namespace", NAMESPACE,
                 "--out-dir", str(tmp_path))
    assert result.code == 0
    bundle = base64.b64decode(result.out.strip())
    assert bundle == (tmp_path / "ca.crt").read_bytes()
    assert "mode 600" in result.err and HOSTNAME in result.err
    again = run("certs", "generate", "--service", SERVICE, "--namespace", NAMESPACE,
                "--out-dir", str(tmp_path))
    assert again.code == 2 and "certs rotate" in again.err


def test_cli_secret_manifest_and_rotate(tmp_path: Path) -> None:
    result = run("certs", "generate", "--service", SERVICE, "--namespace", NAMESPACE,
                 "--out-dir", str(tmp_path), "--secret", "webhook-tls")
    secret = yaml.safe_load(result.out)
    assert secret["kind"] == "Secret" and secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"] == {"name": "webhook-tls", "namespace": NAMESPACE,
                                  "labels": {"app.kubernetes.io/name": "dra-affinity-webhook"}}
    assert set(secret["data"]) == {"ca.crt", "tls.crt", "tls.key"}  # never the CA key
    assert base64.b64decode(secret["data"]["tls.crt"]) == (tmp_path / "tls.crt").read_bytes()
    assert "caBundle: " in result.err

    before = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    rotated = run("certs", "rotate", "--out-dir", str(tmp_path), "--new-ca", "--secret", "webhook-tls")
    assert rotated.code == 0 and "ca.crt now holds 2" in rotated.err
    rotated_secret = yaml.safe_load(rotated.out)
    assert rotated_secret["metadata"]["namespace"] == NAMESPACE  # from the certificate's names
    after = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert after.serial_number != before.serial_number
    assert certs.san_values(after, x509.DNSName) == certs.san_values(before, x509.DNSName)
    bundle = base64.b64decode(rotated_secret["data"]["ca.crt"])
    assert len(x509.load_pem_x509_certificates(bundle)) == 2


def test_cli_rotate_reports_a_broken_directory(tmp_path: Path) -> None:
    result = run("certs", "rotate", "--out-dir", str(tmp_path))
    assert result.code == 2 and "cannot read certificates" in result.err


def test_key_writes_never_follow_a_planted_link(tmp_path: Path) -> None:
    """The temporary key file is created exclusively under a random name (no symlink race)."""
    import os

    from dra_affinity.webhook.certs import _atomic_write

    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    for pid_guess in (os.getpid(), 1, 2):
        (tmp_path / f".tls.key.tmp-{pid_guess}").symlink_to(victim)
    target = tmp_path / "tls.key"
    _atomic_write(target, b"secret", 0o600)
    assert target.read_bytes() == b"secret"
    assert victim.read_bytes() == b"untouched"
    assert oct(target.stat().st_mode & 0o777) == "0o600"


def test_san_values_reads_each_kind_and_none_without_the_extension() -> None:
    ca = certs.create_ca("test-ca", now=NOW)
    leaf = certs.issue(ca, "w", dns_names=("a.svc", "b.svc"), ip_addresses=("127.0.0.1", "::1"),
                       now=NOW).certificate
    assert certs.san_values(leaf, x509.DNSName) == ("a.svc", "b.svc")
    assert certs.san_values(leaf, x509.IPAddress) == ("127.0.0.1", "::1")
    bare = certs.issue(ca, "w", now=NOW).certificate
    assert certs.san_values(bare, x509.DNSName) == certs.san_values(bare, x509.IPAddress) == ()
