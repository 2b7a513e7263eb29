"""Runtime price of one function call, as cel-go's `CostTracker.costCall` computes it.

Why here: the runtime cost of a call is the only part of cel-go's runtime cost model that depends
on *which* function ran and on the actual argument and result values. cel-go consults, in order:

1. the per-overload trackers that libraries register (`ext.Lists` v3: slice/flatten/range/
   reverse/distinct/sort/sortBy; `ext.Sets`: contains/intersects/equivalent), keyed by the call's
   overload id;
2. the `ActualCostEstimator` the program was built with. Kubernetes always installs
   `library.CostEstimator` (`StrictCostOpt`), whose `CallCost` is keyed by *function name*
   (reference §5.5, right column; code read from kubernetes `library/cost.go` rev fbba6b47);
3. cel-go's defaults keyed by overload id (reference §5.4, cel-go v0.26): string/bytes
   traversals (`startsWith`/`endsWith` by the *receiver*), `in` over a list, comparisons and
   (in)equality by the smaller operand, string/bytes concatenation, member `matches` and
   `contains`; 1 for anything else. (Newer cel-go prices `startsWith` by its argument,
   `cel-expr/cel-go#1351`, and also prices the global `matches(s, re)`; Kubernetes 1.37's
   cel-go pin is unknown.)

The overload id is the one cel-go's planner attaches: the checker's single candidate, or `""` when
the checker left several candidates (typical for `dyn` arguments); `==`/`!=` always carry
`equals`/`not_equals`. `go_overload_id` derives it from the cel-cpp candidates.

Arithmetic follows the Go code: `math.Ceil` of float64 products for traversal factors, plain
truncation (`uint64(float64(...))`) where the Go code truncates, uint64 wrap-around where Go
wraps, saturation at 2^64-1 otherwise.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from ..common.jsonvalue import Opaque, OptionalValue, actual_size
from ..cost.estimate import (
    LIST_CREATE_BASE_COST,
    MAX_UINT64,
    REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR,
    STRUCT_CREATE_BASE_COST,
)

__all__ = [
    "CALL_COST",
    "FORMAT_MAX_REGEX_SIZE",
    "KUBERNETES_OBJECT_TYPES",
    "call_cost",
    "default_call_cost",
    "format_regex_size",
    "go_overload_id",
    "kubernetes_call_cost",
    "kubernetes_result_type",
    "priced_by_result",
    "pricer_for",
    "traversal_cost",
]

#: cel-go ext `callCost`: the base cost of a call priced by a library tracker.
CALL_COST = 1
#: Kubernetes `library.CostEstimator` constants.
AUTHZ_CHECK_COST = 350_000
_SELECTOR_LENGTH_TO_REQUIREMENT_COUNT = 0.5
_COST_PER_REQUIREMENT = float(LIST_CREATE_BASE_COST + STRUCT_CREATE_BASE_COST)
_TWO_64 = 1 << 64

#: Type names of Kubernetes library values whose `==` Kubernetes prices at 1.
KUBERNETES_OBJECT_TYPES = frozenset({
    "kubernetes.Quantity", "net.IP", "net.CIDR", "kubernetes.NamedFormat", "kubernetes.URL",
    "kubernetes.Semver", "kubernetes.authorization.Authorizer", "kubernetes.authorization.PathCheck",
    "kubernetes.authorization.GroupCheck", "kubernetes.authorization.ResourceCheck",
    "kubernetes.authorization.Decision",
})

#: `MaxRegexSize` of the named formats (kubernetes `library/format.go`); `validate` is priced as a
#: regex match against a pattern of that size. The strfmt-backed formats take theirs from
#: kube-openapi's `validation/strfmt`: `urlLength` (1103) for `uri`, `base64Length` (84) for
#: `byte`, `len(strfmt.UUIDPattern)` (70) for `uuid` and `len(strfmt.DateTimePattern)` (71) for
#: `date` and `datetime`.
FORMAT_MAX_REGEX_SIZE: Mapping[str, int] = {
    "dns1123Label": 30, "dns1123Subdomain": 60, "dns1035Label": 30, "qualifiedName": 60,
    "portName": 20, "dns1123LabelPrefix": 30, "dns1123SubdomainPrefix": 60,
    "dns1035LabelPrefix": 30, "labelValue": 40,
    "uri": 1103, "byte": 84, "uuid": 70, "date": 71, "datetime": 71,
}


def format_regex_size(value: object) -> int | None:
    """`MaxRegexSize` of a `kubernetes.NamedFormat` value (carried as `[tag, name]`)."""
    if isinstance(value, Opaque) and value.type_name == "kubernetes.NamedFormat":
        token = value.token
        if isinstance(token, list) and len(token) == 2 and isinstance(token[1], str):
            return FORMAT_MAX_REGEX_SIZE.get(token[1])
    return None


def kubernetes_result_type(overload_id: str) -> str | None:
    """The Kubernetes library type (`net.IP`, `kubernetes.Quantity`, ...) an overload returns.

    Our Kubernetes library carries these values as plain strings or tagged lists, so only the
    declaration tells an IP from a string; pricing needs the difference (library objects have
    size 1 and compare at cost 1).
    """
    return _declared_results().get(overload_id)


@lru_cache(maxsize=1)
def _declared_results() -> Mapping[str, str]:
    try:
        library = importlib.import_module("dra_affinity.policies.cel.k8s_library")
    except ImportError:
        return {}
    results: dict[str, str] = {}
    for lib in getattr(library, "LIBRARIES", ()):
        for decl in getattr(lib, "declarations", ()):
            name = getattr(decl.result, "name", "")
            if name in KUBERNETES_OBJECT_TYPES:
                results[decl.overload_id] = name
    return results


def kubernetes_receiver_type(overload_id: str) -> str | None:
    """The Kubernetes library type (`kubernetes.URL`, `net.IP`, ...) a member overload is
    declared on, or None."""
    return _declared_receivers().get(overload_id)


@lru_cache(maxsize=1)
def _declared_receivers() -> Mapping[str, str]:
    try:
        library = importlib.import_module("dra_affinity.policies.cel.k8s_library")
    except ImportError:
        return {}
    receivers: dict[str, str] = {}
    for lib in getattr(library, "LIBRARIES", ()):
        for decl in getattr(lib, "declarations", ()):
            name = getattr(decl.target, "name", "")
            if name in KUBERNETES_OBJECT_TYPES:
                receivers[decl.overload_id] = name
    return receivers


# Overload ids cel-cpp spells differently from cel-go (cel-go's spelling is what trackers use).
_CPP_TO_GO_OVERLOAD = {"list_range": "lists_range"}
# `==` and `!=` are planned as dedicated instructions whose overload id is fixed.
_FIXED_OVERLOAD = {"_==_": "equals", "_!=_": "not_equals"}


def go_overload_id(function: str, candidates: Sequence[str]) -> str:
    """The overload id cel-go's planner gives a call with these checker candidates."""
    fixed = _FIXED_OVERLOAD.get(function)
    if fixed is not None:
        return fixed
    if len(candidates) != 1:
        return ""
    return _CPP_TO_GO_OVERLOAD.get(candidates[0], candidates[0])


Pricer = Callable[[Sequence[object], object], int]


RegexSize = Callable[[object], int | None]


def call_cost(function: str, overload_id: str, args: Sequence[object], result: object, *,
              kubernetes: bool = True, regex_size: RegexSize = format_regex_size) -> int:
    """Cost of one evaluated call (arguments in cel-go order: receiver first)."""
    return pricer_for(function, overload_id, kubernetes=kubernetes,
                      regex_size=regex_size)(args, result)


def pricer_for(function: str, overload_id: str, *, kubernetes: bool = True,
               regex_size: RegexSize = format_regex_size) -> Pricer:
    """The pricing function of one call site, resolved once (the chain depends only on the
    function name and overload id, except where Kubernetes inspects argument values)."""
    tracker = _OVERLOAD_TRACKERS.get(overload_id)
    if tracker is not None:
        return tracker
    if function in ("_==_", "_!=_"):
        check_kubernetes = kubernetes and function == "_==_"

        def equality(args: Sequence[object], result: object) -> int:
            lhs = args[0]
            if (check_kubernetes and isinstance(lhs, Opaque)
                    and lhs.type_name in KUBERNETES_OBJECT_TYPES):
                return 1
            return _ceil_factor(min(actual_size(lhs), actual_size(args[1])),
                                STRING_TRAVERSAL_COST_FACTOR)
        return equality
    if kubernetes and function in _KUBERNETES_FUNCTIONS:
        def priced(args: Sequence[object], result: object) -> int:
            cost = kubernetes_call_cost(function, overload_id, args, result,
                                        regex_size=regex_size)
            return cost if cost is not None else default_call_cost(overload_id, args)
        return priced
    if overload_id in _DEFAULT_PRICED:
        return lambda args, result: default_call_cost(overload_id, args)
    return _one


_RESULT_PRICED_OVERLOADS = frozenset({"list_slice", "lists_range", "list_reverse"})


def priced_by_result(function: str, overload_id: str, *, kubernetes: bool = True) -> bool:
    """Whether the call's price depends on its result (ext.Lists' allocating calls, Kubernetes'
    `join`); every other price is known from the arguments before the call runs."""
    return overload_id in _RESULT_PRICED_OVERLOADS or (kubernetes and function == "join")


def _one(args: Sequence[object], result: object) -> int:
    return 1


# ------------------------------------------------------------------------------------------------
# Arithmetic helpers (Go semantics)
# ------------------------------------------------------------------------------------------------


def _ceil_factor(size: int, factor: float) -> int:
    """uint64(math.Ceil(float64(size) * factor)), saturating."""
    value = math.ceil(float(size) * factor)
    return MAX_UINT64 if value >= _TWO_64 else int(value)


def _trunc(value: float) -> int:
    """Go `uint64(f)` as compiled for amd64: negative values wrap, huge ones saturate."""
    if value >= float(_TWO_64):
        return MAX_UINT64
    return int(value) & MAX_UINT64


def _sat(value: int) -> int:
    return min(value, MAX_UINT64)


# ------------------------------------------------------------------------------------------------
# 1. Library overload trackers (cel-go ext.Lists v3, ext.Sets)
# ------------------------------------------------------------------------------------------------


def _allocating_list_call(factor: float, size: int) -> int:
    """ext trackAllocatingListCall: uint64(size*factor) + callCost + ListCreateBaseCost (wraps)."""
    return (_trunc(float(size) * factor) + CALL_COST + LIST_CREATE_BASE_COST) & MAX_UINT64


def _track_list_output_size(args: Sequence[object], result: object) -> int:
    return _allocating_list_call(1.0, actual_size(result))


def _track_list_flatten(args: Sequence[object], result: object) -> int:
    depth = 1.0
    if len(args) == 2 and isinstance(args[1], int) and not isinstance(args[1], bool):
        depth = float(args[1])
    return _allocating_list_call(depth, actual_size(args[0]))


def _track_list_self_compare(items: object) -> int:
    size = actual_size(items)
    factor = 2.0
    if size == 0:
        return _allocating_list_call(factor, 0)
    first = items[0] if isinstance(items, list) else None
    if isinstance(first, str | bytes):
        factor += STRING_TRAVERSAL_COST_FACTOR
    return _allocating_list_call(factor, size * size)


def _track_sets(factor: float) -> Callable[[Sequence[object], object], int]:
    def track(args: Sequence[object], result: object) -> int:
        lhs, rhs = actual_size(args[0]), actual_size(args[1])
        return (CALL_COST + _trunc(float((lhs * rhs) & MAX_UINT64) * factor)) & MAX_UINT64
    return track


def _build_trackers() -> Mapping[str, Callable[[Sequence[object], object], int]]:
    trackers: dict[str, Callable[[Sequence[object], object], int]] = {
        "list_slice": _track_list_output_size,
        "list_flatten": _track_list_flatten,
        "list_flatten_int": _track_list_flatten,
        "lists_range": _track_list_output_size,
        "list_reverse": _track_list_output_size,
        "list_distinct": lambda args, result: _track_list_self_compare(args[0]),
        "list_sets_contains_list": _track_sets(1.0),
        "list_sets_intersects_list": _track_sets(1.0),
        "list_sets_equivalent_list": _track_sets(2.0),
    }
    comparable = ("int", "uint", "double", "bool", "google.protobuf.Duration",
                  "google.protobuf.Timestamp", "string", "bytes")
    for name in comparable:
        trackers[f"list_{name}_sort"] = lambda args, result: _track_list_self_compare(args[0])
        trackers[f"list_{name}_sortByAssociatedKeys"] = (
            lambda args, result: _track_list_self_compare(args[1]))
    return trackers


_OVERLOAD_TRACKERS = _build_trackers()


# ------------------------------------------------------------------------------------------------
# 2. Kubernetes library.CostEstimator.CallCost
# ------------------------------------------------------------------------------------------------

_NOMINAL = frozenset({
    # authorization builders and accessors
    "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed",
    "reason", "error", "errored",
    # IP and CIDR accessors
    "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
    "isLinkLocalUnicast", "isGlobalUnicast",
    # format lookup
    "format.named",
    # quantity and semver accessors/comparisons
    "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
    "compareTo", "add", "sub", "major", "minor", "patch",
    # URL accessors
    "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery",
})
_TRAVERSAL = frozenset({"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes"})
_STRING_SCAN = frozenset({"url", "lowerAscii", "upperAscii", "substring", "trim",
                          "jsonpatch.escapeKey", "cidr", "isIP", "isCIDR", "quantity",
                          "isQuantity", "semver", "isSemver"})
_KUBERNETES_FUNCTIONS = (_NOMINAL | _TRAVERSAL | _STRING_SCAN | {
    "check", "fieldSelector", "labelSelector", "replace", "split", "join", "find", "findAll",
    "ip", "ip.isCanonical", "containsIP", "containsCIDR", "validate"})


def _library_size(value: object) -> int:
    """The Kubernetes library's `actualSize`: a sizer's size, else 1. Unlike cel-go's own, it
    does not look inside an optional (`isSemver(object[?'x'])` pays for a size of 1)."""
    return 1 if isinstance(value, OptionalValue) else actual_size(value)


def kubernetes_call_cost(function: str, overload_id: str, args: Sequence[object], result: object,
                         *, regex_size: RegexSize = format_regex_size) -> int | None:
    """Kubernetes `library.CostEstimator.CallCost`; None when it has no opinion."""
    if function == "check":
        return AUTHZ_CHECK_COST
    if function in _NOMINAL:
        return 1
    if function in _TRAVERSAL:
        return traversal_cost(args[0]) if args else 0
    if function in ("fieldSelector", "labelSelector"):
        return _selector_cost(_library_size(args[1])) if len(args) >= 2 else None
    if function in _STRING_SCAN:
        return _ceil_factor(_library_size(args[0]), STRING_TRAVERSAL_COST_FACTOR) if args else None
    if function in ("replace", "split"):
        if not args:
            return None
        return _ceil2(_library_size(args[0]))
    if function == "join":
        return _ceil2(_library_size(result)) if args else None
    if function in ("find", "findAll"):
        if len(args) < 2:
            return None
        return _regex_cost(_library_size(args[0]), _library_size(args[1]))
    if function == "ip":
        if not args:
            return None
        if overload_id == "cidr_ip":
            return 1
        return _ceil_factor(_library_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)
    if function == "ip.isCanonical":
        return _ceil2(_library_size(args[0])) if args else None
    if function in ("containsIP", "containsCIDR"):
        return _contains_cost(function, overload_id, args) if len(args) >= 2 else None
    if function == "validate":
        return _validate_cost(args, regex_size)
    if function == "_==_" and len(args) == 2:
        lhs = args[0]
        if isinstance(lhs, Opaque) and lhs.type_name in KUBERNETES_OBJECT_TYPES:
            return 1
    return None


def _ceil2(size: int) -> int:
    # Go: math.Ceil(float64(size) * 2 * StringTraversalCostFactor), evaluated left to right.
    value = math.ceil(float(size) * 2 * STRING_TRAVERSAL_COST_FACTOR)
    return MAX_UINT64 if value >= _TWO_64 else int(value)


def _selector_cost(length: int) -> int:
    parse = _ceil_factor(length, STRING_TRAVERSAL_COST_FACTOR)
    requirements = _ceil_factor(length, _SELECTOR_LENGTH_TO_REQUIREMENT_COUNT)
    requirement_cost = _ceil_factor(requirements, _COST_PER_REQUIREMENT)
    return _sat(LIST_CREATE_BASE_COST + parse + requirement_cost)


def _regex_cost(string_size: int, regex_size: int) -> int:
    str_cost = math.ceil((1.0 + float(string_size)) * STRING_TRAVERSAL_COST_FACTOR)
    regex_cost = math.ceil(float(regex_size) * REGEX_STRING_LENGTH_COST_FACTOR)
    return (int(str_cost) * int(regex_cost)) & MAX_UINT64


def _contains_cost(function: str, overload_id: str, args: Sequence[object]) -> int:
    cidr_size, other_size = _library_size(args[0]), _library_size(args[1])
    cost = _ceil_factor(cidr_size + cidr_size, STRING_TRAVERSAL_COST_FACTOR)
    if function == "containsCIDR":
        cost += _ceil_factor(cidr_size, STRING_TRAVERSAL_COST_FACTOR) + 1
        string_overload = "cidr_contains_cidr_string"
    else:
        string_overload = "cidr_contains_ip_string"
    if overload_id == string_overload:
        cost += _ceil_factor(other_size, STRING_TRAVERSAL_COST_FACTOR)
    return _sat(cost)


def _validate_cost(args: Sequence[object], regex_size: RegexSize) -> int | None:
    if len(args) < 2:
        return None
    size = regex_size(args[0])
    if size is None:
        return None
    return _regex_cost(_library_size(args[1]), size)


def traversal_cost(value: object) -> int:
    """Kubernetes `traversalCost`: strings/bytes by UTF-8/byte length x 0.1 (truncated),
    containers summed element by element (map keys and values), everything else 1.

    A container (or long string) held several times is priced each time, as upstream walks it,
    but measured once: a list shared through `cel.bind(x, [x, x], ...)` is priced in time
    linear in its distinct parts."""
    return _traversal(value, {})


def _traversal(value: object, memo: dict[int, int]) -> int:
    if isinstance(value, str | bytes | list | dict):
        known = memo.get(id(value))
        if known is not None:
            return known
        if isinstance(value, str):
            cost = int(float(len(value.encode("utf-8", errors="surrogatepass")))
                       * STRING_TRAVERSAL_COST_FACTOR)
        elif isinstance(value, bytes):
            cost = int(float(len(value)) * STRING_TRAVERSAL_COST_FACTOR)
        elif isinstance(value, list):
            cost = _sat(sum(_traversal(v, memo) for v in value))
        else:
            cost = _sat(sum(_traversal(k, memo) + _traversal(v, memo) for k, v in value.items()))
        if not isinstance(value, str | bytes) or len(value) > 64:
            memo[id(value)] = cost
        return cost
    return 1


# ------------------------------------------------------------------------------------------------
# 3. cel-go defaults (interpreter/runtimecost.go)
# ------------------------------------------------------------------------------------------------

_SCAN_FIRST = frozenset({"starts_with_string", "ends_with_string", "string_to_bytes",
                         "bytes_to_string", "strings_quote", "string_format"})
_MIN_OF_TWO = frozenset({"less_string", "greater_string", "less_equals_string",
                         "greater_equals_string", "less_bytes", "greater_bytes",
                         "less_equals_bytes", "greater_equals_bytes", "equals", "not_equals"})


_DEFAULT_PRICED = (_SCAN_FIRST | _MIN_OF_TWO | {"in_list", "add_string", "add_bytes",
                                                "matches_string", "contains_string"})


def default_call_cost(overload_id: str, args: Sequence[object]) -> int:
    """cel-go's built-in call prices; 1 for calls it does not single out."""
    if overload_id in _SCAN_FIRST:
        return _ceil_factor(actual_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)
    if overload_id == "in_list":
        return actual_size(args[1])
    if overload_id in _MIN_OF_TWO:
        return _ceil_factor(min(actual_size(args[0]), actual_size(args[1])),
                            STRING_TRAVERSAL_COST_FACTOR)
    if overload_id in ("add_string", "add_bytes"):
        return _ceil_factor(actual_size(args[0]) + actual_size(args[1]),
                            STRING_TRAVERSAL_COST_FACTOR)
    if overload_id == "matches_string":
        return _regex_cost(actual_size(args[0]), actual_size(args[1]))
    if overload_id == "contains_string":
        return (_ceil_factor(actual_size(args[0]), STRING_TRAVERSAL_COST_FACTOR)
                * _ceil_factor(actual_size(args[1]), STRING_TRAVERSAL_COST_FACTOR)) & MAX_UINT64
    return 1
