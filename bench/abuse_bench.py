"""Abuse benchmark: legitimate reviews while the webhook is attacked (loopback only, bounded).

One server (`gunicorn -c webhook/gunicorn_conf.py`, the real app and worker), one legitimate
client sending a small metadata-slice review in a loop, and in turn each attack:

* `baseline`: no attack;
* `slow-loris`: `--slow` TCP connections held open (a third send one TLS byte, then nothing);
* `hostile`: `--hostile` clients sending uncached worst-case slices (8 distinct extractors
  of ~10 KiB each, new text every request) as fast as they are answered;
* `flood`: `--flood` threads opening and closing connections as fast as they can;
* `sustained`: first the capacity is measured (`--clients` processes, each a keep-alive
  connection as the API server keeps one, sending as fast as answered for
  `--capacity-seconds`), then the same clients send at `--load` (0.8) of it, open loop — each
  request at its scheduled time, its latency counted from that time, so a backlog shows —
  for `--sustain-seconds` (default 10; `--sustain-seconds 300` for the several minutes the
  issue asks for).

Each attack phase lasts `--seconds` and has two legitimate clients: one opening a fresh
connection per request (the worst case: it waits in the listen queue with the attacker's
connections; its figures are the phase's top-level ones) and one on a keep-alive connection
renewed every 100 requests, as the API server keeps its connections (`keepalive`).
Printed per phase: the legitimate requests' success rate and p50/p99 (ms); for `sustained`
also the measured capacity, the offered and achieved rates; and the worker processes' RSS
before and after each phase. `--phases` picks phases. Prints figures, asserts nothing.

    python bench/abuse_bench.py [--seconds 20] [--slow 200] [--hostile 8] [--flood 4]
        [--phases baseline,slow-loris,hostile,flood,sustained] [--sustain-seconds 300]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
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
           out: list[tuple[bool, float]], keep_alive: bool = False) -> None:
    """Reviews in a loop: a fresh connection each (connect and handshake in the timing), or
    with `keep_alive` one connection renewed every 100 requests, as the API server keeps its
    connections (the renewal's handshake is timed too)."""
    body = _review(_metadata_slice())
    conn: _Conn | None = None
    sent = 0
    while not stop.is_set():
        started = time.perf_counter()
        ok = False
        try:
            if conn is None:
                conn = _Conn(port, context)
                conn.timeout = 5
            conn.request("POST", "/validate", body=body, headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            ok = reply.status == 200 and b'"allowed":true' in reply.read()
        except (OSError, ssl.SSLError, http.client.HTTPException):
            ok = False
        sent += 1
        if conn is not None and (not ok or not keep_alive or sent % 100 == 0):
            conn.close()
            conn = None
        out.append((ok, time.perf_counter() - started))
    if conn is not None:
        conn.close()


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


def _flood(port: int, stop: threading.Event, done: list[int]) -> None:
    count = 0
    while not stop.is_set():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            count += 1
        except OSError:
            time.sleep(0.01)
    done.append(count)


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
    flooded: list[int] = []
    if name == "flood":
        threads += [threading.Thread(target=_flood, args=(port, stop, flooded), daemon=True)
                    for _ in range(args.flood)]
    for t in threads:
        t.start()
    results: list[tuple[bool, float]] = []
    kept: list[tuple[bool, float]] = []
    legit = [threading.Thread(target=_legit, args=(port, context, stop, results), daemon=True),
             threading.Thread(target=_legit, args=(port, context, stop, kept, True), daemon=True)]
    for t in legit:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in legit:
        t.join(10)
    for t in threads:
        t.join(10)
    for s in held:
        s.close()
    out: dict[str, object] = {
        "phase": name, "requests": len(results),
        "success": round(sum(ok for ok, _ in results) / max(1, len(results)), 4),
        **_percentiles([lat for ok, lat in results if ok]),
        "keepalive": {"requests": len(kept),
                      "success": round(sum(ok for ok, _ in kept) / max(1, len(kept)), 4),
                      **_percentiles([lat for ok, lat in kept if ok])},
    }
    if name == "flood":
        out["flood_connections_per_s"] = round(sum(flooded) / seconds)
    return out


def _percentiles(latencies: list[float]) -> dict[str, float | None]:
    ordered = sorted(latencies)
    if not ordered:
        return {"p50_ms": None, "p99_ms": None}
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1)}


def _paced_client(job: tuple[int, str, float, float]) -> tuple[int, list[float], int]:
    """One keep-alive client (renewed every 100 requests, as webhook_bench's): `rate` 0 sends
    as fast as answered; else one request every 1/rate s, its latency taken from when it was
    due. Returns (requests sent, latencies of successes, failures)."""
    port, ca_file, rate, seconds = job
    context = ssl.create_default_context(cafile=ca_file)
    body = _review(_metadata_slice())
    headers = {"Content-Type": "application/json"}
    conn: _Conn | None = None
    latencies: list[float] = []
    failures = sent = 0
    start = time.perf_counter()
    due = start
    while True:
        now = time.perf_counter()
        if now - start >= seconds:
            break
        if rate:
            if due > now:
                time.sleep(due - now)
            began = due
            due += 1 / rate
        else:
            began = now
        sent += 1
        try:
            if conn is None:
                conn = _Conn(port, context)
            conn.request("POST", "/validate", body=body, headers=headers)
            reply = conn.getresponse()
            ok = reply.status == 200 and b'"allowed":true' in reply.read()
        except (OSError, ssl.SSLError, http.client.HTTPException):
            ok = False
            if conn is not None:
                conn.close()
            conn = None
        if ok:
            latencies.append(time.perf_counter() - began)
        else:
            failures += 1
        if conn is not None and sent % 100 == 0:
            conn.close()
            conn = None
    if conn is not None:
        conn.close()
    return sent, latencies, failures


def _sustained(port: int, ca_file: str, args: argparse.Namespace, master: int) -> dict[str, object]:
    """Capacity first (closed loop), then `--load` of it, open loop, for `--sustain-seconds`."""
    with multiprocessing.get_context("spawn").Pool(args.clients) as pool:
        runs = pool.map(_paced_client, [(port, ca_file, 0.0, args.capacity_seconds)] * args.clients)
        capacity = sum(len(lat) for _, lat, _ in runs) / args.capacity_seconds
        rate = capacity * args.load
        rss_before = _rss_mb(master)
        started = time.perf_counter()
        runs = pool.map(_paced_client, [(port, ca_file, rate / args.clients, args.sustain_seconds)]
                        * args.clients)
        elapsed = time.perf_counter() - started
    latencies = [x for _, lat, _ in runs for x in lat]
    sent = sum(n for n, _, _ in runs)
    return {
        "phase": "sustained", "seconds": args.sustain_seconds, "clients": args.clients,
        "capacity_rps": round(capacity, 1), "offered_rps": round(rate, 1),
        "achieved_rps": round(len(latencies) / elapsed, 1), "requests": sent,
        "success": round(len(latencies) / max(1, sent), 4), **_percentiles(latencies),
        "worker_rss_mb_before": round(rss_before, 1), "worker_rss_mb_after": round(_rss_mb(master), 1),
    }


PHASES = ("baseline", "slow-loris", "hostile", "flood", "sustained")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--flood", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--phases", default=",".join(PHASES),
                        help=f"comma-separated, from {', '.join(PHASES)}")
    parser.add_argument("--clients", type=int, default=4, help="client processes of `sustained`")
    parser.add_argument("--capacity-seconds", type=float, default=5)
    parser.add_argument("--load", type=float, default=0.8, help="fraction of the measured capacity")
    parser.add_argument("--sustain-seconds", type=float, default=10)
    args = parser.parse_args()
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(phases) - set(PHASES))
    if unknown:
        parser.error(f"unknown phase(s): {', '.join(unknown)}")
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
            for name in phases:
                if name == "sustained":
                    result = _sustained(port, str(cert_dir / "ca.crt"), args, proc.pid)
                else:
                    rss = _rss_mb(proc.pid)
                    result = _phase(name, port, context, args.seconds, args)
                    result["worker_rss_mb_before"] = round(rss, 1)
                    result["worker_rss_mb_after"] = round(_rss_mb(proc.pid), 1)
                print(json.dumps(result), flush=True)
            print(json.dumps({"worker_rss_mb_before": round(before, 1),
                              "worker_rss_mb_after": round(_rss_mb(proc.pid), 1)}))
        finally:
            _stop(proc)


if __name__ == "__main__":
    main()
