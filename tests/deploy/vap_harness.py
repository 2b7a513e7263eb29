"""Evaluate a generated ValidatingAdmissionPolicy the way the API server's admission plugin does.

Why a harness: the policy's CEL runs inside kube-apiserver, which we do not have; our CEL engine
(cel-expr-python with the Kubernetes libraries and cel-go cost tracking) runs the very same
expressions in the same environment, so the tests can ask "what would the API server decide for
this object?" and compare it with the webhook's verdict.

Semantics reproduced (k8s.io/apiserver/pkg/admission/plugin/policy/validating):
* match conditions first; a false one means the policy does not apply;
* variables are computed once per request (the API server does so lazily; here eagerly, so
  the reported cost is an upper bound of what it charges);
* every validation is evaluated; a false one is a failure with its messageExpression's result
  (or the static message when that fails), an error is a failure too (`failurePolicy: Fail`);
* costs: each expression must stay within the per-call limit, all of them within the budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dra_affinity.policies.cel.common.jsonvalue import decode_k8s_json
from dra_affinity.policies.cel.compile import CompileResult
from dra_affinity.policies.cel.eval.runtime import EvalResult, evaluate
from dra_affinity.policies.core.limits import KubernetesVersion
from dra_affinity.policies.rules.vap import (
    VAP_PER_CALL_LIMIT,
    StructuralPolicy,
    admission_environment,
    compile_policy_expression,
)


@lru_cache(maxsize=256)
def _compiled(expression: str, version: KubernetesVersion) -> CompileResult:
    result = compile_policy_expression(expression, version)
    assert result.ok, f"{expression}: {result.error_text}"
    return result


def run_expression(expression: str, version: KubernetesVersion,
                   variables: Mapping[str, object]) -> EvalResult:
    """One expression with the API server's per-call cost limit."""
    env = admission_environment(version)
    return evaluate(_compiled(expression, version), variables, cost_limit=VAP_PER_CALL_LIMIT, env=env.runtime)


@dataclass
class VapVerdict:
    """What the API server would decide for one request under the policy."""

    matched: bool
    failed: dict[str, str] = field(default_factory=dict)
    """rule id → the message the API server would show."""
    errors: dict[str, str] = field(default_factory=dict)
    """where → evaluation error (each also fails its validation: failurePolicy Fail)."""
    costs: dict[str, int] = field(default_factory=dict)
    """where → cel-go runtime cost of that expression."""

    @property
    def rule_ids(self) -> set[str]:
        return set(self.failed)

    @property
    def total_cost(self) -> int:
        return sum(self.costs.values())

    @property
    def max_cost(self) -> int:
        return max(self.costs.values(), default=0)


def evaluate_policy(policy: StructuralPolicy, obj: Mapping[str, Any] | None,
                    old: Mapping[str, Any] | None = None) -> VapVerdict:
    version = policy.kubernetes_version
    data: dict[str, object] = {
        "object": decode_k8s_json(obj) if obj is not None else None,
        "oldObject": decode_k8s_json(old) if old is not None else None,
        "request": {"operation": "UPDATE" if old is not None else "CREATE"},
        "variables": {},
    }
    verdict = VapVerdict(matched=False)
    match = run_expression(policy.match_condition, version, data)
    verdict.costs["matchCondition"] = match.runtime_cost
    if match.error is not None:
        verdict.errors["matchCondition"] = match.error.message
        verdict.matched = True  # an erroring match condition applies failurePolicy
        return verdict
    if match.value is not True:
        return verdict
    verdict.matched = True
    computed: dict[str, object] = {}
    for variable in policy.variables:
        result = run_expression(variable.expression, version, {**data, "variables": dict(computed)})
        verdict.costs[f"variables.{variable.name}"] = result.runtime_cost
        if result.error is not None:
            verdict.errors[f"variables.{variable.name}"] = result.error.message
            computed[variable.name] = None
        else:
            computed[variable.name] = result.value
    data["variables"] = computed
    for validation in policy.validations:
        result = run_expression(validation.expression, version, data)
        verdict.costs[validation.rule_id] = result.runtime_cost
        if result.error is not None:
            verdict.errors[validation.rule_id] = result.error.message
            verdict.failed[validation.rule_id] = f"{validation.rule_id}: {result.error.message}"
            continue
        assert isinstance(result.value, bool), (validation.rule_id, result.value)
        if result.value:
            continue
        message = run_expression(validation.message_expression, version, data)
        verdict.costs[f"{validation.rule_id}.message"] = message.runtime_cost
        text = message.value if message.error is None and isinstance(message.value, str) else None
        # The API server falls back to the static message when the result is unusable.
        if text is None or "\n" in text or "\r" in text or not text.strip():
            text = validation.message
        verdict.failed[validation.rule_id] = text
    return verdict
