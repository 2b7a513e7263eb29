"""The native fallback: a ValidatingAdmissionPolicy generated from the rule catalog.

Why: a webhook can be down, mis-configured or deliberately removed in an emergency; the API
server's own CEL admission (VAP, GA in 1.30) needs no pod. It cannot do what the webhook is
for — compile, type and cost the *nested* extractor expressions (CEL has no `eval`), or see
the other slices of a pool — but it can enforce the structural slice rules. Those rules are
implemented once in `dra_affinity.policies.rules.slice`; this module is the one place that says how each of
them reads in CEL, and takes everything else from the same sources the webhook uses: rule ids,
slugs and summaries from `policies.rules.catalog`, the numbers from `policies.core.limits`, the name
grammar from `dra_affinity.policies.core.k8s_names`, and the white space SA104 strips from `str.isspace`.

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

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import yaml
from dra_affinity.policies.core.cache import cached
from dra_affinity.policies.core.k8s_names import (
    QNAME_FMT,
    QNAME_MAX,
    SUBDOMAIN_FMT,
    SUBDOMAIN_MAX,
)
from dra_affinity.policies.core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    Limits,
    format_kubernetes_version,
    limits_for,
)
from dra_affinity.policies.rules.catalog import get_rule

if TYPE_CHECKING:  # the CEL engine loads only when a policy is checked, not to render YAML
    from dra_affinity.policies.cel.check.env import CelEnvironment
    from dra_affinity.policies.cel.compile import CompileResult
    from dra_affinity.policies.cel.cost.estimate import CostReport, SizeEstimate, SizePath

__all__ = [
    "ADMISSION_VARIABLES",
    "BINDING_KIND",
    "POLICY_KIND",
    "POLICY_NAME",
    "STRUCTURAL_RULE_IDS",
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
    "validation_actions_problem",
    "whitespace_class",
]

STRUCTURAL_RULE_IDS: tuple[str, ...] = ("SA101", "SA102", "SA103", "SA104", "SA105", "SA109")
"""The slice rules CEL-in-admission can check on one object, in catalog order."""

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

_SLICES = "spec.sharingAffinity"
_MAX_UTF8_BYTES_PER_CODE_POINT = 4


@dataclass(frozen=True, slots=True)
class Variable:
    """A VAP composited variable (`spec.variables[]`), reachable as `variables.<name>`."""

    name: str
    expression: str


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


# ------------------------------------------------------------------------------------------------
# CEL text helpers
# ------------------------------------------------------------------------------------------------


def _cel_string(text: str) -> str:
    """A CEL double-quoted string literal for `text` (JSON's escapes are a subset of CEL's)."""
    return json.dumps(text, ensure_ascii=False)


def _cel_raw(pattern: str) -> str:
    """A CEL raw single-quoted literal: regex escapes pass through to RE2 untouched."""
    if "'" in pattern or "\n" in pattern:
        raise ValueError(f"pattern cannot be a raw CEL literal: {pattern!r}")
    return f"r'{pattern}'"


def _re2_char(code: int) -> str:
    return f"\\x{{{code:x}}}"


@lru_cache(maxsize=1)
def whitespace_class() -> str:
    """An RE2 character class of exactly the characters `str.isspace` accepts.

    SA104 calls an expression empty when `str.strip()` leaves nothing, i.e. every character
    satisfies `str.isspace` (which, unlike Go's `unicode.IsSpace` and so CEL's `trim()`, also
    accepts U+001C..U+001F). Deriving the class from the predicate keeps the two identical.
    Cached: it walks every code point once.
    """
    codes = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    parts = [_re2_char(lo) if lo == hi else f"{_re2_char(lo)}-{_re2_char(hi)}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"


def _qualified_name_pattern() -> str:
    """`IsQualifiedName` as one anchored RE2 pattern (the lengths are checked beside it)."""
    return f"^({SUBDOMAIN_FMT}/)?{QNAME_FMT}$"


def _indexed(field: str) -> str:
    """CEL building `spec.sharingAffinity[<i>].<field>` for the comprehension index `i`."""
    return f"'{_SLICES}[' + string(i) + '].{field}'"


# ------------------------------------------------------------------------------------------------
# The rules in CEL
# ------------------------------------------------------------------------------------------------

_ENTRIES = "variables.entries"
_NAMES = "variables.names"
_OLD_EXPRESSIONS = "variables.oldExpressions"

_VARIABLES: tuple[Variable, ...] = (
    Variable("entries", "has(object.spec.sharingAffinity) ? object.spec.sharingAffinity : []"),
    Variable("names", f"{_ENTRIES}.map(a, has(a.name) ? a.name : '')"),
    Variable(
        "oldExpressions",
        "oldObject != null && has(oldObject.spec.sharingAffinity)"
        " ? oldObject.spec.sharingAffinity.filter(o, has(o.expression)).map(o, o.expression)"
        " : []",
    ),
)
"""Evaluated lazily by the API server, at most once per request: `oldExpressions` only when an
expression is over the length limit."""

MATCH_CONDITION = "object != null && has(object.spec.sharingAffinity)"
"""Only slices that declare extractors are evaluated at all (every rule needs the field)."""


@dataclass(frozen=True, slots=True)
class _RuleCel:
    expression: str
    detail: str | None
    field_path: str


def _sa101(limits: Limits) -> _RuleCel:
    return _RuleCel(
        f"size({_ENTRIES}) <= {limits.max_entries}",
        f"'found ' + string(size({_ENTRIES}))",
        _SLICES,
    )


def _sa102(limits: Limits) -> _RuleCel:
    # Every later occurrence of a non-empty name is reported, as the webhook does; empty names
    # are SA103's business.
    return _RuleCel(
        f"{_NAMES}.all(n, n == '' || {_NAMES}.exists_one(m, m == n))",
        f"{_NAMES}.transformList(i, n, n != '' && {_NAMES}.indexOf(n) < i, "
        f"{_indexed('name')} + ' ' + n).join(', ')",
        _SLICES,
    )


def _valid_name(var: str) -> str:
    # The pattern admits at most one '/', so indexOf finds the prefix separator or -1; the
    # prefix and the name part are ASCII once the pattern matched, so code points are bytes.
    return (
        f"{var}.matches({_cel_raw(_qualified_name_pattern())})"
        f" && {var}.indexOf('/') <= {SUBDOMAIN_MAX}"
        f" && size({var}) - {var}.indexOf('/') <= {QNAME_MAX + 1}"
    )


def _sa103(limits: Limits) -> _RuleCel:
    return _RuleCel(
        f"{_NAMES}.all(n, {_valid_name('n')})",
        f"{_NAMES}.transformList(i, n, !({_valid_name('n')}), "
        f"{_indexed('name')} + (n == '' ? ' is empty' : ' ' + n)).join(', ')",
        _SLICES,
    )


def _non_empty_expression(var: str) -> str:
    return f"has({var}.expression) && !{var}.expression.matches({_cel_raw('^' + whitespace_class() + '*$')})"


def _sa104(limits: Limits) -> _RuleCel:
    return _RuleCel(
        f"{_ENTRIES}.all(a, {_non_empty_expression('a')})",
        f"{_ENTRIES}.transformList(i, a, !({_non_empty_expression('a')}), "
        f"{_indexed('expression')}).join(', ')",
        _SLICES,
    )


def _short_enough(var: str, limits: Limits) -> str:
    # size() counts code points; a code point is at most 4 UTF-8 bytes, so short expressions
    # need no byte conversion. Go's len(), which upstream limits use, counts bytes.
    limit = limits.max_expression_bytes
    return (
        f"!has({var}.expression)"
        f" || size({var}.expression) <= {limit // _MAX_UTF8_BYTES_PER_CODE_POINT}"
        f" || size(bytes({var}.expression)) <= {limit}"
        f" || {var}.expression in {_OLD_EXPRESSIONS}"
    )


def _sa105(limits: Limits) -> _RuleCel:
    return _RuleCel(
        f"size({_ENTRIES}) > {limits.max_entries} || {_ENTRIES}.all(a, {_short_enough('a', limits)})",
        f"{_ENTRIES}.transformList(i, a, !({_short_enough('a', limits)}), "
        f"{_indexed('expression')} + ' has ' + string(size(bytes(a.expression))) + ' bytes')"
        f".join(', ')",
        _SLICES,
    )


def _sa109(limits: Limits) -> _RuleCel:
    return _RuleCel(
        "!(has(object.spec.devices) && has(object.spec.sharingAffinity))",
        None,
        "spec",
    )


_RULES: Mapping[str, Callable[[Limits], _RuleCel]] = {
    "SA101": _sa101,
    "SA102": _sa102,
    "SA103": _sa103,
    "SA104": _sa104,
    "SA105": _sa105,
    "SA109": _sa109,
}


def _validation(rule_id: str, limits: Limits) -> Validation:
    rule = get_rule(rule_id)
    cel = _RULES[rule_id](limits)
    message = f"{rule.id} {rule.slug}: {cel.field_path}: {rule.summary}"
    # Only evaluated when the validation failed, so the detail names at least one offender.
    message_expression = _cel_string(message if cel.detail is None else message + ": ")
    if cel.detail is not None:
        message_expression += f" + {cel.detail}"
    return Validation(rule.id, cel.expression, message, message_expression, cel.field_path)


def structural_policy(version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION) -> StructuralPolicy:
    """The structural rules of `version` as VAP variables, match condition and validations."""
    limits = limits_for(version)
    return StructuralPolicy(
        kubernetes_version=version,
        match_condition=MATCH_CONDITION,
        variables=_VARIABLES,
        validations=tuple(_validation(rule_id, limits) for rule_id in STRUCTURAL_RULE_IDS),
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
                    "apiGroups": ["resource.k8s.io"],
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
        "# compilation, cost (SA106-SA108) and pool rules need the webhook. See deploy/README.md.\n"
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
    from cel_expr_python import cel
    from dra_affinity.policies.cel.check.env import EnvMode, build_environment

    variables = {name: cel.Type.DYN for name in ADMISSION_VARIABLES}
    return build_environment(version, EnvMode.NEW_EXPRESSIONS, variables)


def compile_policy_expression(expression: str, version: KubernetesVersion) -> CompileResult:
    """Compile one expression in `admission_environment(version)` (uncached: few and small)."""
    from dra_affinity.policies.cel.compile import compile_in

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
        from dra_affinity.policies.cel.cost.estimate import SizeEstimate

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
    from dra_affinity.policies.cel.cost.estimate import estimate_cost
    from dra_affinity.policies.cel.cost.k8s import KubernetesCallEstimator

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
