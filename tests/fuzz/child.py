"""The fuzz campaign's evaluator process: reads cases (JSON lines) on stdin, answers each.

Why a separate, long-lived process: a crasher is a SIGSEGV inside cel-expr-python, which no
`try` can catch; the parent (`runner`) sees this process die, saves the case that killed it
and starts another. Starting one costs about a second (the CEL environments, the rules), so
one child answers cases until it dies. Every Python exception is caught here and reported with
its traceback. The invariants:

* expressions: compile in both environments, cost, evaluate (several times, as the scheduler
  does: the crashers found so far needed 2-4 evaluations); no crash, no traceback;
* reviews: POSTed to the real webhook (`dra-affinity serve`: gunicorn over TLS, one keep-alive
  connection for every case), never a 5xx nor a dropped connection; the slice linted as `lint`
  does (the loader, the structural check, the slice rules) in a stream where a sentinel slice
  follows it, and both are linted or reported; the webhook's verdict is the CLI's (an object
  `lint` finds structurally invalid, SA000, may be allowed: see `check_review`); an UPDATE
  that leaves the slice as stored is not rejected by a ratcheting rule; and `dry-run` evaluates
  the slice's extractors on the case's claim.

Answer lines are `{"kind": ok|problem|5xx|dropped|traceback, "detail": ...}`. Two
self-test cases exercise the harness (`test_fuzz`): `{"selftest": "segv"}` kills this process
with SIGSEGV, `{"selftest": "hang"}` stops answering.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import ssl
import sys
import time
import traceback
import zlib
from pathlib import Path
from typing import Any

import yaml
from dra_affinity.lint.commands.lint_cmd import Layers, check_input
from dra_affinity.lint.inputs import Input, model_objects
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.cost.estimate import estimate_cost
from dra_affinity.policies.cel.eval.runtime import evaluate
from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.rules.catalog import slice_rules
from dra_affinity.policies.rules.engine import EngineOptions, check_slice
from dra_affinity.policies.scheduler.dryrun import dry_run
from dra_affinity.sources.loader import load_text
from dra_affinity.webhook.body import GO_MAX_DEPTH

from tests.fuzz.grammar import NEST_PLACEHOLDER, nested_text
from tests.webhook.support import SvcConnection, client_context

_KEYS = (EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS), EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS))
_OPTIONS = EngineOptions(kubernetes_version=(1, 37))
_RATCHETED = frozenset(r.id for r in slice_rules() if r.ratchets)
_REQUEST_TIMEOUT = 30.0
"""Seconds a review may take before the child calls the webhook hung (it answers in < 5)."""
_KEEPALIVE_SLACK = 10.0
"""A kept-alive connection dropped sooner than this after its last reply was not closed for
idleness (`serve --keepalive` is 30 s): the drop is a finding, not retried."""

SENTINEL_NAME = "fuzz-sentinel"
SENTINEL: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": SENTINEL_NAME},
    "spec": {"driver": "sentinel.example.com", "nodeName": "node-1",
             "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
             "sharingAffinity": [{"name": "k", "expression": ""}]},
}
"""Follows the generated slice in the linted stream; its empty expression is an SA104 error,
so a document that stops the loader or the linter from reaching it shows as a missing SA104."""


def check_expression(case: dict[str, Any]) -> list[str]:
    """Compile, cost and evaluate one expression in both environments."""
    for key in _KEYS:
        compiled = compile_expression(case["expr"], key)
        if compiled.ok and compiled.checked is not None:
            estimate_cost(compiled.checked, presence_test_cost=0)
            for _ in range(int(case.get("repeat", 3))):
                evaluate(compiled, {"object": case.get("object", {})}, cost_limit=1_000_000)
    return []


class Webhook:
    """One keep-alive HTTPS connection to the running webhook, reopened when it is closed."""

    def __init__(self, port: int, ca_file: Path) -> None:
        self._port = port
        self._context = client_context(ca_file)
        self._conn: SvcConnection | None = None
        self._used = 0.0

    def post(self, body: bytes) -> tuple[int, bytes]:
        """The status and body of POST /validate. Raises `ConnectionError` when the
        connection is dropped without an answer, unless it sat idle long enough for the
        server's keep-alive timeout (`serve --keepalive`, 30 s) to close it: then the request
        is sent once more on a new one. (A worker that dies mid-request drops the connection
        within milliseconds of its last use, so a crash is never retried away.)"""
        for _ in range(2):
            fresh = self._conn is None or time.monotonic() - self._used < _KEEPALIVE_SLACK
            if self._conn is None:
                self._conn = SvcConnection(self._port, self._context, timeout=_REQUEST_TIMEOUT)
            try:
                self._conn.request("POST", "/validate?timeout=5s", body=body,
                                   headers={"Content-Type": "application/json"})
                response = self._conn.getresponse()
                data = response.read()
            except TimeoutError:
                self.close()
                raise
            except (OSError, ssl.SSLError, http.client.HTTPException) as error:
                self.close()
                if fresh:
                    raise ConnectionError(f"{type(error).__name__}: {error}") from error
                continue
            self._used = time.monotonic()
            if response.will_close:
                self.close()
            return response.status, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None


def lint_verdict(obj: dict[str, Any], old: ResourceSlice | None,
                 claim: Any = None) -> tuple[bool, set[str], list[str]]:
    """`lint`'s verdict on `obj`, loaded and linted as `lint` does in one stream with the
    sentinel after it (and `claim` after that, then `dry-run`'s evaluation of the stream's
    slice on it): denied?, the error rules, and problems (a document neither linted, reported
    nor counted as another kind)."""
    docs = [obj, SENTINEL, *([claim] if claim is not None else [])]
    # Half the cases as a JSON stream, half as YAML (`yaml.safe_dump` writes what reads back
    # as the same values: JSON's `5e-324` in a YAML file would be the string "5e-324").
    as_yaml = zlib.crc32(json.dumps(obj, sort_keys=True).encode()) % 2 == 1
    if as_yaml:
        parts = [yaml.safe_dump(d, allow_unicode=True, sort_keys=False).rstrip("\n") for d in docs]
    else:
        parts = [json.dumps(d, indent=1) for d in docs]
    separator = "\n---\n" if as_yaml else "\n"
    starts = [1]  # the line each document starts on
    for part in parts:
        starts.append(starts[-1] + part.count("\n") + separator.count("\n"))
    text = separator.join(parts) + "\n"
    loaded = load_text(text, name="case.yaml" if as_yaml else "case.json")
    inputs = Input(documents=loaded.documents, findings=loaded.findings,
                   usage_errors=loaded.usage_errors, files=1, texts=loaded.texts)

    def located(finding: Finding, doc: int) -> bool:
        position = finding.primary.position
        if position is None:
            return doc == 0
        return starts[doc] <= position.line < starts[doc + 1]

    problems: list[str] = []
    findings, summary = check_input(inputs, _OPTIONS, layers=Layers(pools=False))
    mine = [f for f in findings if located(f, 0)]
    if not any(f.rule == "SA104" and f.primary.object is not None
               and f.primary.object.name == SENTINEL_NAME for f in findings):
        problems.append("the sentinel slice after the document was not linted")
    objects = model_objects(inputs)
    slices = [s for s in objects.slices if s.name != SENTINEL_NAME]
    if not slices and not mine and summary.skipped != 1:  # skipped: another kind, counted
        problems.append("the document was neither linted, reported nor counted as skipped")
    if claim is not None and not objects.claims and not any(located(f, 2) for f in findings):
        problems.append("the claim was neither modeled nor reported")
    if slices and objects.claims:
        for result in dry_run(slices, objects.claims, kubernetes_version=(1, 37)).results:
            str(result.outcome)  # every outcome is an answer; a crash or traceback is not
    if old is not None and slices:  # the webhook checks an UPDATE against the stored object
        mine = [f for f in mine if f.rule.startswith("SA0")]  # the input findings stay
        mine += check_slice(slices[0], old, _OPTIONS)
    errors = {f.rule for f in mine if f.severity is Severity.ERROR}
    return bool(errors), errors, problems


def check_review(case: dict[str, Any], webhook: Webhook) -> dict[str, Any]:
    """POST the review to the webhook; compare with `lint`; run `dry-run` on the claim."""
    review = case["review"]
    text = json.dumps(review)
    nest = case.get("nest")
    if nest:
        text = text.replace(f'"{NEST_PLACEHOLDER}"', nested_text(nest["depth"], nest["opener"]), 1)
    try:
        status, body = webhook.post(text.encode())
    except TimeoutError:
        return {"kind": "hang", "detail": f"the webhook gave no answer in {_REQUEST_TIMEOUT}s"}
    except ConnectionError as error:
        return {"kind": "dropped", "detail": f"the webhook closed the connection: {error}"}
    if status >= 500:
        return {"kind": "5xx", "detail": f"HTTP {status}: {body[:500]!r}"}
    problems: list[str] = []
    if nest and (nest["depth"] > GO_MAX_DEPTH) != (status == 400 and b"exceeded max depth" in body):
        problems.append(f"nested {nest['depth']} levels (Go decodes up to {GO_MAX_DEPTH}): HTTP {status} "
                        f"{body[:200]!r}")
    request = review.get("request")
    obj = request.get("object") if isinstance(request, dict) else None
    if status == 200 and isinstance(obj, dict) and request.get("operation") in ("CREATE", "UPDATE") \
            and obj.get("kind") == "ResourceSlice" and request.get("kind", {}) == {
                "group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"}:
        allowed = json.loads(body)["response"]["allowed"]
        old_doc = request.get("oldObject") if request.get("operation") == "UPDATE" else None
        old = parse(old_doc).obj if isinstance(old_doc, dict) else None
        denied, errors, problems = lint_verdict(
            obj, old if isinstance(old, ResourceSlice) else None, case.get("claim"))
        # The webhook trusts the API server's structural validation, which runs before any
        # validating webhook (`parse(trusted=True)` checks only the fields it reads): an
        # object `lint` finds structurally invalid (SA000) never reaches it from a real API
        # server, so allowing one is no divergence; denying a valid one, or allowing an
        # invalid slice the API server would store, is. Likewise for an UPDATE whose
        # `oldObject` is structurally invalid: it was never stored, and the webhook's trusted
        # parse ratchets against it where `lint` cannot.
        stored = old_doc is None or isinstance(old, ResourceSlice)
        if allowed == denied and stored and not (allowed and "SA000" in errors):
            problems.append(f"webhook allowed={allowed} but lint finds {sorted(errors)}")
        # (only of an object the API server could have stored: one that passes `lint`'s
        # structural check, as `parse` without `trusted` runs it)
        if old_doc == obj and isinstance(old, ResourceSlice) and errors & _RATCHETED:
            problems.append(f"unchanged stored expressions rejected: {sorted(errors & _RATCHETED)}")
    else:
        if status not in (200, 400, 408, 413, 415):
            problems.append(f"unexpected HTTP {status}: {body[:300]!r}")
        if isinstance(obj, dict):  # not a slice the webhook checks: still linted, dry-run
            problems += lint_verdict(obj, None, case.get("claim"))[2]
    return {"kind": "problem" if problems else "ok", "detail": "; ".join(problems)}


def answer(case: dict[str, Any], webhook: Webhook | None) -> dict[str, Any]:
    selftest = case.get("selftest")
    if selftest == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if selftest == "hang":
        time.sleep(3600)
    if "review" in case:
        if webhook is None:
            raise RuntimeError("a review case, but no --webhook-port was given")
        return check_review(case, webhook)
    check_expression(case)
    return {"kind": "ok", "detail": ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--webhook-port", type=int)
    parser.add_argument("--ca-file", type=Path)
    args = parser.parse_args()
    webhook = Webhook(args.webhook_port, args.ca_file) if args.webhook_port else None
    compile_expression("1", _KEYS[0])  # environments built before the first case is timed
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        case = json.loads(line)
        try:
            out = answer(case, webhook)
        except Exception:
            out = {"kind": "traceback", "detail": traceback.format_exc()[-4000:]}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
