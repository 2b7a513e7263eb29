"""POST /validate against the real server (gunicorn, 2 workers, TLS by Service name).

Every expectation about rules is derived from the CLI or the engine on the same object, so
these tests pin the webhook's *rendering* and plumbing, not a copy of the rules.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.cli import run
from tests.helpers import entry, slice_doc
from tests.webhook.support import Server, review

UNBOUNDED = 'object.?kind.orValue("") == "NICConfig" ? "p-" + object.x : ""'
"""SA108 today (string concatenation with an object field has no bounded cost)."""
UNGUARDED = "object.x"
"""Compiles; only advisories (SA201, SA202, SA203, SA206)."""


def _lint(tmp_path: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    path = tmp_path / "slice.json"
    path.write_text(json.dumps(doc))
    result = run("lint", "--format", "json", str(path))
    findings = result.json()["findings"]
    assert isinstance(findings, list)
    return findings


def test_clean_slice_is_allowed_with_uid_and_api_version_echoed(server: Server) -> None:
    sent = review(slice_doc([entry("subnet")]), uid="uid-clean")
    body = server.review(sent)
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    response = body["response"]
    assert response["uid"] == "uid-clean"
    assert response["allowed"] is True
    assert "status" not in response and "warnings" not in response
    assert response["auditAnnotations"] == {"decision": "allowed"}


def test_denial_matches_the_cli_and_reads_like_the_api_server(server: Server, tmp_path: Path) -> None:
    doc = slice_doc([entry("subnet"), entry("subnet", UNBOUNDED)], devices=[{"name": "eth0"}],
                    name="broken")
    errors = [f for f in _lint(tmp_path, doc) if f["severity"] == "error"]
    assert {f["rule"] for f in errors} == {"SA102", "SA108", "SA109"}

    response = server.review(review(doc))["response"]
    assert response["allowed"] is False
    status = response["status"]
    assert (status["code"], status["reason"], status["status"]) == (422, "Invalid", "Failure")
    causes = status["details"]["causes"]
    # the CLI's messages, split the API server's way into field + body
    as_errors = [f"{c['field']}: {c['message']}" for c in causes]
    assert sorted(as_errors) == sorted(f["message"] for f in errors)
    assert status["message"] == (
        'ResourceSlice.resource.k8s.io "broken" is invalid: [' + ", ".join(as_errors) + "]")
    assert status["details"]["name"] == "broken"
    assert (status["details"]["group"], status["details"]["kind"]) == ("resource.k8s.io", "ResourceSlice")
    reasons = {c["field"]: c["reason"] for c in causes}
    assert reasons["spec.sharingAffinity[1]"] == "FieldValueDuplicate"
    assert reasons["spec.sharingAffinity[1].expression"] == "FieldValueForbidden"
    assert reasons["spec"] == "FieldValueInvalid"
    assert response["auditAnnotations"]["error-rules"] == "SA102,SA108,SA109"
    assert response["auditAnnotations"]["decision"] == "denied"


def test_one_error_is_not_bracketed(server: Server) -> None:
    status = server.review(review(slice_doc([entry("a"), entry("a")], name="dup")))["response"]["status"]
    assert status["message"] == (
        'ResourceSlice.resource.k8s.io "dup" is invalid: spec.sharingAffinity[1]: Duplicate value: "a"')


def test_advisories_are_short_warnings_within_budget(server: Server, tmp_path: Path) -> None:
    doc = slice_doc([entry(f"k{i}", f"{UNGUARDED}{i}") for i in range(8)])
    advisories = [f for f in _lint(tmp_path, doc) if f["severity"] == "warning"]
    assert len(advisories) >= 24

    response = server.review(review(doc))["response"]
    assert response["allowed"] is True
    warnings = response["warnings"]
    assert all(len(w) <= 120 and w.isascii() for w in warnings)
    assert sum(len(w.encode()) for w in warnings) <= 4096
    shown = [w for w in warnings if not w.endswith("for all")]
    # each advisory appears once, led by its rule id and field
    assert len(shown) + _omitted(warnings) == len(advisories)
    expected = Counter(f"{f['rule']} {f['field']}" for f in advisories)
    assert not Counter(w.split(": ", 1)[0] for w in shown) - expected
    assert response["auditAnnotations"]["warning-rules"] == ",".join(
        sorted({f["rule"] for f in advisories}))


def _omitted(warnings: list[str]) -> int:
    last = warnings[-1]
    return int(last.split()[0]) if last.endswith("for all") else 0


def test_update_ratchets_stored_expressions(server: Server) -> None:
    stored = slice_doc([entry("subnet", UNBOUNDED)])
    created = server.review(review(stored))["response"]
    assert created["allowed"] is False  # a new expression over budget is refused

    unchanged = server.review(review(stored, operation="UPDATE", old=stored))["response"]
    assert unchanged["allowed"] is True  # ...but a stored one is not re-checked

    relabelled = slice_doc([entry("subnet", UNBOUNDED), entry("pkey", UNBOUNDED.replace("x", "y"))])
    changed = server.review(review(relabelled, operation="UPDATE", old=stored))["response"]
    assert changed["allowed"] is False
    fields = [c["field"] for c in changed["status"]["details"]["causes"]]
    assert fields == ["spec.sharingAffinity[1].expression"]


def test_dry_run_is_handled_identically(server: Server) -> None:
    doc = slice_doc([entry("a"), entry("a", UNGUARDED)])
    real = server.review(review(doc, uid="same"))["response"]
    dry = server.review(review(doc, uid="same", dry_run=True))["response"]
    assert dry == real
    logged = server.log_lines(until=lambda ls: sum(x.get("uid") == "same" for x in ls) >= 2)
    # by time of reply: two workers may write their batches in either order
    lines = sorted((line for line in logged if line.get("uid") == "same"), key=lambda line: line["ts"])
    assert [line["dry_run"] for line in lines] == [False, True]


def test_other_kinds_operations_and_missing_objects_are_allowed_and_logged(server: Server) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    cases = {
        "u-pod": review(pod, kind=("", "v1", "Pod"), uid="u-pod"),
        "u-delete": review(None, operation="DELETE", old=slice_doc([entry("a", "1 +")]), uid="u-delete"),
        "u-none": review(None, uid="u-none"),
        "u-v1beta1": review(slice_doc([entry("a", "1 +")]), kind=("resource.k8s.io", "v1beta1",
                                                                   "ResourceSlice"), uid="u-v1beta1"),
    }
    for uid, sent in cases.items():
        response = server.review(sent)["response"]
        assert response == {"uid": uid, "allowed": True}, uid
    lines = server.log_lines(until=lambda ls: set(cases) <= {x.get("uid") for x in ls})
    logged = {line["uid"]: line for line in lines if line.get("uid") in cases}
    assert set(logged) == set(cases)
    assert all(line["decision"] == "skipped" and line["skip_reason"] for line in logged.values())


def test_v1beta2_slice_and_v1beta1_review_are_answered_in_kind(server: Server) -> None:
    doc = slice_doc([entry("a", "1 +")])
    doc["apiVersion"] = "resource.k8s.io/v1beta2"
    sent = review(doc, kind=("resource.k8s.io", "v1beta2", "ResourceSlice"),
                  api_version="admission.k8s.io/v1beta1")
    body = server.review(sent)
    assert body["apiVersion"] == "admission.k8s.io/v1beta1"
    causes = body["response"]["status"]["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [("spec.sharingAffinity[0].expression",
                                                            "FieldValueInvalid")]


def test_structurally_broken_slice_is_denied_with_input_errors(server: Server) -> None:
    doc = slice_doc([entry("a")])
    del doc["spec"]["pool"]
    response = server.review(review(doc))["response"]
    assert response["allowed"] is False
    assert response["auditAnnotations"]["error-rules"] == "SA000"
    assert [c["field"] for c in response["status"]["details"]["causes"]] == ["spec.pool"]


def test_each_request_logs_one_json_line_keyed_by_uid(server: Server) -> None:
    server.review(review(slice_doc([entry("a"), entry("a")]), uid="log-me"))
    logged = server.log_lines(until=lambda ls: any(x.get("uid") == "log-me" for x in ls))
    lines = [line for line in logged if line.get("uid") == "log-me"]
    assert len(lines) == 1
    line = lines[0]
    assert line["decision"] == "denied" and line["rules"] == ["SA102"] and line["code"] == 422
    assert line["dry_run"] is False and line["operation"] == "CREATE"
    assert line["requestID"] == "log-me" and line["allowed"] is False
    assert 0 < line["duration_s"] < 10 and isinstance(line["pid"], int) and isinstance(line["ts"], float)
