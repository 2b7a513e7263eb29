"""TLS of the real server: rotation under load, new-CA overlap, client certificates, TLS floor."""

from __future__ import annotations

import functools
import os
import shutil
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from dra_affinity.webhook import certs

from tests.cli import SCRIPT
from tests.helpers import entry, slice_doc
from tests.webhook.support import (
    Background,
    Server,
    SvcConnection,
    client_context,
    generate_certs,
    review,
    start_server,
    stop_server,
)


def _rotate(cert_dir: Path, *extra: str) -> None:
    subprocess.run([str(SCRIPT), "certs", "rotate", "--out-dir", str(cert_dir), *extra],
                   capture_output=True, timeout=60, check=True)


def _publish(source: Path, target: Path) -> None:
    """What a Secret volume update does: each file replaced atomically."""
    for name in ("ca.crt", "tls.key", "tls.crt"):
        tmp = target / f".{name}.new"
        shutil.copyfile(source / name, tmp)
        os.replace(tmp, target / name)


def _wait_for_serial(server: Server, context: ssl.SSLContext, serial: int, timeout: float = 20.0) -> None:
    """Until 12 new connections in a row (so both workers) present `serial`."""
    deadline = time.monotonic() + timeout
    streak = 0
    while streak < 12:
        assert time.monotonic() < deadline, "the new certificate was not picked up"
        streak = streak + 1 if server.served_serial(context) == serial else 0
        time.sleep(0.02)


class Load(Background):
    """Requests flowing while the certificates change: fresh connections and one keep-alive one."""

    def __init__(self, server: Server, contexts: list[ssl.SSLContext]) -> None:
        self.server = server
        self.contexts = contexts  # the last one is used (tests swap in a wider trust store)
        self.failures: list[str] = []
        self.served = 0
        self.serials: set[int] = set()
        self._lock = threading.Lock()
        super().__init__([functools.partial(self._run, i == 0) for i in range(4)])

    def _run(self, keep_alive: bool) -> None:
        conn: SvcConnection | None = None
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                if conn is None:
                    conn = SvcConnection(self.server.port, self.contexts[-1])
                body = self.server.review(review(slice_doc([entry("a")])), conn=conn)
                assert body["response"]["allowed"] is True
                with self._lock:
                    self.served += 1
                    self.serials.add(conn.peer_serial())
                if not keep_alive or i % 50 == 0:
                    conn.close()
                    conn = None
            except Exception as exc:
                with self._lock:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()


def test_rotation_while_requests_flow_drops_nothing(tmp_path: Path) -> None:
    cert_dir = generate_certs(tmp_path / "certs")
    server = start_server(tmp_path, cert_dir, "--cert-check-interval", "0.2")
    try:
        context = client_context(cert_dir / "ca.crt")
        first = server.served_serial(context)
        with Load(server, [context]) as load:
            time.sleep(0.3)
            _rotate(cert_dir)  # same CA: the API server's caBundle does not change
            second = certs.read_dir(cert_dir)
            assert isinstance(second, certs.CertSet)
            _wait_for_serial(server, context, second.serving.certificate.serial_number)
            time.sleep(0.3)

            # A new CA, as an operator rolls it out: rotate in a working copy, publish the
            # bundle (old + new CA) to the API server, then update the mounted Secret.
            staging = tmp_path / "staging"
            shutil.copytree(cert_dir, staging)
            _rotate(staging, "--new-ca")
            load.contexts.append(client_context(staging / "ca.crt"))
            _publish(staging, cert_dir)
            third = certs.read_dir(cert_dir)
            assert isinstance(third, certs.CertSet) and len(third.bundle) == 2
            _wait_for_serial(server, load.contexts[-1], third.serving.certificate.serial_number)
            time.sleep(0.3)
        assert load.failures == []
        assert load.served > 50
        assert {first, second.serving.certificate.serial_number,
                third.serving.certificate.serial_number} <= load.serials
        server.retrust()
        ready = server.request("GET", "/readyz").json()
        assert ready["ready"] is True
        with pytest.raises(ssl.SSLError):  # the old CA alone no longer verifies what is served
            server.served_serial(context)
    finally:
        stop_server(server)


def test_client_certificates_and_tls_floor(tmp_path: Path) -> None:
    cert_dir = generate_certs(tmp_path / "certs")
    apiserver_ca = certs.create_ca("apiserver-client-ca")
    client = certs.issue(apiserver_ca, "kube-apiserver", usage="client")
    (tmp_path / "client-ca.crt").write_bytes(apiserver_ca.cert_pem())
    (tmp_path / "client.crt").write_bytes(client.cert_pem())
    (tmp_path / "client.key").write_bytes(client.key_pem())
    pair = (tmp_path / "client.crt", tmp_path / "client.key")
    server = start_server(tmp_path, cert_dir, "--client-ca-file", str(tmp_path / "client-ca.crt"),
                          "--tls-min-version", "1.3", workers=1, client_cert=pair)
    try:
        assert server.review(review(slice_doc([entry("a")])))["response"]["allowed"] is True

        anonymous = SvcConnection(server.port, client_context(cert_dir / "ca.crt"))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            anonymous.request("GET", "/healthz")
            anonymous.getresponse().read()
        anonymous.close()

        old_tls = client_context(cert_dir / "ca.crt", pair)
        old_tls.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(ssl.SSLError):
            SvcConnection(server.port, old_tls).connect()

        wrong_name = SvcConnection(server.port, client_context(cert_dir / "ca.crt", pair),
                                   server_hostname="other.dra-system.svc")
        with pytest.raises(ssl.SSLCertVerificationError):
            wrong_name.connect()
    finally:
        stop_server(server)


def _client_pair(tmp_path: Path, name: str, ca: certs.Issued) -> tuple[Path, Path]:
    client = certs.issue(ca, "kube-apiserver", usage="client")
    (tmp_path / f"{name}.crt").write_bytes(client.cert_pem())
    (tmp_path / f"{name}.key").write_bytes(client.key_pem())
    return tmp_path / f"{name}.crt", tmp_path / f"{name}.key"


def _refused(server: Server, context: ssl.SSLContext) -> bool:
    """True when the server refuses the connection during (or right after) the handshake:
    with TLS 1.3 the client learns that its certificate was rejected on its first read."""
    conn = SvcConnection(server.port, context)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status != 200
    except (ssl.SSLError, ConnectionError):
        return True
    finally:
        conn.close()


def test_mtls_refuses_other_callers_and_reloads_the_client_ca(tmp_path: Path) -> None:
    """The mTLS overlay's configuration: only certificates from the client CA get through; the
    CA file is watched with the serving pair; the plain metrics port needs no certificate."""
    cert_dir = generate_certs(tmp_path / "certs")
    trusted_ca, other_ca = certs.create_ca("apiserver-client-ca"), certs.create_ca("someone-else")
    ca_file = tmp_path / "client-ca.crt"
    ca_file.write_bytes(trusted_ca.cert_pem())
    trusted = _client_pair(tmp_path, "trusted", trusted_ca)
    stranger = _client_pair(tmp_path, "other", other_ca)
    server = start_server(tmp_path, cert_dir, "--client-ca-file", str(ca_file),
                          "--cert-check-interval", "0.2", client_cert=trusted)
    try:
        assert server.review(review(slice_doc([entry("a")])))["response"]["allowed"] is True
        assert _refused(server, client_context(cert_dir / "ca.crt"))  # no certificate
        assert _refused(server, client_context(cert_dir / "ca.crt", stranger))  # another CA
        assert server.plain_request("GET", "/readyz").status == 200  # the kubelet's probe
        assert "# TYPE dra_affinity_" in server.metrics()  # served without a client certificate

        # The API server's client CA is rotated: the new CA file is picked up without a restart.
        tmp = tmp_path / ".client-ca.new"
        tmp.write_bytes(other_ca.cert_pem())
        os.replace(tmp, ca_file)
        deadline = time.monotonic() + 20
        streak = 0
        while streak < 12:  # 12 new connections in a row refused: both workers reloaded
            assert time.monotonic() < deadline, "the new client CA was not picked up"
            streak = streak + 1 if _refused(server, client_context(cert_dir / "ca.crt", trusted)) else 0
            time.sleep(0.02)
        allowed = client_context(cert_dir / "ca.crt", stranger)
        conn = SvcConnection(server.port, allowed)
        try:
            body = server.review(review(slice_doc([entry("a")])), conn=conn)
            assert body["response"]["allowed"] is True
        finally:
            conn.close()
    finally:
        stop_server(server)
