"""Benchmark: the webhook against a no-op Flask+gunicorn+TLS endpoint, same run, same machine.

Both servers are started the same way — `gunicorn -c webhook/gunicorn_conf.py` (gthread,
the cached TLS context, same workers and threads, loopback) — and differ only in the WSGI
app: the no-op app reads the body, decodes the JSON and answers "allowed" with the uid
echoed, which is the least any webhook must do; ours runs the rules. Load: `--concurrency`
client processes, each with a keep-alive HTTPS connection (as the API server keeps its
connections; renewed every 100 requests so that every run spreads over both workers alike),
a bounded number of requests, after a warm-up that also fills the CEL caches.

Scenarios: a 128-device ResourceSlice (~60 KB of JSON, no extractors) and a metadata slice
with 8 extractors. Each round runs both servers back to back (in turns first); printed are
the medians over rounds of req/s, p50, p95, p99 and the server processes' CPU time per request, and
the medians of the per-round ratios against the targets (throughput ≥ 0.85× no-op, p99 ≤ 1.3×
no-op p99) with their range. Prints figures, asserts nothing.

    python bench/webhook_bench.py [--requests 1600] [--rounds 7] [--concurrency 8] [--workers 2] [--threads 4]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import platform
import random
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

from gen_slices import _device  # noqa: E402

SERVICE, NAMESPACE = "dra-affinity-webhook", "dra-system"
HOSTNAME = f"{SERVICE}.{NAMESPACE}.svc"
TARGET_THROUGHPUT, TARGET_P99 = 0.85, 1.3


def create_noop_app() -> Any:
    """The baseline: decode the AdmissionReview, allow it. (Loaded by gunicorn from this file.)"""
    from flask import Flask, Response, request

    app = Flask("noop")

    @app.post("/validate")
    def validate() -> Response:
        body = json.loads(request.get_data(cache=False))
        reply = {"apiVersion": body["apiVersion"], "kind": "AdmissionReview",
                 "response": {"uid": body["request"]["uid"], "allowed": True}}
        return Response(json.dumps(reply), mimetype="application/json")

    @app.get("/readyz")
    def readyz() -> Response:
        return Response("{}", mimetype="application/json")

    return app


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _device_slice() -> dict[str, Any]:
    rng = random.Random(7)
    driver = "gpu.example.com"
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpu-0", "uid": "2c1f3e1a-0000-4000-8000-000000000001",
                     "resourceVersion": "123456", "labels": {"kubernetes.io/hostname": "node-a"}},
        "spec": {"driver": driver, "nodeName": "node-a",
                 "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 2},
                 "devices": [_device(rng, driver, i, True) for i in range(128)]},
    }


def _metadata_slice() -> dict[str, Any]:
    fields = ("subnetID", "ibPKey", "domain", "vlanID", "tenantName", "partitionID", "zone", "rack")
    keys = ("subnet", "pkey", "nvlink-domain", "vlan", "tenant", "partition", "numa-zone", "rack")
    extractors = [
        {"name": key, "expression":
            f'object.?apiVersion.orValue("") == "net.example.com/v1" && object.?kind.orValue("") == '
            f'"NICConfig" ? object.?{field}.orValue("") : ""'}
        for key, field in zip(keys, fields, strict=True)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-a-net-meta"},
        "spec": {"driver": "net.example.com", "nodeName": "node-a",
                 "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 2},
                 "sharingAffinity": extractors},
    }


def _review(obj: dict[str, Any]) -> bytes:
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "00000000-0000-4000-8000-000000000000",
                    "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
                    "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
                    "operation": "CREATE", "name": obj["metadata"]["name"], "object": obj,
                    "dryRun": False},
    }).encode()


class _Conn(http.client.HTTPSConnection):
    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        super().__init__("127.0.0.1", port, context=context, timeout=30)
        self._ctx = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        # as Go's net/http (the API server) does: no Nagle delay between headers and body
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._ctx.wrap_socket(sock, server_hostname=HOSTNAME)


REQUESTS_PER_CONNECTION = 100
"""Each client reconnects this often (outside the timed requests). gunicorn's workers accept
connections in turns of chance: eight long-lived connections may land six on one worker and
two on the other, and a worker is bound to one core by the GIL, so a whole run's throughput
depended on that split. Reconnecting spreads every run over both workers alike."""


def _client(args: tuple[int, str, bytes, int]) -> list[float]:
    """A keep-alive connection (renewed every REQUESTS_PER_CONNECTION requests) sending `count`
    requests; returns each latency in seconds."""
    port, ca_file, body, count = args
    context = ssl.create_default_context(cafile=ca_file)
    headers = {"Content-Type": "application/json"}
    out: list[float] = []
    conn: _Conn | None = None
    try:
        for i in range(count):
            if conn is None or i % REQUESTS_PER_CONNECTION == 0:
                if conn is not None:
                    conn.close()
                conn = _Conn(port, context)
                conn.connect()  # the TLS handshake is not part of any request's latency
            started = time.perf_counter()
            conn.request("POST", "/validate", body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            out.append(time.perf_counter() - started)
            if response.status != 200 or b'"uid"' not in data:
                raise RuntimeError(f"bad reply {response.status}: {data[:200]!r}")
    finally:
        if conn is not None:
            conn.close()
    return out


def _start(app: str, port: int, cert_dir: Path, workers: int, threads: int,
           log: Path) -> subprocess.Popen[bytes]:
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROMETHEUS_", "DRA_AFFINITY_"))}
    env.update({"DRA_AFFINITY_CERT_DIR": str(cert_dir), "DRA_AFFINITY_BIND": f"127.0.0.1:{port}",
                "DRA_AFFINITY_WORKERS": str(workers), "DRA_AFFINITY_THREADS": str(threads),
                "DRA_AFFINITY_METRICS_BIND": "off"})
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            [gunicorn, "-c", str(REPO / "webhook" / "gunicorn_conf.py"), "--pythonpath",
             str(REPO / "bench"), app], stdout=handle, stderr=subprocess.STDOUT, cwd=REPO, env=env,
            start_new_session=True)
    context = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{app} exited:\n{log.read_text()}")
        try:
            conn = _Conn(port, context)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            time.sleep(0.1)
    _stop(proc)
    raise SystemExit(f"{app} not ready:\n{log.read_text()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def _cpu_seconds(pid: int) -> float:
    """User+system CPU time of a process and its children (the gunicorn master's workers)."""
    total = 0.0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:  # not Linux: no server CPU figure
        return float("nan")
    pids.extend(int(c) for c in children)
    tick = os.sysconf("SC_CLK_TCK")
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _run(pool: Any, server: int, port: int, ca_file: str, body: bytes, total: int,
         concurrency: int) -> dict[str, float]:
    warm = max(concurrency, total // 10) // concurrency
    pool.map(_client, [(port, ca_file, body, warm)] * concurrency)
    per_client = total // concurrency
    cpu = _cpu_seconds(server)
    started = time.perf_counter()
    results = pool.map(_client, [(port, ca_file, body, per_client)] * concurrency)
    elapsed = time.perf_counter() - started
    cpu = _cpu_seconds(server) - cpu
    latencies = sorted(x for chunk in results for x in chunk)
    return {
        "rps": len(latencies) / elapsed,
        "p50": statistics.median(latencies) * 1000,
        "p95": latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))] * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "n": len(latencies),
        "cpu_us": cpu / len(latencies) * 1e6,
    }


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1600, help="measured requests per run")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7,
                        help="rounds per scenario; each runs both servers back to back")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="webhook-bench-") as tmp:
        cert_dir = Path(tmp) / "certs"
        from dra_affinity.webhook import certs

        certs.write_dir(certs.generate(SERVICE, NAMESPACE), cert_dir)
        ca_file = str(cert_dir / "ca.crt")
        scenarios = {"128-device slice": _review(_device_slice()),
                     "metadata slice, 8 extractors": _review(_metadata_slice())}
        print(f"# {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
              f"{os.cpu_count()} CPUs; gunicorn gthread {args.workers}x{args.threads}, TLS, keep-alive; "
              f"concurrency {args.concurrency}, {args.requests} requests per run, {args.rounds} rounds; "
              f"medians over rounds")
        servers = {"no-op": "webhook_bench:create_noop_app()",
                   "webhook": "dra_affinity.webhook.app:create_app()"}
        runs: dict[tuple[str, str], list[dict[str, float]]] = {}
        ports = {label: _free_port() for label in servers}
        procs = {label: _start(app, ports[label], cert_dir, args.workers, args.threads,
                               Path(tmp) / f"{label}.log") for label, app in servers.items()}
        try:
            with multiprocessing.get_context("fork").Pool(args.concurrency) as pool:
                # Each round runs both servers back to back, in turns first, and yields one
                # ratio: the machine's background load drifts between rounds, not within one.
                # The medians of the rounds resist the odd disturbed run, which a best-of or a
                # mean would let decide the result.
                for scenario, body in scenarios.items():
                    for round_no in range(args.rounds):
                        order = list(servers) if round_no % 2 == 0 else list(reversed(servers))
                        for label in order:
                            run = _run(pool, procs[label].pid, ports[label], ca_file, body,
                                       args.requests, args.concurrency)
                            runs.setdefault((label, scenario), []).append(run)
        finally:
            for proc in procs.values():
                _stop(proc)
        print(f"{'scenario':32} {'server':8} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
              f"{'server CPU/req':>15}")
        for scenario, body in scenarios.items():
            for label in servers:
                rs = runs[(label, scenario)]
                print(f"{scenario:32} {label:8} {_median([r['rps'] for r in rs]):8.0f} "
                      f"{_median([r['p50'] for r in rs]):8.2f} {_median([r['p95'] for r in rs]):8.2f} "
                      f"{_median([r['p99'] for r in rs]):8.2f} "
                      f"{_median([r['cpu_us'] for r in rs]):12.0f} µs")
            pairs = list(zip(runs[("no-op", scenario)], runs[("webhook", scenario)], strict=True))
            throughputs = [ours["rps"] / noop["rps"] for noop, ours in pairs]
            p99s = [ours["p99"] / noop["p99"] for noop, ours in pairs]
            throughput, p99 = _median(throughputs), _median(p99s)
            print(f"{'':32} {'ratio':8} {throughput:8.2f}x (target >= {TARGET_THROUGHPUT}; rounds "
                  f"{min(throughputs):.2f}-{max(throughputs):.2f})  p99 {p99:.2f}x (target <= "
                  f"{TARGET_P99}; rounds {min(p99s):.2f}-{max(p99s):.2f})  [{len(body) // 1024} KiB "
                  f"request]  {'MET' if throughput >= TARGET_THROUGHPUT and p99 <= TARGET_P99 else 'MISSED'}")


if __name__ == "__main__":
    main()
