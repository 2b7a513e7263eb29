"""The native fallback: a ValidatingAdmissionPolicy generated from the rule catalog.

Why: a webhook can be down, mis-configured or deliberately removed in an emergency; the API
server's own CEL admission (VAP, GA in 1.30) needs no pod. It cannot do what the webhook is
for — compile, type and cost the *nested* extractor expressions (CEL has no `eval`), or see
the other slices of a pool — but it can enforce the structural slice rules. Each of those rules
says in its own module (`dra_affinity.policies.rules.slice`, the rule's `vap`) how it reads in
CEL, beside its Python check, in the vocabulary of `policies.rules.vap_cel`; this module only
assembles them into one policy, taking everything else from the same sources the webhook uses:
rule ids, slugs and summaries from `policies.rules.catalog`, the numbers from
`policies.core.limits`.

The generated expressions mirror the webhook exactly on every object the API server can hand
to admission (tests/deploy compares them case by case with `policies.rules.engine.check_slice` and
the webhook's `Admitter`):

* UPDATE ratcheting of SA105 uses `oldObject`, like `SliceContext.ratcheted`;
* above `max_entries` the webhook skips the expression rules (SA105) and so does the policy,
  which also bounds its cost;
* presence is `has()`: the API server serialises `devices: []` / `null` as absent
  (`omitempty`), so neither the webhook nor the policy ever sees the difference.

Nothing here evaluates CEL against objects; `check_policy` compiles every expression in the
Kubernetes admission environment of the target release and `estimate_policy_cost` prices them
with the cel-go estimator, so `dra-affinity policy export` never writes a policy the API
server would reject.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from cel_expr_python import cel

from ..cel.check.env import EnvMode, build_environment
from ..cel.compile import compile_in
from ..cel.cost.estimate import SizeEstimate, estimate_cost
from ..cel.cost.k8s import KubernetesCallEstimator
from ..core.api import RESOURCE_GROUP
from ..core.cache import cached
from ..core.k8s_names import QNAME_MAX, SUBDOMAIN_MAX
from ..core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    Limits,
    format_kubernetes_version,
    limits_for,
)
from .catalog import slice_rules
from .context import SliceRule
from .slice.sa106_compile_error import RULE as COMPILE_ERROR
from .slice.sa108_cost_budget import RULE as COST_BUDGET
from .vap_cel import VARIABLES, Variable, cel_string, whitespace_class

if TYPE_CHECKING:  # the CEL engine loads only when a policy is checked, not to render YAML
    from ..cel.check.env import CelEnvironment
    from ..cel.compile import CompileResult
    from ..cel.cost.estimate import CostReport, SizeEstimate, SizePath

__all__ = [
    "ADMISSION_VARIABLES",
    "BINDING_KIND",
    "POLICY_KIND",
    "POLICY_NAME",
    "VALIDATION_ACTIONS",
    "VAP_PER_CALL_LIMIT",
    "VAP_RUNTIME_BUDGET",
    "DeclaredBounds",
    "ExpressionCost",
    "PolicyProblem",
    "StructuralPolicy",
    "Validation",
    "Variable",
    "admission_environment",
    "check_policy",
    "compile_policy_expression",
    "estimate_policy_cost",
    "policy_manifests",
    "render_policy",
    "structural_policy",
    "structural_rules",
    "validation_actions_problem",
    "whitespace_class",
]

POLICY_NAME = "dra-affinity-structural"
POLICY_API_VERSION = "admissionregistration.k8s.io/v1"
POLICY_KIND = "ValidatingAdmissionPolicy"
BINDING_KIND = "ValidatingAdmissionPolicyBinding"
VALIDATION_ACTIONS: tuple[str, ...] = ("Deny", "Warn", "Audit")

VAP_PER_CALL_LIMIT = 1_000_000
"""`celconfig.PerCallLimit`: runtime cost of one expression evaluation in admission."""
VAP_RUNTIME_BUDGET = 10_000_000
"""`celconfig.RuntimeCELCostBudget`: all expressions of one policy binding, per request."""

ADMISSION_VARIABLES: tuple[str, ...] = ("object", "oldObject", "request", "variables")
"""The admission variables the generated expressions may use (`params`, `namespaceObject` and
`authorizer` are not needed: ResourceSlice is cluster-scoped and the policy has no params)."""


@dataclass(frozen=True, slots=True)
class Validation:
    """One `spec.validations[]` entry enforcing one rule.

    `expression` is true when the object complies; `message_expression` (evaluated only on
    failure) names the offending fields, `message` is the static fallback the API server uses
    when the message expression fails or yields more than one line. `field_path` is where the
    rule reports; VAP validations have no field of their own for it (CRD validation rules do),
    so it is part of the message.
    """

    rule_id: str
    expression: str
    message: str
    message_expression: str
    field_path: str
    reason: str = "Invalid"


@dataclass(frozen=True, slots=True)
class StructuralPolicy:
    """The structural subset of the slice rules as VAP CEL, for one Kubernetes release."""

    kubernetes_version: KubernetesVersion
    match_condition: str
    variables: tuple[Variable, ...]
    validations: tuple[Validation, ...]

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return tuple(v.rule_id for v in self.validations)

    def expressions(self) -> Iterator[tuple[str, str]]:
        """Every CEL expression with where it lives in the policy (for compiling and costing)."""
        yield "spec.matchConditions[0].expression", self.match_condition
        for i, variable in enumerate(self.variables):
            yield f"spec.variables[{i}].expression", variable.expression
        for i, validation in enumerate(self.validations):
            yield f"spec.validations[{i}].expression", validation.expression
            yield f"spec.validations[{i}].messageExpression", validation.message_expression


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """A generated expression the API server would reject (a bug in this module, never input)."""

    where: str
    message: str


MATCH_CONDITION = "object != null && has(object.spec.sharingAffinity)"
"""Only slices that declare extractors are evaluated at all (every rule needs the field)."""


def structural_rules() -> tuple[SliceRule, ...]:
    """The slice rules CEL-in-admission can check on one object (those with `vap`), in id order."""
    return tuple(r for r in slice_rules() if r.vap is not None)


def _validation(rule: SliceRule, limits: Limits) -> Validation:
    assert rule.vap is not None
    cel = rule.vap(limits)
    message = f"{rule.id} {rule.slug}: {cel.field_path}: {rule.summary}"
    # Only evaluated when the validation failed, so the detail names at least one offender.
    message_expression = cel_string(message if cel.detail is None else message + ": ")
    if cel.detail is not None:
        message_expression += f" + {cel.detail}"
    return Validation(rule.id, cel.expression, message, message_expression, cel.field_path)


def structural_policy(version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION) -> StructuralPolicy:
    """The structural rules of `version` as VAP variables, match condition and validations."""
    limits = limits_for(version)
    return StructuralPolicy(
        kubernetes_version=version,
        match_condition=MATCH_CONDITION,
        variables=VARIABLES,
        validations=tuple(_validation(rule, limits) for rule in structural_rules()),
    )


# ------------------------------------------------------------------------------------------------
# Manifests
# ------------------------------------------------------------------------------------------------

_LABELS = {"app.kubernetes.io/name": "dra-affinity", "app.kubernetes.io/component": "admission-policy"}


def validation_actions_problem(actions: Sequence[str]) -> str | None:
    """Why `actions` is not a valid `validationActions` list (the API server's rules), or None."""
    if not actions:
        return "at least one validation action is required"
    unknown = [a for a in actions if a not in VALIDATION_ACTIONS]
    if unknown:
        return f"unsupported validation action(s) {', '.join(unknown)}: use {', '.join(VALIDATION_ACTIONS)}"
    if len(set(actions)) != len(actions):
        return "validation actions must not repeat"
    if "Deny" in actions and "Warn" in actions:
        return "Deny and Warn cannot be combined (the API server rejects the binding)"
    return None


def policy_manifests(
    policy: StructuralPolicy, actions: Sequence[str] = ("Deny",), name: str = POLICY_NAME
) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding, as plain dicts."""
    version = format_kubernetes_version(policy.kubernetes_version)
    annotations = {
        "dra-affinity.example.com/generated-by": "dra-affinity policy export",
        "dra-affinity.example.com/kubernetes-version": version,
        "dra-affinity.example.com/rules": ",".join(policy.rule_ids),
    }
    validations = [
        {
            "expression": v.expression,
            "message": v.message,
            "messageExpression": v.message_expression,
            "reason": v.reason,
        }
        for v in policy.validations
    ]
    vap = {
        "apiVersion": POLICY_API_VERSION,
        "kind": POLICY_KIND,
        "metadata": {"name": name, "labels": dict(_LABELS), "annotations": annotations},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "resourceRules": [{
                    "apiGroups": [RESOURCE_GROUP],
                    "apiVersions": ["*"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["resourceslices"],
                    "scope": "Cluster",
                }],
            },
            "matchConditions": [{"name": "declares-sharing-affinity", "expression": policy.match_condition}],
            "variables": [{"name": v.name, "expression": v.expression} for v in policy.variables],
            "validations": validations,
        },
    }
    binding = {
        "apiVersion": POLICY_API_VERSION,
        "kind": BINDING_KIND,
        "metadata": {"name": name, "labels": dict(_LABELS)},
        "spec": {"policyName": name, "validationActions": list(actions)},
    }
    return [vap, binding]


def render_policy(
    policy: StructuralPolicy, actions: Sequence[str] = ("Deny",), name: str = POLICY_NAME
) -> str:
    """The manifests as one YAML stream, with a header saying where they come from."""
    version = format_kubernetes_version(policy.kubernetes_version)
    header = (
        "# Generated by `dra-affinity policy export` from the rule catalog: do not edit.\n"
        f"# Rules {', '.join(policy.rule_ids)}; Kubernetes {version}; validationActions {list(actions)}.\n"
        "# It enforces the structural slice rules natively (no webhook needed); expression\n"
        f"# compilation, cost ({COMPILE_ERROR.id}-{COST_BUDGET.id}) and pool rules need the webhook. "
        "See deploy/README.md.\n"
    )
    body = yaml.safe_dump_all(
        policy_manifests(policy, actions, name), sort_keys=False, width=4096, allow_unicode=True
    )
    return header + "---\n" + body


# ------------------------------------------------------------------------------------------------
# Compiling and costing in the Kubernetes admission environment
# ------------------------------------------------------------------------------------------------


@cached("rules.vap_environments", 4)
def admission_environment(version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION) -> CelEnvironment:
    """The CEL environment the API server compiles new VAP expressions in (all dyn-typed).

    Kubernetes' base environment at the compatibility version (no `cel.bind`, which only the
    DRA and sharing-affinity environments add), with the admission variables. The API server
    types `object` from the OpenAPI schema when it can; dyn accepts every expression that
    typed checking would, for the fields these expressions read.
    """

    variables = {name: cel.Type.DYN for name in ADMISSION_VARIABLES}
    return build_environment(version, EnvMode.NEW_EXPRESSIONS, variables)


def compile_policy_expression(expression: str, version: KubernetesVersion) -> CompileResult:
    """Compile one expression in `admission_environment(version)` (uncached: few and small)."""

    return compile_in(admission_environment(version), expression)


def check_policy(policy: StructuralPolicy) -> tuple[PolicyProblem, ...]:
    """Everything the API server would reject in the policy (empty when it is valid)."""
    problems: list[PolicyProblem] = []
    for where, expression in policy.expressions():
        result = compile_policy_expression(expression, policy.kubernetes_version)
        if not result.ok:
            problems.append(PolicyProblem(where, result.error_text or "does not compile"))
    for i, validation in enumerate(policy.validations):
        if "\n" in validation.message or "\r" in validation.message:
            where = f"spec.validations[{i}].message"
            problems.append(PolicyProblem(where, "message must not contain line breaks"))
    return tuple(problems)


@dataclass(frozen=True, slots=True)
class DeclaredBounds:
    """Sizes the API declares for the fields the policy reads, for a bounded cost estimate.

    Without size knowledge every comprehension over `object` is unbounded (the API server does
    not estimate VAP costs statically; it enforces them at run time). These bounds price the
    policy for objects the API itself accepts: at most `max_entries` entries, names of at most
    a 253-byte prefix, '/', and 63 bytes, expressions of at most `max_expression_bytes`.
    """

    max_entries: int
    max_name: int
    max_expression: int

    @classmethod
    def for_limits(cls, limits: Limits) -> DeclaredBounds:
        return cls(limits.max_entries, SUBDOMAIN_MAX + 1 + QNAME_MAX, limits.max_expression_bytes)

    def estimate_size(self, path: SizePath) -> SizeEstimate | None:

        parts = tuple(path)
        lists = (("sharingAffinity",), ("variables", "entries"), ("variables", "names"),
                 ("variables", "oldExpressions"))
        if any(parts[-len(suffix):] == suffix for suffix in lists):
            return SizeEstimate(0, self.max_entries)
        # cel-go cannot tell a dyn-typed list from a map, so its elements are `@keys`, or
        # `@values` in two-variable comprehensions (whose `@keys`, the index, is then priced
        # like an element: an over-estimate).
        element = parts[-3:-1] if parts[-1:] in (("@items",), ("@keys",), ("@values",)) else ()
        if parts[-1:] == ("name",) or element == ("variables", "names"):
            return SizeEstimate(0, self.max_name)
        if parts[-1:] == ("expression",) or element == ("variables", "oldExpressions"):
            return SizeEstimate(0, self.max_expression)
        return None


@dataclass(frozen=True, slots=True)
class ExpressionCost:
    """Static cost of one policy expression: without size knowledge, and within the API's bounds."""

    where: str
    unbounded: CostReport
    bounded: CostReport


def estimate_policy_cost(policy: StructuralPolicy) -> tuple[ExpressionCost, ...]:
    """cel-go's static estimate of every compiled expression, with Kubernetes library pricing."""

    bounds = DeclaredBounds.for_limits(limits_for(policy.kubernetes_version))
    costs: list[ExpressionCost] = []
    for where, expression in policy.expressions():
        result = compile_policy_expression(expression, policy.kubernetes_version)
        if not result.ok or result.checked is None:
            continue
        unbounded = estimate_cost(result.checked, presence_test_cost=0, calls=KubernetesCallEstimator())
        bounded = estimate_cost(result.checked, presence_test_cost=0, sizes=bounds,
                                calls=KubernetesCallEstimator(bounds))
        costs.append(ExpressionCost(where, unbounded, bounded))
    return tuple(costs)
