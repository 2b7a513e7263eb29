"""`dra-affinity certs` and `serve` as a user runs them for a local smoke test.

The documented smoke test: `certs generate --ip 127.0.0.1`, `serve`, then an HTTPS client
that trusts `ca.crt` and checks the certificate for the address it dialled (as
`curl --cacert ca.crt https://127.0.0.1:PORT/healthz` does).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import urllib.request
from pathlib import Path

from cryptography import x509

from tests.cli import SCRIPT, run
from tests.webhook.support import LOOPBACK, NAMESPACE, SERVICE, free_port, start_server, stop_server


def _certs(out_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "certs", "generate", "--service", SERVICE, "--namespace", NAMESPACE,
                           "--out-dir", str(out_dir), *extra], capture_output=True, text=True, timeout=60)


def test_ip_sans_and_a_local_https_smoke_test(tmp_path: Path) -> None:
    made = _certs(tmp_path / "certs", "--ip", LOOPBACK, "--ip", "::1")
    assert made.returncode == 0, made.stderr
    cert = x509.load_pem_x509_certificate((tmp_path / "certs" / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1", "::1"]
    assert "127.0.0.1" not in sans.get_values_for_type(x509.DNSName)
    server = start_server(tmp_path, tmp_path / "certs", workers=1, threads=1)
    try:
        context = ssl.create_default_context(cafile=str(tmp_path / "certs" / "ca.crt"))
        with urllib.request.urlopen(f"https://{LOOPBACK}:{server.port}/healthz", context=context,
                                    timeout=10) as reply:
            assert reply.status == 200
        # every log line is JSON, gunicorn's start banner included
        first = server.log_path.read_text().splitlines()[0]
        assert json.loads(first)["msg"].startswith("Starting gunicorn"), first
    finally:
        stop_server(server)


def test_an_address_given_as_a_dns_name_is_a_usage_error(tmp_path: Path) -> None:
    made = _certs(tmp_path / "c", "--dns-name", "127.0.0.1")
    assert made.returncode == 2 and "give it with --ip" in made.stderr
    bad = _certs(tmp_path / "d", "--ip", "localhost")
    assert bad.returncode == 2 and "not an IPv4 or IPv6 address" in bad.stderr


def test_rotate_without_a_new_ca_says_the_ca_is_unchanged(tmp_path: Path) -> None:
    assert _certs(tmp_path / "c", "--ip", LOOPBACK).returncode == 0
    before = (tmp_path / "c" / "ca.crt").read_bytes()
    rotated = subprocess.run([str(SCRIPT), "certs", "rotate", "--out-dir", str(tmp_path / "c")],
                             capture_output=True, text=True, timeout=60)
    assert rotated.returncode == 0, rotated.stderr
    assert "wrote" in rotated.stderr and "ca.crt" not in rotated.stderr.split("unchanged:")[0]
    assert "unchanged: ca.key, ca.crt (same CA)" in rotated.stderr
    assert (tmp_path / "c" / "ca.crt").read_bytes() == before
    cert = x509.load_pem_x509_certificate((tmp_path / "c" / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(a) for a in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]  # kept
    new_ca = subprocess.run([str(SCRIPT), "certs", "rotate", "--out-dir", str(tmp_path / "c"), "--new-ca"],
                            capture_output=True, text=True, timeout=60)
    assert "wrote" in new_ca.stderr and "ca.crt" in new_ca.stderr and "unchanged" not in new_ca.stderr


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    assert _certs(tmp_path / "c").returncode == 0
    port = free_port()
    with socket.socket() as taken:
        taken.bind((LOOPBACK, port))
        taken.listen()
        proc = subprocess.run([str(SCRIPT), "serve", "--cert-dir", str(tmp_path / "c"), "--host", LOOPBACK,
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"cannot listen on {LOOPBACK}:{port}: Address already in use" in proc.stderr


def test_log_level_choices_are_shown_as_accepted() -> None:
    out = run("serve", "--help")
    assert "[debug|info|warning|error]" in out.out and "default: info" in out.out


def test_group_help_lines_are_whole_sentences() -> None:
    for group in ([], ["cel"], ["certs"], ["policy"]):
        out = run(*group, "--help")
        listing = out.out.split("Commands:", 1)[1]
        assert "..." not in listing, (group, listing)
