"""Abuse benchmark: legitimate reviews while the webhook is attacked (loopback only, bounded).

One server (`gunicorn -c webhook/gunicorn_conf.py`, the real app and worker), one legitimate
client sending a small metadata-slice review in a loop, and in turn each attack:

* `baseline`: no attack;
* `slow-loris`: `--slow` TCP connections held open (a third send one TLS byte, then nothing);
* `hostile`: `--hostile` clients sending uncached worst-case slices (8 distinct extractors
  of ~10 KiB each, new text every request) as fast as they are answered;
* `flood`: `--flood` threads opening and closing connections as fast as they can;
* `slow-body`: `--slow-body` TLS connections held, each sending a request head and then its
  body a byte every half second (reopened when the server gives up on one, so the number
  held stays up);
* `slow-head`: `--slow-head` TLS connections held, each sending its request head a byte every
  half second (reopened likewise);
* `handshake-flood`: `--flood` threads completing TLS handshakes and closing, as fast as they
  can (the keep-alive legitimate client's figures are the ones the API server sees);
* `nested-json`: `--hostile` clients sending reviews nested 10,000 levels deep (Go's bound:
  answered 200) and 10,001 (answered 400), as fast as they are answered;
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
also the measured capacity, the offered and achieved rates; the worker processes' RSS
before and after each phase; the server's log lines per second per attack kind (and any
traceback). `exporter` (not a webhook phase) runs the lock exporter against the fake API
server answering 500s, truncated bodies, HTML with status 200, junk items and garbage watch
events in turn, scraping it every 0.2 s: it prints whether the process ever exited, whether a
scrape ever showed lock series other than the cluster's, the gaps between its list attempts
(the back-off) and how long it took to sync once the server healed, next to the back-off it
was in. `--phases` picks phases. Prints figures, asserts nothing.

    python bench/abuse_bench.py [--seconds 20] [--slow 200] [--hostile 8] [--flood 4]
        [--slow-body 300] [--slow-head 300]
        [--phases baseline,slow-loris,slow-body,slow-head,hostile,flood,handshake-flood,
                  nested-json,sustained,exporter]
        [--sustain-seconds 300]
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


SLOW_HEAD = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 2000\r\n\r\n")


def _slow(port: int, context: ssl.SSLContext, stop: threading.Event, count: int, body: bool,
          opened: list[int]) -> None:
    """`count` TLS connections trickling a head (or, with `body`, a whole head then a body)
    a byte every half second; one the server closes is opened again."""
    held: dict[socket.socket, int] = {}

    def open_one() -> None:
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock = context.wrap_socket(raw, server_hostname=SERVICE + "." + NAMESPACE + ".svc")
            sock.setblocking(False)
            if body:
                sock.send(SLOW_HEAD)
            held[sock] = len(SLOW_HEAD) if body else 0
            opened[0] += 1
        except (OSError, ssl.SSLError):
            pass

    while not stop.is_set():
        while len(held) < count and not stop.is_set():
            open_one()
        for sock in list(held):
            sent = held[sock]
            data = b"{" if body else SLOW_HEAD[sent % len(SLOW_HEAD):sent % len(SLOW_HEAD) + 1]
            try:
                try:
                    if sock.recv(4096) == b"":
                        raise ConnectionError
                    raise ConnectionError  # answered (408): the server gave up on it
                except (ssl.SSLWantReadError, BlockingIOError):
                    pass
                sock.send(data)
                held[sock] = sent + 1
            except (OSError, ssl.SSLError, ConnectionError):
                sock.close()
                del held[sock]
        stop.wait(0.5)
    for sock in held:
        sock.close()


def _handshakes(port: int, context: ssl.SSLContext, stop: threading.Event, done: list[int]) -> None:
    count = 0
    while not stop.is_set():
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            context.wrap_socket(raw, server_hostname=SERVICE + "." + NAMESPACE + ".svc").close()
            count += 1
        except (OSError, ssl.SSLError):
            time.sleep(0.01)
    done.append(count)


def _deep_review(depth: int) -> bytes:
    doc = _metadata_slice()
    doc["metadata"]["managedFields"] = [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:deep": "DEEP"}}]
    inner = depth - 7  # review, request, object, metadata, managedFields, [0], fieldsV1
    return _review(doc).replace(b'"DEEP"', b"[" * inner + b"]" * inner)


def _nested(port: int, context: ssl.SSLContext, stop: threading.Event, statuses: list[int]) -> None:
    bodies = [_deep_review(10_000), _deep_review(10_001)]
    sent = 0
    while not stop.is_set():
        try:
            conn = _Conn(port, context)
            conn.timeout = 10
            conn.request("POST", "/validate", body=bodies[sent % 2],
                         headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            reply.read()
            statuses.append(reply.status)
            conn.close()
        except (OSError, ssl.SSLError, http.client.HTTPException):
            statuses.append(0)
        sent += 1


def _log_rates(log: Path, offset: int, seconds: float) -> dict[str, object]:
    """Lines per second per attack kind in the server log since `offset` (and tracebacks)."""
    kinds: dict[str, int] = {}
    tracebacks = other = 0
    with log.open("rb") as handle:
        handle.seek(offset)
        for line in handle:
            tracebacks += b"Traceback" in line
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            kind = record.get("kind")
            if isinstance(kind, str) and ":" in kind:  # the worker's throttled attack lines
                kinds[kind] = kinds.get(kind, 0) + 1
            elif record.get("msg") == "request rejected":
                kinds["request rejected"] = kinds.get("request rejected", 0) + 1
            elif record.get("level") in {"warning", "error"}:
                other += 1
    return {"log_lines_per_s": {k: round(n / seconds, 2) for k, n in sorted(kinds.items())},
            "other_warning_lines_per_s": round(other / seconds, 2), "tracebacks": tracebacks}


def _phase(name: str, port: int, context: ssl.SSLContext, seconds: float,
           args: argparse.Namespace) -> dict[str, object]:
    stop = threading.Event()
    held: list[socket.socket] = []
    threads: list[threading.Thread] = []
    opened = [0]
    if name in {"slow-body", "slow-head"}:
        count = args.slow_body if name == "slow-body" else args.slow_head
        per = -(-count // 4)
        threads += [threading.Thread(target=_slow, args=(port, context, stop, min(per, count - i * per),
                                                         name == "slow-body", opened), daemon=True)
                    for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(min(3.0, seconds / 4))  # the connections are held before the measurement
        threads = []
    handshakes: list[int] = []
    if name == "handshake-flood":
        threads += [threading.Thread(target=_handshakes, args=(port, context, stop, handshakes), daemon=True)
                    for _ in range(args.flood)]
    statuses: list[int] = []
    if name == "nested-json":
        threads += [threading.Thread(target=_nested, args=(port, context, stop, statuses), daemon=True)
                    for _ in range(args.hostile)]
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
    if name == "handshake-flood":
        out["handshakes_per_s"] = round(sum(handshakes) / seconds)
    if name in {"slow-body", "slow-head"}:
        out["slow_connections_opened"] = opened[0]
    if name == "nested-json":
        out["deep_reviews"] = {str(code): statuses.count(code) for code in sorted(set(statuses))}
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


PHASES = ("baseline", "slow-loris", "slow-body", "slow-head", "hostile", "flood", "handshake-flood",
          "nested-json", "sustained", "exporter")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--hostile", type=int, default=8)
    parser.add_argument("--flood", type=int, default=4)
    parser.add_argument("--slow-body", type=int, default=300)
    parser.add_argument("--slow-head", type=int, default=300)
    parser.add_argument("--heal-after", type=float, default=20,
                        help="seconds of hostile answers before the exporter's API server heals")
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
        log = Path(tmp) / "server.log"
        proc = _start("dra_affinity.webhook.app:create_app()", port, cert_dir, args.workers,
                      args.threads, log)
        try:
            before = _rss_mb(proc.pid)
            for name in phases:
                if name == "exporter":
                    from exporter_abuse import hostile_api_server

                    result = hostile_api_server(args.heal_after, Path(tmp))
                elif name == "sustained":
                    result = _sustained(port, str(cert_dir / "ca.crt"), args, proc.pid)
                else:
                    rss = _rss_mb(proc.pid)
                    offset = log.stat().st_size
                    started = time.monotonic()
                    result = _phase(name, port, context, args.seconds, args)
                    result.update(_log_rates(log, offset, time.monotonic() - started))
                    result["worker_rss_mb_before"] = round(rss, 1)
                    result["worker_rss_mb_after"] = round(_rss_mb(proc.pid), 1)
                print(json.dumps(result), flush=True)
            print(json.dumps({"worker_rss_mb_before": round(before, 1),
                              "worker_rss_mb_after": round(_rss_mb(proc.pid), 1)}))
        finally:
            _stop(proc)


if __name__ == "__main__":
    main()
