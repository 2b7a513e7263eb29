"""Hostile-input reproducers against the real server (gunicorn, TLS, loopback only).

Slow clients (item 3), wrong-typed fields (4), chunked bodies (8), echoes and log lines (9),
non-finite numbers (10). Every loop is bounded; every socket is closed.
"""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import entry, slice_doc
from tests.webhook.support import HOSTNAME, LOOPBACK, Server, review, start_server, stop_server


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory, cert_dir: Path) -> Iterator[Server]:
    """One worker with two threads: the smallest server slow clients could starve."""
    tmp = tmp_path_factory.mktemp("tight")
    # (passed to the server itself: `launch` gives it none of this process's DRA_AFFINITY_*)
    server = start_server(tmp, cert_dir, workers=1, threads=2, env={
        "DRA_AFFINITY_HANDSHAKE_TIMEOUT": "2", "DRA_AFFINITY_REQUEST_TIMEOUT": "3"})
    yield server
    stop_server(server)


def _tls(server: Server) -> ssl.SSLSocket:
    raw = socket.create_connection((LOOPBACK, server.port), timeout=10)
    return server.context().wrap_socket(raw, server_hostname=HOSTNAME)


def _raw_request(server: Server, head: bytes, body: bytes = b"", wait: float = 10) -> bytes:
    with _tls(server) as sock:
        sock.settimeout(wait)
        sock.sendall(head + body)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
                if b"\r\n\r\n" in data and _complete(data):
                    break
        except TimeoutError:
            pass
        return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


def _legit_ok(server: Server) -> bool:
    try:
        body = server.review(review(slice_doc([entry("a")])))
    except (OSError, AssertionError):
        return False
    return body["response"]["allowed"] is True


def test_idle_and_one_byte_connections_hold_no_thread(tight: Server) -> None:
    """Reproducer: 200 idle TCP connections let 0 of 5 probes through; 64 one-byte senders 2 of 7."""
    held: list[socket.socket] = []
    try:
        for i in range(200):
            s = socket.create_connection((LOOPBACK, tight.port), timeout=10)
            if i % 3 == 0:
                s.sendall(b"\x16")  # the first byte of a TLS ClientHello, then nothing
            held.append(s)
        probes = [_legit_ok(tight) for _ in range(5)]
        assert probes == [True] * 5
    finally:
        for s in held:
            s.close()


def test_a_stalled_handshake_is_closed_at_its_deadline(tight: Server) -> None:
    s = socket.create_connection((LOOPBACK, tight.port), timeout=10)
    try:
        s.sendall(b"\x16\x03\x01")
        started = time.monotonic()
        assert s.recv(1) == b""  # the server closes it (2 s here), never a thread waiting
        assert time.monotonic() - started < 9
    finally:
        s.close()


def test_a_request_head_sent_slowly_is_dropped_and_others_are_served(tight: Server) -> None:
    slow = [_tls(tight) for _ in range(8)]
    try:
        for s in slow:
            s.sendall(b"POST /validate HTTP/1.1\r\n")  # and never the rest
        assert all(_legit_ok(tight) for _ in range(3))
    finally:
        for s in slow:
            s.close()


def _chunked_head(server: Server) -> bytes:
    return (b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


def test_a_connect_and_close_flood_leaks_no_connection_slot(tight: Server) -> None:
    """More connect-and-close connections than a worker may hold (`worker_connections`,
    1000): each is dropped without a TLS object and gives its slot back, so the worker still
    accepts and serves."""
    for _ in range(1500):
        socket.create_connection((LOOPBACK, tight.port), timeout=10).close()
    for _ in range(20):  # some after the burst's last connections were seen closed
        raw = socket.create_connection((LOOPBACK, tight.port), timeout=10)
        raw.sendall(b"\x16")  # one byte, then gone: the full path, slot given back too
        raw.close()
    assert _legit_ok(tight)


def test_a_bad_chunk_size_is_400(tight: Server) -> None:
    reply = _raw_request(tight, _chunked_head(tight), b"zz\r\n{}\r\n0\r\n\r\n")
    assert _status(reply) == 400, reply[:300]


def test_an_unterminated_chunked_body_is_cut_at_the_deadline(tight: Server) -> None:
    started = time.monotonic()
    reply = _raw_request(tight, _chunked_head(tight), b"2\r\n{}\r\n", wait=15)
    assert _status(reply) == 408, reply[:300]
    assert time.monotonic() - started < 14
    assert _legit_ok(tight)


def _post(server: Server, payload: bytes) -> tuple[int, dict[str, Any]]:
    reply = server.request("POST", "/validate", payload, {"Content-Type": "application/json"})
    return reply.status, reply.json()


@pytest.mark.parametrize("field", ["driver", "pool.name"])
@pytest.mark.parametrize("value", [["x"], {"a": 1}, ["x" * 200_000]])
def test_wrong_typed_slice_fields_are_bad_requests_naming_the_field(server: Server, field: str,
                                                                    value: object) -> None:
    """A 400 in the review (controller-runtime's `admission.Errored(http.StatusBadRequest)` for
    an object its decoder cannot read), not an HTTP 400: the API server then denies with this
    message and code whatever the failurePolicy, instead of treating the webhook as failed."""
    doc = slice_doc([entry("a")])
    if field == "driver":
        doc["spec"]["driver"] = value
    else:
        doc["spec"]["pool"]["name"] = value
    status, body = _post(server, json.dumps(review(doc)).encode())
    assert status == 200
    response = body["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 400 and response["status"]["reason"] == "BadRequest"
    assert f"spec.{field}: Invalid value" in response["status"]["message"]
    assert len(response["status"]["message"]) <= 1024
    assert response["auditAnnotations"]["error-rules"] == "SA000"
    assert [c["field"] for c in response["status"]["details"]["causes"]] == [f"spec.{field}"]
    assert len(json.dumps(response)) < 8192  # the value is clipped, never echoed whole


@pytest.mark.parametrize("where", ["object", "oldObject"])
@pytest.mark.parametrize("value", [["ResourceSlice"], {"k": "v"}])
def test_wrong_typed_object_kind_is_400(server: Server, where: str, value: object) -> None:
    doc = slice_doc([entry("a")])
    sent = review(doc, operation="UPDATE", old=slice_doc([entry("a")]))
    sent["request"][where]["kind"] = value
    status, body = _post(server, json.dumps(sent).encode())
    assert status == 400
    assert f"request.{where}.kind" in body["error"]


def test_a_huge_kind_is_not_echoed_whole(server: Server) -> None:
    sent = review(slice_doc([entry("a")]))
    sent["kind"] = "K" * (6 * 1024 * 1024)
    status, body = _post(server, json.dumps(sent).encode())
    assert status == 400
    assert len(body["error"]) < 2048
    assert "truncated" in body["error"]
    lines = server.log_lines(until=lambda ls: any("truncated" in str(x.get("error")) for x in ls))
    assert all(len(json.dumps(line)) < 8192 for line in lines)


def test_a_huge_uid_is_clipped_in_the_log_and_echoed_in_the_reply(server: Server) -> None:
    uid = "u" * 100_000
    body = server.review(review(slice_doc([entry("a")]), uid=uid))
    assert body["response"]["uid"] == uid  # the API server matches it
    lines = server.log_lines(until=lambda ls: any(str(x.get("uid", "")).startswith("uuuu")
                                                  for x in ls))
    logged = [line for line in lines if str(line.get("uid", "")).startswith("uuuu")]
    assert logged and all(len(json.dumps(line)) < 4096 for line in logged)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_400_as_go_decodes(server: Server, literal: str) -> None:
    doc = slice_doc([entry("a")])
    text = json.dumps(review(doc)).replace('"resourceSliceCount": 1',
                                           f'"resourceSliceCount": 1, "x": {literal}')
    assert literal in text
    status, body = _post(server, text.encode())
    assert status == 400, body


def _heavy_slice(tag: str) -> dict[str, Any]:
    """8 distinct extractors of ~10 KiB each: the worst case of item 2, never cached before."""
    exprs = [" || ".join(f'object.exists(x, object.exists(y, x == y + "{tag}{i}{j}"))'
                         for j in range(300))[:10_000] for i in range(8)]
    exprs = [e.rsplit(" || ", 1)[0] for e in exprs]
    return slice_doc([entry(f"k{i}", e) for i, e in enumerate(exprs)])


def test_a_review_past_its_budget_is_denied_in_time_and_others_pass(server: Server) -> None:
    """Item 2: the API server's `?timeout=` bounds our own deadline (here 1 s - 1 s margin, raised
    to the 0.25 s floor): the smallest budget, so that an idle machine, which analyses the 8
    uncached extractors in about 0.3 s, still runs out of it."""
    import uuid

    sent = review(_heavy_slice(uuid.uuid4().hex))
    started = time.monotonic()
    reply = server.request("POST", "/validate?timeout=1s", json.dumps(sent).encode(),
                           {"Content-Type": "application/json"})
    elapsed = time.monotonic() - started
    assert reply.status == 200
    response = reply.json()["response"]
    assert response["allowed"] is False
    assert response["status"]["code"] == 503
    assert "budget" in response["status"]["message"]
    assert elapsed < 5  # one expression's analysis past a 0.25 s deadline, never the whole slice
    assert _legit_ok(server)


def test_the_budget_keeps_work_so_a_retry_converges(server: Server) -> None:
    import uuid

    sent = json.dumps(review(_heavy_slice(uuid.uuid4().hex))).encode()
    answers = []
    for _ in range(30):
        reply = server.request("POST", "/validate?timeout=1.5s", sent,
                               {"Content-Type": "application/json"})
        answers.append(reply.json()["response"].get("status", {}).get("code"))
        if answers[-1] != 503:
            break
    assert answers[-1] != 503, answers
