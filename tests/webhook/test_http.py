"""HTTP robustness, health and metrics of the real server."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

from tests.helpers import entry, slice_doc
from tests.webhook.support import Server, metric_value, review

MIB = 1024 * 1024


def test_oversized_body_is_413_without_reading_it(server: Server) -> None:
    conn = server.connection()
    try:
        conn.putrequest("POST", "/validate")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(7 * MIB + 1))
        conn.endheaders()
        response = conn.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["code"] == 413
    finally:
        conn.close()


def test_oversized_body_sent_in_full_is_413(server: Server) -> None:
    big = slice_doc([entry("a")])
    big["metadata"]["annotations"] = {"pad": "x" * (7 * MIB)}
    reply = server.request("POST", "/validate", json.dumps(review(big)).encode(),
                           {"Content-Type": "application/json"})
    assert reply.status == 413
    assert "larger than" in reply.json()["error"]


def _chunked(server: Server, body: bytes) -> tuple[int, dict[str, object]]:
    """POST without a Content-Length (chunked transfer encoding), as some proxies send."""
    conn = server.connection()
    try:
        chunks = (body[i:i + 65536] for i in range(0, len(body), 65536))
        conn.request("POST", "/validate", body=chunks, encode_chunked=True,
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_chunked_bodies_are_read_and_bounded(server: Server) -> None:
    small = json.dumps(review(slice_doc([entry("a")]), uid="chunked")).encode()
    status, reply = _chunked(server, small)
    assert status == 200 and reply["response"]["uid"] == "chunked"
    big = slice_doc([entry("a")])
    big["metadata"]["annotations"] = {"pad": "x" * (7 * MIB)}
    status, reply = _chunked(server, json.dumps(review(big)).encode())
    assert status == 413 and "larger than" in str(reply["error"])


def test_body_just_under_the_limit_is_reviewed(server: Server) -> None:
    doc = slice_doc([entry("a")])
    doc["metadata"]["annotations"] = {"pad": "x" * (6 * MIB)}
    assert server.review(review(doc))["response"]["allowed"] is True


def test_non_json_content_type_is_415(server: Server) -> None:
    body = json.dumps(review(slice_doc([entry("a")]))).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        reply = server.request("POST", "/validate", body, {"Content-Type": content_type})
        assert reply.status == 415, content_type
        assert reply.headers["content-type"] == "application/json"
        assert content_type in reply.json()["error"]
    charset = server.request("POST", "/validate", body, {"Content-Type": "application/json; charset=utf-8"})
    assert charset.status == 200


def test_malformed_reviews_are_400_with_a_json_error(server: Server) -> None:
    good = review(slice_doc([entry("a")]))
    no_uid = json.loads(json.dumps(good))
    del no_uid["request"]["uid"]
    bad_kind = {**good, "kind": "Pod"}
    no_request = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    cases = {
        b"{not json": "not JSON",
        b"[1, 2]": "JSON object",
        json.dumps(no_uid).encode(): "request.uid",
        json.dumps(bad_kind).encode(): "AdmissionReview",
        json.dumps(no_request).encode(): "request",
        # what is missing is named, not printed as Python's None
        json.dumps({"request": good["request"]}).encode():
            "kind: Required value: must be AdmissionReview; apiVersion: Required value: one of",
        json.dumps({**good, "apiVersion": "admission.k8s.io/v2"}).encode():
            'apiVersion: Unsupported value: "admission.k8s.io/v2"',
        b"[" * 100_000 + b"]" * 100_000: "not JSON",
    }
    for body, fragment in cases.items():
        reply = server.request("POST", "/validate", body, {"Content-Type": "application/json"})
        assert reply.status == 400, body[:40]
        assert fragment in reply.json()["error"], reply.json()
        assert "None" not in reply.json()["error"]
    assert server.request("GET", "/healthz").status == 200  # no worker was hurt


def test_wrong_method_and_path_are_json_errors(server: Server) -> None:
    assert server.request("GET", "/validate").status == 405
    missing = server.request("GET", "/nope")
    assert missing.status == 404 and missing.json()["code"] == 404


def test_health_and_readiness(server: Server) -> None:
    assert server.request("GET", "/healthz").json() == {"ok": True}
    ready = server.request("GET", "/readyz").json()
    assert ready["ready"] is True and ready["cel"] is True
    assert ready["tls"] and all(t["loaded"] and t["not_after"] > time.time() for t in ready["tls"])


def test_keep_alive_connection_serves_many_requests(server: Server) -> None:
    conn = server.connection()
    try:
        for i in range(5):
            body = server.review(review(slice_doc([entry("a")]), uid=f"ka-{i}"), conn=conn)
            assert body["response"]["uid"] == f"ka-{i}"
    finally:
        conn.close()
    lines = server.log_lines(until=lambda ls: sum(str(x.get("uid")).startswith("ka-") for x in ls) == 5)
    pids = {line["pid"] for line in lines if str(line.get("uid", "")).startswith("ka-")}
    assert len(pids) == 1  # one connection, one worker


def test_metrics_add_up_across_both_workers(server: Server) -> None:
    before = server.metrics()
    sent = {"allowed": 0, "denied": 0}
    lock = threading.Lock()

    def send(n: int) -> None:
        for i in range(n):
            denied = i % 3 == 0
            doc = slice_doc([entry("a"), entry("a")] if denied else [entry("a")])
            response = server.review(review(doc, uid=f"m-{threading.get_ident()}-{i}"))["response"]
            assert response["allowed"] is not denied
            with lock:
                sent["denied" if denied else "allowed"] += 1

    deadline = time.monotonic() + 20
    while True:  # fresh connections from 8 threads: the kernel spreads them over the workers
        threads = [threading.Thread(target=send, args=(6,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        def all_logged(lines: list[dict[str, object]], total: int = sum(sent.values())) -> bool:
            return sum(str(x.get("uid")).startswith("m-") for x in lines) >= total

        lines = server.log_lines(until=all_logged)
        pids = {line["pid"] for line in lines if str(line.get("uid", "")).startswith("m-")}
        if len(pids) >= 2 or time.monotonic() > deadline:
            break
    assert len(pids) == 2, "both workers served requests"

    after = server.metrics()
    def delta(name: str, labels: dict[str, str]) -> float:
        return metric_value(after, name, labels) - metric_value(before, name, labels)

    for decision, count in sent.items():
        assert delta("dra_affinity_admission_requests_total", {"decision": decision}) == count, decision
    assert delta("dra_affinity_admission_rule_requests_total",
                 {"rule": "SA102", "decision": "denied"}) == sent["denied"]
    hist = "dra_affinity_admission_duration_seconds_bucket"
    assert metric_value(after, hist, {"le": "10.0"}) == metric_value(after, hist, {"le": "+Inf"})
    cache = "dra_affinity_cel_cache_lookups_total"
    assert metric_value(after, cache, {"cache": "analysis", "result": "hit"}) > 0
    assert metric_value(after, cache, {"cache": "compile", "result": "miss"}) > 0
    # every registered cache, by its registry name, summed over both workers
    caches = "dra_affinity_cache_lookups_total"
    assert delta(caches, {"cache": "webhook.findings", "result": "hit"}) > 0
    assert metric_value(after, caches, {"cache": "cel.compile", "result": "miss"}) > 0
    assert metric_value(after, caches, {"cache": "cel.compile", "result": "miss"}) == metric_value(
        after, cache, {"cache": "compile", "result": "miss"})
    assert metric_value(after, "dra_affinity_cache_entries", {"cache": "webhook.findings"}) >= 2
    assert metric_value(after, "dra_affinity_cache_entries", {"cache": "model.extractors"}) >= 1
    expiry = metric_value(after, "dra_affinity_tls_certificate_expiry_timestamp_seconds")
    assert expiry > time.time()


def test_metrics_are_on_their_own_plain_port_and_nowhere_else(server: Server) -> None:
    """/metrics answers only on the metrics listener (plain HTTP), which serves no admission;
    both listeners answer the probes (the kubelet's go to the plain one, see deploy/)."""
    on_admission = server.request("GET", "/metrics")
    assert on_admission.status == 404 and on_admission.json()["code"] == 404
    assert b"dra_affinity" not in on_admission.body
    text = server.metrics()
    assert "# TYPE dra_affinity_" in text
    assert server.plain_request("GET", "/healthz").status == 200
    ready = server.plain_request("GET", "/readyz").json()
    assert ready["ready"] is True and ready["tls"] and all(t["loaded"] for t in ready["tls"])
    assert server.plain_request("POST", "/validate").status == 404  # never admits without TLS
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP to the TLS port
        raw.settimeout(10)
        answer = b""
        with contextlib.suppress(OSError):  # the TLS handshake fails: closed or reset
            answer = raw.recv(4096)
        assert not answer.startswith(b"HTTP/1.1 200")
