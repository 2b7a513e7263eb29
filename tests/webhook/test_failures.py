"""Failure modes of the real server (gunicorn, TLS, the shipped worker): a worker killed under
load, a broken certificate on reload, SIGTERM with a request in flight. (The pool watch
dropping and resuming is in test_pools.py.)"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dra_affinity.webhook import certs

from tests.cli import REPO, SCRIPT
from tests.helpers import entry, slice_doc
from tests.webhook.support import (
    HOSTNAME,
    LOOPBACK,
    NAMESPACE,
    SERVICE,
    Background,
    Server,
    SvcConnection,
    clean_env,
    free_port,
    generate_certs,
    metric_value,
    plain_gunicorn,
    review,
    start_server,
    stop_server,
)


def _workers(server: Server) -> set[int]:
    """The gunicorn master's child processes (its workers)."""
    path = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children")
    return {int(p) for p in path.read_text().split()}


def _eventually(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} not reached"
        time.sleep(0.05)


class Load(Background):
    """Clients sending reviews on fresh connections (so the kernel spreads them over the
    workers); records each outcome with the time it ended."""

    def __init__(self, server: Server, clients: int = 4) -> None:
        self.server = server
        self.ok: list[float] = []
        self.failed: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        super().__init__([self._run] * clients)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                body = self.server.review(review(slice_doc([entry("a")])))
                assert body["response"]["allowed"] is True
                with self._lock:
                    self.ok.append(time.monotonic())
            except Exception as exc:
                with self._lock:
                    self.failed.append((time.monotonic(), f"{type(exc).__name__}: {exc}"))


def test_a_worker_killed_under_load_is_replaced_and_the_other_keeps_serving(tmp_path: Path,
                                                                          cert_dir: Path) -> None:
    server = start_server(tmp_path, cert_dir, workers=2, threads=2)
    try:
        before = _workers(server)
        assert len(before) == 2
        victim = min(before)
        with Load(server) as load:
            _eventually(lambda: len(load.ok) >= 20, what="load running")
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
            _eventually(lambda: len(_workers(server) - before) == 1, what="a replacement worker")
            ok_before = len(load.ok)
            _eventually(lambda: len(load.ok) >= ok_before + 40, what="requests after the replacement")
            # the new worker (once booted) serves its share: keep the load on until it has
            (new,) = _workers(server) - before
            server.log_lines(until=lambda ls: any(x.get("pid") == new and x.get("uid") for x in ls),
                             timeout=30)
        after = _workers(server)
        assert victim not in after and len(after) == 2 and new in after
        # Only requests that were on the killed worker's connections failed (at most one per
        # client, at the moment of the kill); everything else, during and after, succeeded.
        assert len(load.failed) <= len(load.threads), load.failed
        assert all(at >= killed_at for at, _ in load.failed)
        assert any(x.get("pid") == new and x.get("uid") for x in server.log_lines())
        # The metrics still add up across the live workers. A killed worker takes its last
        # unwritten batch of samples with it (events.FLUSH_INTERVAL), and how many requests
        # that is depends on the machine's load, so the bound is on what it cannot have served:
        # every review answered a second or more after the kill came from a live worker and
        # is counted once that worker has written its batch. Nothing is counted twice.
        served_by_live_workers = sum(1 for at in load.ok if at >= killed_at + 1.0)

        def allowed() -> float:
            return metric_value(server.metrics(), "dra_affinity_admission_requests_total",
                                {"decision": "allowed"})

        _eventually(lambda: allowed() >= served_by_live_workers, what="the live workers' samples")
        assert allowed() <= len(load.ok) + len(load.failed)
    finally:
        stop_server(server)


def test_a_broken_certificate_on_reload_keeps_the_old_one_serving_and_says_so(tmp_path: Path) -> None:
    cert_dir = generate_certs(tmp_path / "certs")
    server = start_server(tmp_path, cert_dir, "--cert-check-interval", "0.1", workers=2)
    try:
        served = certs.read_dir(cert_dir)
        assert isinstance(served, certs.CertSet)
        serial = served.serving.certificate.serial_number
        good_cert = (cert_dir / "tls.crt").read_bytes()

        broken = cert_dir / ".tls.crt.new"
        broken.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        os.replace(broken, cert_dir / "tls.crt")  # as a Secret volume update lands

        def both_workers_failed() -> bool:
            for _ in range(4):  # new connections are what make a worker check its files
                assert server.served_serial() == serial
            lines = server.log_lines()
            return len({x["pid"] for x in lines if x.get("msg", "").startswith(
                "certificate reload failed")}) >= 2

        _eventually(both_workers_failed, what="both workers reporting the failed reload")
        for _ in range(10):  # still serving, with the old certificate
            assert server.allowed_review() == serial
        lines = server.log_lines()
        failures = [x for x in lines if x.get("msg", "").startswith("certificate reload failed")]
        assert failures[0]["level"] == "error" and str(cert_dir / "tls.crt") in failures[0]["error"]
        per_process = [x["pid"] for x in failures]
        assert len(set(per_process)) == len(per_process)  # once per worker, not once per check
        ready = server.plain_request("GET", "/readyz").json()
        assert ready["ready"] is True and any(t["last_error"] for t in ready["tls"])
        assert metric_value(server.metrics(), "dra_affinity_tls_certificate_reloads_total",
                            {"result": "failure"}) >= 1

        # A worker started while the files are broken (here: the replacement of a killed one)
        # inherits the master's last good context instead of failing to boot.
        before = _workers(server)
        os.kill(min(before), signal.SIGKILL)
        _eventually(lambda: len(_workers(server) - before) == 1, what="a replacement worker")
        (replacement,) = _workers(server) - before

        def replacement_serves_the_old_certificate() -> bool:
            assert server.allowed_review() == serial
            return any(x.get("pid") == replacement and x.get("uid") for x in server.log_lines())

        _eventually(replacement_serves_the_old_certificate, timeout=30, what="the replacement serving")
        assert not any("Exception in worker process" in x.get("msg", "") for x in server.log_lines())

        # Repaired: the next change is loaded again.
        rotated = tmp_path / "rotated"
        shutil.copytree(cert_dir, rotated)
        (rotated / "tls.crt").write_bytes(good_cert)
        subprocess.run([str(SCRIPT), "certs", "rotate", "--out-dir", str(rotated)],
                       capture_output=True, timeout=60, check=True)
        new = certs.read_dir(rotated)
        assert isinstance(new, certs.CertSet)
        for name in ("tls.key", "tls.crt"):
            tmp = cert_dir / f".{name}.new"
            shutil.copyfile(rotated / name, tmp)
            os.replace(tmp, cert_dir / name)

        _eventually(lambda: server.served_serial() == new.serving.certificate.serial_number,
                    what="the repaired certificate")
    finally:
        stop_server(server)


def test_sigterm_drains_the_request_in_flight_and_refuses_new_connections(tmp_path: Path,
                                                                          cert_dir: Path) -> None:
    # Long request deadline: the test holds a request open across the shutdown on purpose.
    server = start_server(tmp_path, cert_dir, workers=1, threads=2,
                          env={"DRA_AFFINITY_REQUEST_TIMEOUT": "60"})
    try:
        body = json.dumps(review(slice_doc([entry("a")]), uid="in-flight")).encode()
        idle = server.connection()  # an idle keep-alive connection must not hold the drain up
        assert server.request("GET", "/healthz", conn=idle).status == 200

        conn = SvcConnection(server.port, server.context())
        conn.connect()
        head = (f"POST /validate HTTP/1.1\r\nHost: {HOSTNAME}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        conn.sock.sendall(head + body[:10])  # the request is in a thread, reading its body
        time.sleep(0.5)
        server.proc.send_signal(signal.SIGTERM)

        def refused() -> bool:
            try:
                socket.create_connection((LOOPBACK, server.port), timeout=2).close()
            except ConnectionRefusedError:
                return True
            return False

        _eventually(refused, what="new connections refused")
        assert server.proc.poll() is None  # still draining
        conn.sock.sendall(body[10:])
        response = http.client.HTTPResponse(conn.sock)
        response.begin()
        assert response.status == 200
        reply = json.loads(response.read())
        assert reply["response"]["uid"] == "in-flight" and reply["response"]["allowed"] is True
        conn.close()
        idle.close()
        server.proc.wait(timeout=30)
        assert server.proc.returncode == 0
    finally:
        stop_server(server)


def test_a_worker_booted_without_a_loadable_certificate_drops_connections_until_it_loads(
        tmp_path: Path) -> None:
    """Plain gunicorn started while the certificate files are broken: each TLS connection is
    dropped (the worker stays up, `/readyz` on the plain port says why), and the first
    connection after the files are repaired is served."""
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    (cert_dir / "tls.crt").write_bytes(b"not a certificate")
    (cert_dir / "tls.key").write_bytes(b"not a key")
    metrics_port = free_port()
    command, env, port = plain_gunicorn(tmp_path, cert_dir, f"127.0.0.1:{metrics_port}")
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                env=clean_env(env), start_new_session=True)
    server = Server(port, proc, cert_dir, log_path, metrics_port=metrics_port)
    try:
        def worker_logged_its_failure() -> bool:
            assert proc.poll() is None, log_path.read_text()
            return sum("serving certificate not loaded" in x.get("msg", "") for x in server.log_lines()) >= 2

        _eventually(worker_logged_its_failure, what="the master and the worker logging the failed load")
        workers = _workers(server)
        for _ in range(3):
            with socket.create_connection((LOOPBACK, port), timeout=10) as raw:
                raw.sendall(b"\x16\x03\x01\x00\x05hello")  # a ClientHello's start: no handshake
                with contextlib.suppress(ConnectionResetError):  # reset: its bytes unread
                    assert raw.recv(1024) == b""  # dropped
        assert _workers(server) == workers  # the same worker, still up
        ready = server.plain_request("GET", "/readyz")
        assert ready.status == 503 and "serving certificate not loaded" in ready.json()["problems"]
        (tls_state,) = ready.json()["tls"]
        assert tls_state["loaded"] is False and "cannot load" in tls_state["last_error"]

        certs.write_dir(certs.generate(SERVICE, NAMESPACE), cert_dir)

        def served() -> bool:
            try:
                return server.request("GET", "/healthz").status == 200
            except (OSError, ssl.SSLError):
                return False

        _eventually(served, what="served once repaired")
        assert server.allowed_review()
        assert server.plain_request("GET", "/readyz").status == 200
        assert not any("Exception in worker process" in x.get("msg", "") for x in server.log_lines())
    finally:
        stop_server(server)
