"""Abuse benchmark: legitimate reviews while the webhook is attacked (loopback only, bounded).

One server (`gunicorn -c webhook/gunicorn_conf.py`, the real app and worker), one legitimate
client sending a small metadata-slice review in a loop, and in turn each attack:

* `baseline`: no attack;
* `slow-loris`: `--slow` TCP connections held open (a third send one TLS byte, then nothing);
* `hostile`: `--hostile` clients sending uncached worst-case slices (8 distinct extractors
  of ~10 KiB each, new text every request) as fast as they are answered;
* `flood`: `--flood` short connections opened and closed as fast as possible.

Each phase lasts `--seconds`. Printed per phase: the legitimate requests' success rate and
p50/p99 (ms), and the worker processes' RSS before and after the whole run. Prints figures,
asserts nothing.

    python bench/abuse_bench.py [--seconds 20] [--slow 200] [--hostile 8] [--flood 4]
"""

from __future__ import annotations

import argparse
import json
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from webhook_bench import (
    NAMESPACE,
    SERVICE,
    _Conn,
    _free_port,
    _metadata_slice,
    _review,
    _start,
    _stop,
)


def _rss_mb(master: int) -> float:
    try:
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    except OSError:
        return float("nan")
    total = 0
    for pid in children:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _heavy(tag: str) -> bytes:
    exprs = []
    for i in range(8):
        text = " || ".join(f'object.exists(x, x == "{tag}-{i}-{j}")' for j in range(300))
        exprs.append(text[:10_000].rsplit(" || ", 1)[0])
    doc = _metadata_slice()
    doc["spec"]["sharingAffinity"] = [{"name": f"k{i}", "expression": e}
                                      for i, e in enumerate(exprs)]
    return _review(doc)


def _legit(port: int, context: ssl.SSLContext, stop: threading.Event,
           out: list[tuple[bool, float]]) -> None:
    body = _review(_metadata_slice())
    while not stop.is_set():
        started = time.perf_counter()
        ok = False
        try:
            conn = _Conn(port, context)
            conn.timeout = 5
            conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            ok = reply.status == 200 and b'"allowed":true' in reply.read()
            conn.close()
        except (OSError, ssl.SSLError):
            ok = False
        out.append((ok, time.perf_counter() - started))


def _hostile(port: int, context: ssl.SSLContext, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            conn = _Conn(port, context)
            conn.request("POST", "/validate?timeout=5s", body=_heavy(uuid.uuid4().hex),
                         headers={"Content-Type": "application/json"})
            conn.getresponse().read()
            conn.close()
        except (OSError, ssl.SSLError):
            time.sleep(0.05)


def _flood(port: int, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
        except OSError:
            time.sleep(0.01)


def _phase(name: str, port: int, context: ssl.SSLContext, seconds: float,
           args: argparse.Namespace) -> dict[str, object]:
    stop = threading.Event()
    held: list[socket.socket] = []
    threads: list[threading.Thread] = []
    if name == "slow-loris":
        for i in range(args.slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 3 == 0:
                s.sendall(b"\x16")
            held.append(s)
    if name == "hostile":
        threads += [threading.Thread(target=_hostile, args=(port, context, stop), daemon=True)
                    for _ in range(args.hostile)]
    if name == "flood":
        threads += [threading.Thread(target=_flood, args=(port, stop), daemon=True)
                    for _ in range(args.flood)]
    for t in threads:
        t.start()
    results: list[tuple[bool, float]] = []
    legit = threading.Thread(target=_legit, args=(port, context, stop, results), daemon=True)
    legit.start()
    time.sleep(seconds)
    stop.set()
    legit.join(10)
    for t in threads:
        t.join(10)
    for s in held:
        s.close()
    latencies = sorted(lat for ok, lat in results if ok)
    return {
        "phase": name, "requests": len(results),
        "success": round(sum(ok for ok, _ in results) / max(1, len(results)), 4),
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 1)
        if latencies else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--flood", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        from dra_affinity.webhook import certs

        cert_dir = Path(tmp) / "certs"
        certs.write_dir(certs.generate(SERVICE, NAMESPACE), cert_dir)
        context = ssl.create_default_context(cafile=str(cert_dir / "ca.crt"))
        port = _free_port()
        proc = _start("dra_affinity.webhook.app:create_app()", port, cert_dir, args.workers,
                      args.threads, Path(tmp) / "server.log")
        try:
            before = _rss_mb(proc.pid)
            for name in ("baseline", "slow-loris", "hostile", "flood"):
                print(json.dumps(_phase(name, port, context, args.seconds, args)), flush=True)
            print(json.dumps({"worker_rss_mb_before": round(before, 1),
                              "worker_rss_mb_after": round(_rss_mb(proc.pid), 1)}))
        finally:
            _stop(proc)


if __name__ == "__main__":
    main()
