"""Helpers for the checked-AST and static-cost tests (fixtures are prefixed `ast_`).

The cost vectors come from three upstream harnesses, each reproduced here:

* cel-go `checker/cost_test.go`: standard library only, variables per row, size hints by dotted
  path (`{0, hint}`), presence tests cost 1 unless the row says otherwise. cel-go declares some
  variables as the proto message `TestAllTypes`; cel-expr-python cannot load that message without
  the `protobuf` runtime, so those variables are declared as maps with the same value types.
  That is cost-neutral: selecting a field costs 1 on a map exactly as on a message, and no row
  depends on other message behaviour. The one message *literal* row is compiled with a
  well-known message (`google.protobuf.Timestamp{...}`), which cel-go prices like any message
  literal (40 + the cost of the field values, all constants here).
* Kubernetes `library/cost_test.go`: the base libraries with `library.CostEstimator` wrapping a
  size estimator that sizes every string and bytes value at `{0, 12}`, presence tests free. The
  Kubernetes functions do not exist in cel-expr-python yet, so they are declared here as stubs
  (declarations only, overload ids as upstream); estimation needs no implementation.
  cel-expr-python cannot add overloads to a function an extension already declares, so the
  list-library `indexOf`/`lastIndexOf` stubs live in an environment without ext.Strings.
* the sharing-affinity environment of the reference (§5.7): `object: dyn`, `cel.bind`, no size or
  call estimator, presence tests free.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.common.ast import CheckedAst
from dra_affinity.policies.cel.common.ast_decode import decode_checked_expr
from dra_affinity.policies.cel.cost.estimate import (
    CallEstimate,
    CostEstimate,
    EstimateNode,
    SizeEstimate,
    SizePath,
)
from dra_affinity.policies.cel.cost.k8s import KubernetesCallEstimator

T = cel.Type
L = cel.Type.List
M = cel.Type.Map

AFFINITY_YAML = """
extensions:
  - {name: optional}
  - {name: strings, version: 2}
  - {name: bindings}
  - {name: sets}
  - {name: lists, version: 2}
  - {name: cel.lib.ext.comprev2}
variables:
  - {name: object, type_name: dyn}
"""
"""Close enough to the sharing-affinity environment for AST and cost tests.

cel-expr-python's lists extension version 2 declares what cel-go calls ext.Lists version 3
(version 3 only added cost support in cel-go; cel-expr-python has no version 3).
"""

K8S_YAML = """
extensions:
  - {name: optional}
  - {name: strings, version: 2}
  - {name: sets}
  - {name: cel.lib.ext.comprev2}
"""

K8S_LISTS_YAML = """
extensions:
  - {name: sets}
"""

LISTS_YAML = """
extensions:
  - {name: lists, version: 2}
  - {name: bindings}
"""

# --- Kubernetes library stubs (declarations only) -------------------------------------------

URL = T.AbstractType("kubernetes.URL")
IP = T.AbstractType("net.IP")
CIDR = T.AbstractType("net.CIDR")
QUANTITY = T.AbstractType("kubernetes.Quantity")
SEMVER = T.AbstractType("kubernetes.Semver")
AUTHORIZER = T.AbstractType("kubernetes.authorization.Authorizer")
PATH_CHECK = T.AbstractType("kubernetes.authorization.PathCheck")
GROUP_CHECK = T.AbstractType("kubernetes.authorization.GroupCheck")
RESOURCE_CHECK = T.AbstractType("kubernetes.authorization.ResourceCheck")
DECISION = T.AbstractType("kubernetes.authorization.Decision")


def _fn(name: str, *overloads: tuple[str, cel.Type, Sequence[cel.Type], bool]) -> cel.FunctionDecl:
    return cel.FunctionDecl(name, [cel.Overload(i, r, list(p), is_member=m)
                                   for i, r, p, m in overloads])


def _k8s_functions() -> list[cel.FunctionDecl]:
    s, b, i = T.STRING, T.BOOL, T.INT
    return [
        _fn("url", ("string_to_url", URL, [s], False)),
        *[_fn(g, (f"url_{g}", s, [URL], True)) for g in
          ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")],
        _fn("getQuery", ("url_get_query", M(s, L(s)), [URL], True)),
        _fn("ip", ("string_to_ip", IP, [s], False), ("cidr_ip", IP, [CIDR], True)),
        _fn("isIP", ("is_ip", b, [s], False)),
        _fn("ip.isCanonical", ("ip_is_canonical", b, [s], False)),
        _fn("family", ("ip_family", i, [IP], True)),
        *[_fn(f, (f"ip_{f}", b, [IP], True)) for f in (
            "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
            "isGlobalUnicast")],
        _fn("cidr", ("string_to_cidr", CIDR, [s], False)),
        _fn("isCIDR", ("is_cidr", b, [s], False)),
        _fn("containsIP", ("cidr_contains_ip_string", b, [CIDR, s], True),
            ("cidr_contains_ip_ip", b, [CIDR, IP], True)),
        _fn("containsCIDR", ("cidr_contains_cidr_string", b, [CIDR, s], True),
            ("cidr_contains_cidr", b, [CIDR, CIDR], True)),
        _fn("prefixLength", ("cidr_prefix_length", i, [CIDR], True)),
        _fn("masked", ("cidr_masked", CIDR, [CIDR], True)),
        _fn("quantity", ("string_to_quantity", QUANTITY, [s], False)),
        _fn("isQuantity", ("is_quantity_string", b, [s], False)),
        _fn("add", ("quantity_add", QUANTITY, [QUANTITY, QUANTITY], True),
            ("quantity_add_int", QUANTITY, [QUANTITY, i], True)),
        _fn("sub", ("quantity_sub", QUANTITY, [QUANTITY, QUANTITY], True),
            ("quantity_sub_int", QUANTITY, [QUANTITY, i], True)),
        _fn("asInteger", ("quantity_get_int", i, [QUANTITY], True)),
        _fn("isInteger", ("quantity_is_integer", b, [QUANTITY], True)),
        _fn("asApproximateFloat", ("quantity_get_float", T.DOUBLE, [QUANTITY], True)),
        _fn("isLessThan", ("quantity_less", b, [QUANTITY, QUANTITY], True),
            ("semver_less", b, [SEMVER, SEMVER], True)),
        _fn("isGreaterThan", ("quantity_greater", b, [QUANTITY, QUANTITY], True),
            ("semver_greater", b, [SEMVER, SEMVER], True)),
        _fn("compareTo", ("quantity_compare_to", i, [QUANTITY, QUANTITY], True),
            ("semver_compare_to", i, [SEMVER, SEMVER], True)),
        _fn("semver", ("string_to_semver", SEMVER, [s], False)),
        _fn("isSemver", ("is_semver_string", b, [s], False)),
        *[_fn(f, (f"semver_{f}", i, [SEMVER], True)) for f in ("major", "minor", "patch")],
        _fn("find", ("string_find_string", s, [s, s], True)),
        _fn("findAll", ("string_find_all_string", L(s), [s, s], True),
            ("string_find_all_string_int", L(s), [s, s, i], True)),
        _fn("jsonpatch.escapeKey", ("string_escape_key", s, [s], False)),
        _fn("path", ("authorizer_path", PATH_CHECK, [AUTHORIZER, s], True)),
        _fn("group", ("authorizer_group", GROUP_CHECK, [AUTHORIZER, s], True)),
        _fn("resource", ("groupcheck_resource", RESOURCE_CHECK, [GROUP_CHECK, s], True)),
        _fn("subresource", ("resourcecheck_subresource", RESOURCE_CHECK,
                            [RESOURCE_CHECK, s], True)),
        _fn("namespace", ("resourcecheck_namespace", RESOURCE_CHECK, [RESOURCE_CHECK, s], True)),
        _fn("name", ("resourcecheck_name", RESOURCE_CHECK, [RESOURCE_CHECK, s], True)),
        _fn("fieldSelector", ("resourcecheck_field_selector", RESOURCE_CHECK,
                              [RESOURCE_CHECK, s], True)),
        _fn("labelSelector", ("resourcecheck_label_selector", RESOURCE_CHECK,
                              [RESOURCE_CHECK, s], True)),
        _fn("check", ("pathcheck_check", DECISION, [PATH_CHECK, s], True),
            ("resourcecheck_check", DECISION, [RESOURCE_CHECK, s], True)),
        _fn("allowed", ("decision_allowed", b, [DECISION], True)),
        _fn("reason", ("decision_reason", s, [DECISION], True)),
        _fn("errored", ("decision_errored", b, [DECISION], True)),
        _fn("error", ("decision_error", s, [DECISION], True)),
    ]


_COMPARABLE = {"int": T.INT, "uint": T.UINT, "double": T.DOUBLE, "bool": T.BOOL,
               "string": T.STRING, "bytes": T.BYTES, "duration": T.DURATION,
               "timestamp": T.TIMESTAMP}
_SUMMABLE = ("int", "uint", "double", "duration")


def _k8s_list_functions() -> list[cel.FunctionDecl]:
    """Kubernetes `lists` library: isSorted/sum/min/max/indexOf/lastIndexOf per element type."""
    def per_type(name: str, suffix: Callable[[str], str], ret: Callable[[cel.Type], cel.Type],
                 extra: bool, names: Sequence[str]) -> cel.FunctionDecl:
        ovs = []
        for tn in names:
            t = _COMPARABLE[tn]
            params = [L(t), t] if extra else [L(t)]
            ovs.append(cel.Overload(f"list_{tn}_{suffix(tn)}", ret(t), params, is_member=True))
        return cel.FunctionDecl(name, ovs)

    names = tuple(_COMPARABLE)
    return [
        per_type("isSorted", lambda _: "is_sorted_bool", lambda _: T.BOOL, False, names),
        per_type("sum", lambda tn: f"sum_{tn}", lambda t: t, False, _SUMMABLE),
        per_type("min", lambda tn: f"min_{tn}", lambda t: t, False, names),
        per_type("max", lambda tn: f"max_{tn}", lambda t: t, False, names),
        per_type("indexOf", lambda _: "index_of_int", lambda _: T.INT, True, names),
        per_type("lastIndexOf", lambda _: "last_index_of_int", lambda _: T.INT, True, names),
    ]


# --- compilation ------------------------------------------------------------------------------


def compile_ast(expr: str, *, yaml: str | None = None,
                variables: Mapping[str, cel.Type] | None = None,
                functions: Sequence[cel.FunctionDecl] | None = None) -> CheckedAst:
    """Compile with cel-expr-python and decode the checked AST."""
    config = cel.NewEnvConfigFromYaml(yaml) if yaml else None
    env = cel.NewEnv(config=config, variables=dict(variables or {}),
                     functions=list(functions or []))
    return decode_checked_expr(env.compile(expr).serialize(), expr)


def affinity_ast(expr: str) -> CheckedAst:
    """Compile in (an approximation of) the sharing-affinity environment."""
    return compile_ast(expr, yaml=AFFINITY_YAML)


def k8s_ast(expr: str) -> CheckedAst:
    """Compile in the Kubernetes library cost-test environment (stubs included)."""
    return compile_ast(expr, yaml=K8S_YAML, variables={"authorizer": AUTHORIZER},
                       functions=_k8s_functions())


def k8s_lists_ast(expr: str) -> CheckedAst:
    """Kubernetes `lists` library stubs (no ext.Strings, see module docstring)."""
    return compile_ast(expr, yaml=K8S_LISTS_YAML, functions=_k8s_list_functions())


# --- estimators reproducing the upstream harnesses ----------------------------------------------


@dataclass(frozen=True)
class HintSizes:
    """cel-go test estimator: `{0, hint}` for a dotted path that has a hint."""

    hints: Mapping[str, int] = field(default_factory=dict)

    def estimate_size(self, path: SizePath) -> SizeEstimate | None:
        hint = self.hints.get(path.dotted())
        return SizeEstimate(0, hint) if hint is not None else None


class TwelveCharStrings:
    """Kubernetes test estimator: every string or bytes value is `{0, 12}`."""

    def estimate_size(self, path: SizePath) -> SizeEstimate | None:
        if path.cel_type.is_string or path.cel_type.is_bytes:
            return SizeEstimate(0, 12)
        return None


class YearCallEstimator:
    """cel-go test call estimator: `timestamp.getFullYear()` costs 7."""

    def estimate_call(self, function: str, overload_id: str, target: EstimateNode | None,
                      args: Sequence[EstimateNode]) -> CallEstimate | None:
        if overload_id == "timestamp_to_year":
            return CallEstimate(CostEstimate(7, 7))
        return None


def k8s_estimator() -> KubernetesCallEstimator:
    """`library.CostEstimator{SizeEstimator: testCostEstimator}` of the Kubernetes tests."""
    return KubernetesCallEstimator(TwelveCharStrings())


@pytest.fixture
def ast_affinity() -> Callable[[str], CheckedAst]:
    """Compile an expression in the sharing-affinity-like environment."""
    return affinity_ast


@pytest.fixture
def ast_compile() -> Callable[..., CheckedAst]:
    """`compile_ast(expr, yaml=..., variables=..., functions=...)`."""
    return compile_ast


@pytest.fixture
def ast_lists() -> Callable[..., CheckedAst]:
    """Compile with cel-go ext.Lists v3 functions (cel-expr-python lists v2) and cel.bind."""
    def compile_lists(expr: str, variables: Mapping[str, cel.Type] | None = None) -> CheckedAst:
        return compile_ast(expr, yaml=LISTS_YAML, variables=variables)
    return compile_lists


@pytest.fixture
def ast_k8s() -> Callable[[str], CheckedAst]:
    """Compile in the Kubernetes library cost-test environment."""
    return k8s_ast


@pytest.fixture
def ast_k8s_lists() -> Callable[[str], CheckedAst]:
    """Compile with the Kubernetes `lists` library stubs."""
    return k8s_lists_ast


@pytest.fixture
def ast_k8s_estimator() -> KubernetesCallEstimator:
    """The Kubernetes estimator of the upstream cost tests (strings and bytes sized 12)."""
    return k8s_estimator()


@pytest.fixture
def ast_hints() -> Callable[[Mapping[str, int]], HintSizes]:
    """Build a cel-go test size estimator from dotted-path hints."""
    return HintSizes


@pytest.fixture
def ast_year_calls() -> YearCallEstimator:
    """cel-go's test call estimator."""
    return YearCallEstimator()
