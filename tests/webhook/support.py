"""Real servers for the webhook tests: `dra-affinity serve` under gunicorn on a loopback port,
and a client that trusts the webhook's CA the way the API server does (by the Service DNS name,
sent as SNI and checked against the certificate, while connecting to 127.0.0.1)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_affinity.webhook.events import FLUSH_INTERVAL

from tests.cli import REPO, SCRIPT
from tests.helpers import entry, slice_doc

SERVICE, NAMESPACE = "dra-affinity-webhook", "dra-system"
HOSTNAME = f"{SERVICE}.{NAMESPACE}.svc"
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


def free_port(host: str = LOOPBACK) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def generate_certs(out_dir: Path) -> Path:
    proc = subprocess.run(
        [str(SCRIPT), "certs", "generate", "--service", SERVICE, "--namespace", NAMESPACE,
         "--out-dir", str(out_dir)], capture_output=True, timeout=60, check=True)
    assert proc.stdout.strip(), "certs generate prints the caBundle"
    return out_dir


class SvcConnection(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, verifying the certificate for the Service name (SNI + hostname)."""

    def __init__(self, port: int, context: ssl.SSLContext, server_hostname: str = HOSTNAME,
                 timeout: float = 10.0) -> None:
        super().__init__(LOOPBACK, port, context=context, timeout=timeout)
        self._server_hostname = server_hostname
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        # as Go's net/http (the API server) does: no Nagle delay between headers and body
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=self._server_hostname)

    def peer_serial(self) -> int:
        from cryptography import x509

        assert isinstance(self.sock, ssl.SSLSocket)
        der = self.sock.getpeercert(binary_form=True)
        assert der is not None
        return x509.load_der_x509_certificate(der).serial_number


@dataclass
class Reply:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def client_context(ca_file: Path, client_cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))
    if client_cert is not None:
        context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
    return context


@dataclass
class Server:
    port: int
    proc: subprocess.Popen[bytes]
    cert_dir: Path
    log_path: Path
    client_cert: tuple[Path, Path] | None = None
    metrics_port: int | None = None
    """The plain-HTTP listener of `/metrics` and the probes."""
    _context: ssl.SSLContext | None = field(default=None, repr=False)

    def context(self) -> ssl.SSLContext:
        if self._context is None:
            self._context = client_context(self.cert_dir / "ca.crt", self.client_cert)
        return self._context

    def retrust(self) -> None:
        """Re-read `ca.crt` (after a rotation that changed the CA bundle)."""
        self._context = None

    def connection(self, timeout: float = 10.0) -> SvcConnection:
        return SvcConnection(self.port, self.context(), timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: Mapping[str, str] | None = None, conn: SvcConnection | None = None) -> Reply:
        own = conn is None
        connection = conn or self.connection()
        try:
            connection.request(method, path, body=body, headers=dict(headers or {}))
            response = connection.getresponse()
            data = response.read()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            if own:
                connection.close()

    def served_serial(self, context: ssl.SSLContext | None = None) -> int:
        """The serial of the certificate a new connection is served (it makes the worker that
        accepts it check its certificate files, when due)."""
        conn = SvcConnection(self.port, context or self.context())
        try:
            conn.connect()
            return conn.peer_serial()
        finally:
            conn.close()

    def allowed_review(self) -> int:
        """A clean slice reviewed on a new connection (asserted allowed); the serial served."""
        conn = self.connection()
        try:
            assert self.review(review(slice_doc([entry("a")])), conn=conn)["response"]["allowed"] is True
            return conn.peer_serial()
        finally:
            conn.close()

    def review(self, review: Mapping[str, Any], conn: SvcConnection | None = None) -> dict[str, Any]:
        reply = self.request("POST", "/validate", json.dumps(review).encode(),
                             {"Content-Type": "application/json"}, conn)
        assert reply.status == 200, reply.body
        assert reply.headers["content-type"].startswith("application/json")
        body = reply.json()
        assert isinstance(body, dict)
        return body

    def log_lines(self, until: Callable[[list[dict[str, Any]]], bool] | None = None,
                  timeout: float = 10.0) -> list[dict[str, Any]]:
        """The server's JSON log lines (gunicorn's first banner line is not JSON).

        Request lines are written in batches, up to `dra_affinity.webhook.events.FLUSH_INTERVAL` after the
        reply: with `until`, wait for the lines to satisfy it, then for one more batch (so a
        line that should not be there has had its chance to appear), and return them.
        """
        deadline = time.monotonic() + timeout
        lines = list(iter_json_lines(self.log_path))
        if until is None:
            return lines
        while not until(lines) and time.monotonic() < deadline:
            time.sleep(0.02)
            lines = list(iter_json_lines(self.log_path))
        time.sleep(3 * FLUSH_INTERVAL)
        return list(iter_json_lines(self.log_path))

    def plain_request(self, method: str, path: str, timeout: float = 10.0, host: str = LOOPBACK) -> Reply:
        """A request over plain HTTP to the metrics listener (at `host`, a loopback address)."""
        assert self.metrics_port is not None, "started without a metrics listener"
        connection = http.client.HTTPConnection(host, self.metrics_port, timeout=timeout)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            data = response.read()
            return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
        finally:
            connection.close()

    def metrics(self) -> str:
        reply = self.plain_request("GET", "/metrics")
        assert reply.status == 200, reply.body
        return reply.body.decode()


class Background:
    """Client threads started on entering a `with` block; `stop` is set and they are joined on
    leaving it. Subclasses pass the threads' targets, which loop until `stop` is set."""

    def __init__(self, targets: list[Callable[[], None]]) -> None:
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=t, daemon=True) for t in targets]

    def __enter__(self) -> Background:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=15)


def start_server(tmp: Path, cert_dir: Path, *args: str, workers: int = 2, threads: int = 2,
                 client_cert: tuple[Path, Path] | None = None,
                 env: Mapping[str, str] | None = None) -> Server:
    """`dra-affinity serve` on a free loopback port, ready (GET /readyz is 200) on return."""
    port, metrics_port = free_port(), free_port()
    command = [str(SCRIPT), "serve", "--cert-dir", str(cert_dir), "--host", LOOPBACK, "--port", str(port),
               "--metrics-port", str(metrics_port),
               "--workers", str(workers), "--threads", str(threads), "--metrics-dir", str(tmp / f"m-{port}"),
               *args]
    return launch(command, port, tmp, cert_dir, client_cert=client_cert, metrics_port=metrics_port,
                  env=env)


def plain_gunicorn(tmp: Path, cert_dir: Path, metrics_bind: str) -> tuple[list[str], dict[str, str], int]:
    """The command, extra environment and admission port of the documented deployment without
    the CLI, `gunicorn -c webhook/gunicorn_conf.py` (one worker), with `metrics_bind` as
    `DRA_AFFINITY_METRICS_BIND`."""
    gunicorn = Path(sys.executable).parent / "gunicorn"
    assert gunicorn.exists(), gunicorn
    port = free_port()
    (tmp / "metrics").mkdir()
    env = {"DRA_AFFINITY_CERT_DIR": str(cert_dir), "DRA_AFFINITY_BIND": f"127.0.0.1:{port}",
           "DRA_AFFINITY_METRICS_BIND": metrics_bind,
           "DRA_AFFINITY_WORKERS": "1", "PROMETHEUS_MULTIPROC_DIR": str(tmp / "metrics")}
    return [str(gunicorn), "-c", "webhook/gunicorn_conf.py"], env, port


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its `DRA_AFFINITY_*`/`PROMETHEUS_*`, plus `extra`."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PROMETHEUS_", "DRA_AFFINITY_"))}
    return {**base, **(extra or {})}


def launch(command: list[str], port: int, tmp: Path, cert_dir: Path, *,
           env: Mapping[str, str] | None = None, client_cert: tuple[Path, Path] | None = None,
           metrics_port: int | None = None) -> Server:
    """Start `command` (a server on `port`, metrics on `metrics_port`) in its own session and
    wait until it is ready."""
    log_path = tmp / f"serve-{port}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                env=clean_env(env), start_new_session=True)
    server = Server(port, proc, cert_dir, log_path, client_cert, metrics_port)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{log_path.read_text()}")
        try:
            if server.request("GET", "/readyz").status == 200:
                return server
        except (OSError, ssl.SSLError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    stop_server(server)
    raise AssertionError(f"server not ready in {START_TIMEOUT}s:\n{log_path.read_text()}")


def stop_server(server: Server) -> None:
    """SIGTERM (gunicorn's graceful stop), then SIGKILL to the process group we created."""
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(timeout=5)


def review(obj: Mapping[str, Any] | None, *, operation: str = "CREATE",
           old: Mapping[str, Any] | None = None, dry_run: bool = False, uid: str | None = None,
           kind: tuple[str, str, str] = ("resource.k8s.io", "v1", "ResourceSlice"),
           api_version: str = "admission.k8s.io/v1") -> dict[str, Any]:
    """An AdmissionReview as the API server sends it."""
    group, version, kind_name = kind
    name = ""
    if obj is not None:
        name = str((obj.get("metadata") or {}).get("name", ""))
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind_name},
        "resource": {"group": group, "version": version, "resource": kind_name.lower() + "s"},
        "requestKind": {"group": group, "version": version, "kind": kind_name},
        "name": name,
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:dra:driver", "groups": ["system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
    }
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def metric_value(text: str, name: str, labels: Mapping[str, str] | None = None) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in (labels or {}).items()):
                total += sample.value
    return total


def iter_json_lines(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            yield json.loads(line)

