"""The fuzz campaign's evaluator process: reads cases (JSON lines) on stdin, answers each.

Why a separate process: a crasher is a SIGSEGV inside cel-expr-python, which no `try` can
catch; the parent (`runner`) sees this process die, saves the case that killed it and starts
another. Every Python exception is caught here and reported with its traceback: the
invariants are "no crash, no traceback" for expressions, and for reviews also "no 5xx" and
"the webhook's verdict is the CLI's" and "an unchanged stored expression is not rejected".
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.cost.estimate import estimate_cost
from dra_affinity.policies.cel.eval.runtime import evaluate
from dra_affinity.policies.core.findings import Severity
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.rules.catalog import slice_rules
from dra_affinity.policies.rules.engine import EngineOptions, check_slice
from dra_affinity.webhook.app import create_app
from dra_affinity.webhook.settings import WebhookSettings

_KEYS = (EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS), EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS))
_OPTIONS = EngineOptions(kubernetes_version=(1, 37))
_RATCHETED = frozenset(r.id for r in slice_rules() if r.ratchets)


def check_expression(case: dict[str, Any]) -> list[str]:
    """Compile, cost and evaluate one expression in both environments."""
    problems: list[str] = []
    for key in _KEYS:
        compiled = compile_expression(case["expr"], key)
        if compiled.ok and compiled.checked is not None:
            estimate_cost(compiled.checked, presence_test_cost=0)
            for _ in range(int(case.get("repeat", 3))):
                evaluate(compiled, {"object": case.get("object", {})}, cost_limit=1_000_000)
    return problems


_client: Any = None


def _webhook() -> Any:
    global _client
    if _client is None:
        _client = create_app(WebhookSettings()).test_client()
    return _client


def check_review(case: dict[str, Any]) -> list[str]:
    """POST the review through the Flask application; compare with the CLI's verdict."""
    review = case["review"]
    reply = _webhook().post("/validate", data=json.dumps(review), content_type="application/json")
    problems: list[str] = []
    if reply.status_code >= 500:
        problems.append(f"HTTP {reply.status_code}: {reply.get_data(as_text=True)[:500]}")
        return problems
    if reply.status_code != 200:
        return problems
    response = reply.get_json()["response"]
    request = review["request"]
    obj = request.get("object")
    if request.get("operation") not in ("CREATE", "UPDATE") or not isinstance(obj, dict) \
            or obj.get("kind") != "ResourceSlice":
        return problems
    new = parse(obj)  # the CLI's parse: the structural check included
    if not isinstance(new.obj, ResourceSlice):
        cli_denies = bool(new.findings)
        findings_rules: set[str] = {f.rule for f in new.findings}
    else:
        old_doc = request.get("oldObject") if request.get("operation") == "UPDATE" else None
        old = parse(old_doc).obj if isinstance(old_doc, dict) else None
        findings = check_slice(new.obj, old if isinstance(old, ResourceSlice) else None, _OPTIONS)
        cli_denies = any(f.severity is Severity.ERROR for f in findings)
        findings_rules = {f.rule for f in findings if f.severity is Severity.ERROR}
        if old_doc == obj and findings_rules & _RATCHETED:
            problems.append(f"unchanged stored expressions rejected: {sorted(findings_rules)}")
    if response["allowed"] == cli_denies:
        problems.append(f"webhook allowed={response['allowed']} but the CLI finds "
                        f"{sorted(findings_rules)}")
    return problems


def main() -> None:
    _webhook()  # environments built and the rules loaded before the first case is timed
    compile_expression("1", _KEYS[0])
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        case = json.loads(line)
        try:
            problems = (check_review if "review" in case else check_expression)(case)
            out: dict[str, Any] = {"problems": problems}
        except Exception:
            out = {"traceback": traceback.format_exc()[-4000:]}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
