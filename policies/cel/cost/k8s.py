"""Kubernetes `library.CostEstimator.EstimateCallCost` as a `CallEstimator`.

Why: Kubernetes prices its own CEL libraries (urls, regex, lists, ip, cidr, quantity, semver,
format, authz, and some ext.Strings members) with an estimator that keys on the *function name*.
The DRA `device` environment estimates selector costs with it (wrapping a size estimator that
knows the declared maximum sizes); the sharing-affinity scheduler code does not use it at all
(reference §1.4), so that environment passes no call estimator.

Ported from `staging/src/k8s.io/apiserver/pkg/cel/library/cost.go` (rev fbba6b47). One deliberate
reading: for the *global* parsers (`ip`, `cidr`, `isIP`, `isCIDR`, `ip.isCanonical`, `quantity`,
`isQuantity`, `semver`, `isSemver`) upstream checks `target != nil`, which held for every call
while cel-go passed a non-nil pointer even for global functions; Kubernetes' cost tests (and its
API-compatibility rule that estimated costs never change) pin the argument-size pricing, so that
is what is reproduced here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..common.ast import ConstKind, NodeKind
from ..common.types import CelType, TypeKind
from .estimate import (
    LIST_CREATE_BASE_COST,
    MAX_UINT64,
    REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR,
    STRUCT_CREATE_BASE_COST,
    CallEstimate,
    CostEstimate,
    EstimateNode,
    SizeEstimate,
    SizeEstimator,
    SizePath,
    estimate_size,
    go_kind,
)

__all__ = ["MAX_FORMAT_SIZE", "MAX_NAME_FORMAT_REGEX_SIZE", "KubernetesCallEstimator"]

MAX_FORMAT_SIZE = 64
MAX_NAME_FORMAT_REGEX_SIZE = 128
_SELECTOR_LENGTH_TO_REQUIREMENT_COUNT = 0.5
_COST_PER_REQUIREMENT = float(LIST_CREATE_BASE_COST + STRUCT_CREATE_BASE_COST)
_ONE = CostEstimate(1, 1)
_TWICE_TRAVERSAL = 0.2  # Go folds the constant 2 * 0.1 exactly

_AUTHZ_NOMINAL = frozenset({"serviceAccount", "path", "group", "resource", "subresource",
                            "namespace", "name", "allowed", "reason", "error", "errored"})
_LIST_TRAVERSALS = frozenset({"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf",
                              "includes"})
_IP_ACCESSORS = frozenset({"masked", "prefixLength", "family", "isUnspecified", "isLoopback",
                           "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"})
_NOMINAL = frozenset({"format.named", "sign", "asInteger", "isInteger", "asApproximateFloat",
                      "isGreaterThan", "isLessThan", "compareTo", "add", "sub", "major", "minor",
                      "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath",
                      "getQuery"})
_PARSERS = frozenset({"cidr", "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver"})

# Kubernetes types whose equality is O(1) (upstream names, cel types.go / authz.go).
_UNIT_EQUALITY_TYPES = frozenset({
    "net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.Semver",
    "kubernetes.authorization.Authorizer", "kubernetes.authorization.PathCheck",
    "kubernetes.authorization.GroupCheck", "kubernetes.authorization.ResourceCheck",
    "kubernetes.authorization.Decision",
})
_FORMAT_TYPE = "kubernetes.NamedFormat"
_URL_TYPE = "kubernetes.URL"


def _go_float_to_uint64(f: float) -> int:
    """Go's amd64 float64→uint64 conversion (values ≥ 2^64 become 2^63), used where upstream
    converts without saturating."""
    if math.isnan(f) or f >= 2.0**64:
        return 1 << 63
    if f < 0:
        return 0
    return int(f)


def _custom_type_name(t: CelType) -> str:
    """Name of an abstract/message type (how the Kubernetes types appear in checked ASTs)."""
    return t.name if t.kind in (TypeKind.ABSTRACT, TypeKind.MESSAGE) else ""


class KubernetesCallEstimator:
    """Kubernetes library pricing; `sizes` answers for sizes CEL cannot compute itself."""

    def __init__(self, sizes: SizeEstimator | None = None) -> None:
        self.sizes = sizes

    def _size(self, node: EstimateNode) -> SizeEstimate:
        return estimate_size(self.sizes, node)

    def estimate_call(self, function: str, overload_id: str, target: EstimateNode | None,
                      args: Sequence[EstimateNode]) -> CallEstimate | None:
        """The call's own cost (arguments excluded), or None to use cel-go's default."""
        f = STRING_TRAVERSAL_COST_FACTOR
        if function == "check":
            return CallEstimate(CostEstimate(350000, 350000))
        if function in _AUTHZ_NOMINAL:
            return CallEstimate(_ONE)
        if function in ("fieldSelector", "labelSelector"):
            if len(args) == 1:
                return CallEstimate(_selector_cost(self._size(args[0])))
            return None
        if function in _LIST_TRAVERSALS:
            return self._list_traversal(target, function) if target is not None else None
        if function in ("url", "jsonpatch.escapeKey"):
            if len(args) == 1:
                sz = self._size(args[0])
                return CallEstimate(sz.multiply_by_cost_factor(f), sz)
            return None
        if function in ("lowerAscii", "upperAscii", "substring", "trim"):
            if target is not None:
                sz = self._size(target)
                return CallEstimate(sz.multiply_by_cost_factor(f), sz)
            return None
        if function == "replace":
            if target is not None and len(args) >= 2:
                return self._replace(target, args)
            return None
        if function == "split":
            return self._split(target, args) if target is not None else None
        if function == "join":
            return self._join(target, args) if target is not None else None
        if function in ("find", "findAll"):
            if target is not None and args:
                sz = self._size(target)
                str_cost = sz.add(SizeEstimate(1, 1)).multiply_by_cost_factor(f)
                regex_cost = self._size(args[0]).multiply_by_cost_factor(
                    REGEX_STRING_LENGTH_COST_FACTOR)
                return CallEstimate(str_cost.multiply(regex_cost), SizeEstimate(0, sz.max))
            return None
        if function in _PARSERS:
            if args:
                return CallEstimate(self._size(args[0]).multiply_by_cost_factor(f))
            return None
        if function == "ip":
            if overload_id == "cidr_ip" or not args:
                return CallEstimate(_ONE)  # the IP of a CIDR is a field access
            return CallEstimate(self._size(args[0]).multiply_by_cost_factor(f))
        if function == "ip.isCanonical":
            if args:
                return CallEstimate(self._size(args[0]).multiply_by_cost_factor(_TWICE_TRAVERSAL))
            return None
        if function in _IP_ACCESSORS:
            return CallEstimate(_ONE)
        if function in ("containsIP", "containsCIDR"):
            if target is not None and args:
                return CallEstimate(self._contains(function, overload_id, args[0]))
            return None
        if function == "validate":
            if target is not None and args:
                cost = self._size(args[0]).multiply_by_cost_factor(f).multiply_by_cost_factor(
                    MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR)
                return CallEstimate(cost)
            return None
        if function in _NOMINAL:
            return CallEstimate(_ONE)
        if function == "_==_" and len(args) == 2:
            return self._equality(args[0], args[1])
        return None

    # --- helpers ---

    def _list_traversal(self, target: EstimateNode, function: str) -> CallEstimate:
        """isSorted/sum/min/max/indexOf/lastIndexOf/includes: one comparison per element."""
        element = _list_element(target)
        if element is None and function == "includes":
            # a `dyn` target may be a list: n comparisons of cost 1
            return CallEstimate(self._size(target).multiply_by_cost(_ONE))
        if element is None:  # a string target (indexOf/lastIndexOf of ext.Strings)
            return CallEstimate(self._size(target).multiply_by_cost_factor(
                STRING_TRAVERSAL_COST_FACTOR))
        el_cost = _ONE
        if go_kind(element.type) in ("string", "bytes"):
            el_cost = el_cost.add(self._size(element).multiply_by_cost_factor(
                STRING_TRAVERSAL_COST_FACTOR))
        return CallEstimate(self._size(target).multiply_by_cost(el_cost))

    def _replace(self, target: EstimateNode, args: Sequence[EstimateNode]) -> CallEstimate:
        sz = self._size(target)
        to_replace = self._size(args[0])
        replace_with = self._size(args[1])
        # longest result
        if to_replace.min == 0:
            count_max = sz.max + 1 if sz.max < MAX_UINT64 else sz.max
            retained_max = sz.max
        elif replace_with.max <= to_replace.min:
            count_max, retained_max = 0, sz.max
        else:
            count_max = _go_float_to_uint64(math.ceil(float(sz.max) / float(to_replace.min)))
            retained_max = 0
        # shortest result
        if to_replace.max == 0:
            count_min = sz.min + 1 if sz.min < MAX_UINT64 else sz.min
            retained_min = sz.min
        elif to_replace.max <= replace_with.min:
            count_min, retained_min = 0, sz.min
        else:
            count_min = _go_float_to_uint64(math.ceil(float(sz.min) / float(to_replace.max)))
            retained_min = 0
        size = SizeEstimate(count_min, count_max).multiply(replace_with).add(
            SizeEstimate(retained_min, retained_max))
        return CallEstimate(sz.multiply_by_cost_factor(_TWICE_TRAVERSAL), size)

    def _split(self, target: EstimateNode, args: Sequence[EstimateNode]) -> CallEstimate:
        sz = self._size(target)
        limit = sz.max
        if len(args) > 1:
            n = args[1].node
            if (n is not None and n.kind is NodeKind.CONST and n.const is not None
                    and n.const.kind is ConstKind.INT and isinstance(n.const.value, int)):
                limit = n.const.value & MAX_UINT64  # Go's uint64(int64) conversion
        return CallEstimate(sz.multiply_by_cost_factor(_TWICE_TRAVERSAL), SizeEstimate(0, limit))

    def _join(self, target: EstimateNode, args: Sequence[EstimateNode]) -> CallEstimate:
        list_size = self._size(target)
        sz = SizeEstimate(0, 0)
        element = _list_element(target)
        if element is not None:
            sz = list_size.multiply(self._size(element))
        if args:
            sep = self._size(args[0])
            separators = SizeEstimate(max(list_size.min - 1, 0), max(list_size.max - 1, 0))
            sz = sz.add(sep.multiply(separators))
        return CallEstimate(sz.multiply_by_cost_factor(STRING_TRAVERSAL_COST_FACTOR), sz)

    def _contains(self, function: str, overload_id: str, arg: EstimateNode) -> CostEstimate:
        f = STRING_TRAVERSAL_COST_FACTOR
        ip_bytes = SizeEstimate(4, 16)  # IPv4 or IPv6 address bytes
        cost = ip_bytes.add(ip_bytes).multiply_by_cost_factor(f)
        if function == "containsCIDR":
            cost = cost.add(ip_bytes.multiply_by_cost_factor(f)).add(_ONE)
        if overload_id in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
            sz = self._size(arg)
            cost = cost.add(CostEstimate(sz.min, sz.max).multiply_by_cost_factor(f))
        return cost

    def _equality(self, lhs: EstimateNode, rhs: EstimateNode) -> CallEstimate | None:
        if lhs.type != rhs.type:
            return None
        name = _custom_type_name(lhs.type)
        if name in _UNIT_EQUALITY_TYPES:
            return CallEstimate(_ONE)
        if name == _FORMAT_TYPE:
            return CallEstimate(CostEstimate(1, MAX_FORMAT_SIZE).multiply_by_cost_factor(
                STRING_TRAVERSAL_COST_FACTOR))
        if name == _URL_TYPE:
            size = SizeEstimate(1, 1)
            # upstream reads the right-hand size twice; reproduced as is
            rh, lh = rhs.computed_size, rhs.computed_size
            if rh is not None and lh is not None:
                size = rh.union(lh)
            return CallEstimate(CostEstimate(1, size.max).multiply_by_cost_factor(
                STRING_TRAVERSAL_COST_FACTOR))
        return None


def _selector_cost(length: SizeEstimate) -> CostEstimate:
    """Field/label selector parse: 10 + length·0.1 + (length·0.5)·50."""
    parse = length.multiply_by_cost_factor(STRING_TRAVERSAL_COST_FACTOR)
    requirements = length.multiply_by_cost_factor(_SELECTOR_LENGTH_TO_REQUIREMENT_COUNT)
    requirement_cost = requirements.multiply_by_cost_factor(_COST_PER_REQUIREMENT)
    base = CostEstimate(LIST_CREATE_BASE_COST, LIST_CREATE_BASE_COST)
    return base.add(parse).add(requirement_cost)


def _list_element(node: EstimateNode) -> EstimateNode | None:
    """Upstream `listElementNode`: the first type parameter, with path `<path>.@items`."""
    params = _type_parameters(node.type)
    if not params:
        return None
    elem = params[0]
    path = [*node.path, "@items"] if node.path else []
    return EstimateNode(SizePath(path, elem, None), elem, None, None)


def _type_parameters(t: CelType) -> tuple[CelType, ...]:
    """cel-go `Type.Parameters()` of a checked type."""
    if t.kind in (TypeKind.LIST, TypeKind.MAP, TypeKind.ABSTRACT, TypeKind.TYPE):
        return t.params
    return ()
