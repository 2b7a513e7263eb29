"""Slow bodies, per-source bounds, plain HTTP on the TLS port, handshake floods and deep JSON,
against the real server (gunicorn, TLS, the shipped worker; loopback only).

Each hostile client is bounded in number and every socket is closed. Nothing is timed: the
assertions are on what the server answers, counts and logs.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from dra_affinity.webhook.worker import PLAIN_HTTP_REPLY

from tests.helpers import entry, slice_doc
from tests.webhook.support import (
    HOSTNAME,
    LOOPBACK,
    Server,
    SvcConnection,
    metric_value,
    review,
    start_server,
    stop_server,
)

HEAD = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n")


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory, cert_dir: Path) -> Iterator[Server]:
    """One worker with two threads and a one-second body deadline."""
    server = start_server(tmp_path_factory.mktemp("slow"), cert_dir, workers=1, threads=2,
                          env={"DRA_AFFINITY_BODY_TIMEOUT": "1"})
    yield server
    stop_server(server)


def _tls(server: Server) -> ssl.SSLSocket:
    raw = socket.create_connection((LOOPBACK, server.port), timeout=10)
    return server.context().wrap_socket(raw, server_hostname=HOSTNAME)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ssl.SSLError, ConnectionResetError):
        pass
    return data


def _legit_ok(server: Server, conn: SvcConnection | None = None) -> bool:
    try:
        body = server.review(review(slice_doc([entry("a")])), conn=conn)
    except (OSError, AssertionError):
        return False
    return body["response"]["allowed"] is True


def _review_bytes() -> bytes:
    return json.dumps(review(slice_doc([entry("a")]))).encode()


def test_a_trickled_body_is_answered_408_by_the_main_loop_without_a_traceback(small: Server) -> None:
    payload = _review_bytes()
    slow = [_tls(small) for _ in range(12)]  # six times the threads
    try:
        for s in slow:
            s.sendall(HEAD % len(payload) + payload[:10])  # the head, then a few bytes of the body
        # every pool thread is free: the bodies are being waited for in the main loop
        assert all(_legit_ok(small) for _ in range(4))
        replies = [_read_all(s) for s in slow]
    finally:
        for s in slow:
            s.close()
    for reply in replies:
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 "), reply[:200]
        assert json.loads(body)["code"] == 408
    assert metric_value(small.metrics(), "dra_affinity_connections_timed_out_total", {"phase": "body"}) >= 12
    lines = small.log_lines()
    assert not any("Traceback" in json.dumps(x) for x in lines)
    # logged as a count, at most once per interval, not once per connection
    body_lines = [x for x in lines if x.get("kind") == "timeout:body"]
    assert 1 <= len(body_lines) <= 2 and body_lines[0]["count"] >= 1


def test_a_body_sent_in_pieces_in_time_is_reviewed(small: Server) -> None:
    payload = _review_bytes()
    with _tls(small) as s:
        s.sendall(HEAD % len(payload))
        for i in range(0, len(payload), 100):
            s.sendall(payload[i:i + 100])
        reply = _read_all_until_body(s)
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]


def _read_all_until_body(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(body) >= length:
                return data


def test_a_chunked_body_is_read_whole_before_a_thread_serves_it(small: Server) -> None:
    payload = _review_bytes()
    head = (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(payload[i:i + 50]), payload[i:i + 50])
                      for i in range(0, len(payload), 50))
    with _tls(small) as s:
        s.sendall(head)
        s.sendall(chunks)
        s.sendall(b"0\r\n\r\n")
        reply = _read_all_until_body(s)
    assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]


def test_plain_http_to_the_tls_port_is_answered_as_go_does(small: Server) -> None:
    for request in (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                    b"OPTIONS * HTTP/1.1\r\n\r\n"):
        with socket.create_connection((LOOPBACK, small.port), timeout=10) as s:
            s.sendall(request)
            assert _read_all(s) == PLAIN_HTTP_REPLY
    assert metric_value(small.metrics(), "dra_affinity_connections_rejected_total",
                        {"reason": "plain-http"}) >= 3
    assert _legit_ok(small)


def test_connections_per_source_address_are_bounded(tmp_path: Path, cert_dir: Path) -> None:
    server = start_server(tmp_path, cert_dir, workers=1, threads=2,
                          env={"DRA_AFFINITY_MAX_CONNECTIONS_PER_SOURCE": "4"})
    held: list[socket.socket] = []
    try:
        for _ in range(4):
            s = socket.create_connection((LOOPBACK, server.port), timeout=10)
            s.sendall(b"\x16")  # a TLS record begun, never finished
            held.append(s)
        extra = socket.create_connection((LOOPBACK, server.port), timeout=10)
        extra.sendall(b"\x16")
        # closed at accept (the address holds its four already): an EOF, or a reset since
        # the byte it sent was never read
        assert _read_all(extra) == b""
        extra.close()
        for s in held:
            s.close()
        held.clear()

        def freed() -> bool:
            return _legit_ok(server)

        assert any(freed() for _ in range(50))
        text = server.metrics()
        assert metric_value(text, "dra_affinity_connections_rejected_total",
                            {"reason": "per-source-limit"}) >= 1
    finally:
        for s in held:
            s.close()
        stop_server(server)


def test_a_handshake_flood_does_not_fail_requests_on_a_kept_alive_connection(small: Server) -> None:
    stop = threading.Event()
    handshakes = [0]

    def flood() -> None:
        context = small.context()
        while not stop.is_set():
            try:
                raw = socket.create_connection((LOOPBACK, small.port), timeout=10)
                with context.wrap_socket(raw, server_hostname=HOSTNAME):
                    handshakes[0] += 1
            except (OSError, ssl.SSLError):
                pass

    threads = [threading.Thread(target=flood, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    conn = small.connection()
    try:
        results = [_legit_ok(small, conn) for _ in range(60)]
    finally:
        stop.set()
        for t in threads:
            t.join(15)
        conn.close()
    assert results == [True] * 60
    assert handshakes[0] > 0


def _deep_review(depth: int, opener: str) -> bytes:
    """A review whose `metadata.managedFields[0].fieldsV1` (free-form JSON the API server
    stores as given) holds `depth` levels of arrays or objects."""
    closer = "]" if opener == "[" else "}"
    text = (opener if opener == "[" else '{"f:x":') * depth + "1" + closer * depth
    doc = slice_doc([entry("a")])
    doc["metadata"]["managedFields"] = [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                                         "fieldsV1": {"f:deep": "__DEEP__"}}]
    return json.dumps(review(doc)).replace('"__DEEP__"', text).encode()


@pytest.mark.parametrize("opener", ["[", "{"])
def test_json_nested_as_deep_as_go_accepts_is_reviewed_and_deeper_is_400(small: Server, opener: str) -> None:
    envelope = 7  # review → request → object → metadata → managedFields → [0] → fieldsV1
    ok = small.request("POST", "/validate", _deep_review(10_000 - envelope, opener),
                       {"Content-Type": "application/json"})
    assert ok.status == 200, ok.body[:300]
    assert ok.json()["response"]["allowed"] is True
    deep = small.request("POST", "/validate", _deep_review(10_001 - envelope, opener),
                         {"Content-Type": "application/json"})
    assert deep.status == 400, deep.body[:300]
    assert deep.json()["error"] == f"body is not JSON: invalid character {opener!r} exceeded max depth"
    assert _legit_ok(small)


def test_serve_names_the_metrics_listener_http_and_the_admission_one_https(small: Server) -> None:
    (line,) = [x for x in small.log_lines() if str(x.get("msg", "")).startswith("Listening at:")]
    assert f"https://127.0.0.1:{small.port}" in line["msg"]
    assert f"http://127.0.0.1:{small.metrics_port}" in line["msg"]
    assert f"https://127.0.0.1:{small.metrics_port}" not in line["msg"]


def test_idle_connections_do_not_count_as_handshakes_in_flight(tmp_path: Path, cert_dir: Path) -> None:
    """With room for 4 handshakes in flight, 20 connections that sent nothing leave the worker
    accepting (they cost no handshake work), and 4 stalled hellos only delay new connections
    until their deadline."""
    server = start_server(tmp_path, cert_dir, workers=1, threads=2,
                          env={"DRA_AFFINITY_MAX_HANDSHAKES": "4", "DRA_AFFINITY_HANDSHAKE_TIMEOUT": "2"})
    held: list[socket.socket] = []
    try:
        held += [socket.create_connection((LOOPBACK, server.port), timeout=10) for _ in range(20)]
        assert _legit_ok(server)
        for _ in range(4):
            s = socket.create_connection((LOOPBACK, server.port), timeout=10)
            s.sendall(b"\x16\x03\x01")  # a record header, then nothing
            held.append(s)
        assert _legit_ok(server)  # accepted once the stalled hellos have timed out, if not before
        assert metric_value(server.metrics(), "dra_affinity_connections_timed_out_total",
                            {"phase": "handshake"}) >= 1
    finally:
        for s in held:
            s.close()
        stop_server(server)
