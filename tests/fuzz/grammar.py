"""Hypothesis strategies for the fuzz campaign: CEL from a grammar, slices, claims, reviews.

Why a grammar and not random text: random text almost never parses, so it only exercises the
parser. These expressions cover every macro (`all`, `exists`, `exists_one`, `map` with two and
three arguments, `filter`, the two-variable comprehensions, `cel.bind`, `has`), the optional
syntax (`.?f`, `[?k]`, `[?x]`, `{?k: v}`, `optional.*`, `or`, `orValue`) and every Kubernetes
library function, with operands drawn from all value kinds (optionals nested and behind `dyn`,
type values, bytes that are not UTF-8) — the shapes that found the crashers of issue 14.
Most draws do not type-check; that is fine: the invariant is "no crash, no traceback", and the
ones that do compile reach the libraries with values nobody thought of.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

Draw = Callable[..., Any]

KEYS = ("kind", "x", "a", "items", "spec", "name")

_LEAVES = [
    "object", "object.x", "object.a", "object.items", "object.spec", "object.?x", "object[?'a']",
    "object.?kind.orValue('')", "1", "-1", "0", "1u", "2.5", "-0.0", "'a'", "'%s'", "''",
    "b'\\xff'", "b'ab'", "true", "false", "null", "[]", "{}", "int", "string", "dyn", "list",
    "optional.none()", "optional.of(1)", "optional.of(optional.none())", "dyn(optional.none())",
    "[optional.none()]", "lists.range(3)", "'1Ki'", "'1.2.3'", "'10.0.0.1'", "'10.0.0.0/8'",
    "'https://x.example.com/p?q=1'", "duration('1s')", "timestamp('2024-01-01T00:00:00Z')",
    "quantity('1Ki')", "ip('10.0.0.1')", "cidr('10.0.0.0/8')", "semver('1.2.3')",
    "url('https://x.example.com')", "x", "v", "k", "i",
]

# (template, arity): `{0}` is the receiver or first argument.
_CALLS = [
    # standard library and conversions
    ("size({0})", 1), ("{0}.size()", 1), ("int({0})", 1), ("uint({0})", 1), ("double({0})", 1),
    ("string({0})", 1), ("bytes({0})", 1), ("bool({0})", 1), ("dyn({0})", 1), ("type({0})", 1),
    ("duration({0})", 1), ("timestamp({0})", 1), ("{0} in {1}", 2), ("has({0}.x)", 1),
    ("{0} == {1}", 2), ("{0} != {1}", 2), ("{0} < {1}", 2), ("{0} + {1}", 2), ("{0} - {1}", 2),
    ("{0} * {1}", 2), ("{0} / {1}", 2), ("{0} % {1}", 2), ("-{0}", 1), ("!{0}", 1),
    ("{0} && {1}", 2), ("{0} || {1}", 2), ("{0} ? {1} : {2}", 3), ("{0}[{1}]", 2),
    ("[{0}, {1}]", 2), ("{{{0}: {1}}}", 2), ("{0}.matches({1})", 2), ("{0}.startsWith({1})", 2),
    ("{0}.endsWith({1})", 2), ("{0}.contains({1})", 2),
    # optional syntax
    ("optional.of({0})", 1), ("optional.ofNonZeroValue({0})", 1), ("{0}.or({1})", 2),
    ("{0}.orValue({1})", 2), ("{0}.hasValue()", 1), ("{0}.value()", 1), ("[?{0}]", 1),
    ("{{?'k': {0}}}", 1), ("{0}.?x", 1), ("{0}[?{1}]", 2), ("[{0}, ?{1}]", 2),
    # macros and comprehensions
    ("{0}.all(x, {1})", 2), ("{0}.exists(x, {1})", 2), ("{0}.exists_one(x, {1})", 2),
    ("{0}.map(x, {1})", 2), ("{0}.map(x, {1}, {2})", 3), ("{0}.filter(x, {1})", 2),
    ("{0}.all(k, v, {1})", 2), ("{0}.exists(k, v, {1})", 2), ("{0}.existsOne(k, v, {1})", 2),
    ("{0}.transformList(i, v, {1})", 2), ("{0}.transformMap(k, v, {1})", 2),
    ("{0}.transformMapEntry(k, v, {{k: {1}}})", 2), ("cel.bind(x, {0}, {1})", 2),
    ("{0}.sortBy(x, {1})", 2),
    # strings extension
    ("{0}.charAt({1})", 2), ("{0}.indexOf({1})", 2), ("{0}.indexOf({1}, {2})", 3),
    ("{0}.lastIndexOf({1})", 2), ("{0}.lastIndexOf({1}, {2})", 3), ("{0}.lowerAscii()", 1),
    ("{0}.upperAscii()", 1), ("{0}.replace({1}, {2})", 3), ("{0}.split({1})", 2),
    ("{0}.substring({1})", 2), ("{0}.substring({1}, {2})", 3), ("{0}.trim()", 1),
    ("{0}.join({1})", 2), ("{0}.join()", 1), ("{0}.format({1})", 2), ("strings.quote({0})", 1),
    ("{0}.reverse()", 1),
    # sets and lists extensions, Kubernetes lists
    ("sets.contains({0}, {1})", 2), ("sets.equivalent({0}, {1})", 2),
    ("sets.intersects({0}, {1})", 2), ("{0}.isSorted()", 1), ("{0}.sum()", 1), ("{0}.min()", 1),
    ("{0}.max()", 1), ("lists.range({0})", 1), ("{0}.distinct()", 1), ("{0}.flatten()", 1),
    ("{0}.slice({1}, {2})", 3), ("{0}.sort()", 1),
    # regex, URLs
    ("{0}.find({1})", 2), ("{0}.findAll({1})", 2), ("{0}.findAll({1}, {2})", 3),
    ("isURL({0})", 1), ("url({0})", 1), ("{0}.getScheme()", 1), ("{0}.getHost()", 1),
    ("{0}.getHostname()", 1), ("{0}.getPort()", 1), ("{0}.getEscapedPath()", 1),
    ("{0}.getQuery()", 1),
    # quantity
    ("isQuantity({0})", 1), ("quantity({0})", 1), ("{0}.sign()", 1), ("{0}.isInteger()", 1),
    ("{0}.asInteger()", 1), ("{0}.asApproximateFloat()", 1), ("{0}.add({1})", 2),
    ("{0}.sub({1})", 2), ("{0}.isLessThan({1})", 2), ("{0}.isGreaterThan({1})", 2),
    ("{0}.compareTo({1})", 2),
    # IP and CIDR
    ("isIP({0})", 1), ("ip({0})", 1), ("ip.isCanonical({0})", 1), ("{0}.family()", 1),
    ("{0}.isUnspecified()", 1), ("{0}.isLoopback()", 1), ("{0}.isGlobalUnicast()", 1),
    ("{0}.isLinkLocalMulticast()", 1), ("{0}.isLinkLocalUnicast()", 1), ("isCIDR({0})", 1),
    ("cidr({0})", 1), ("{0}.containsIP({1})", 2), ("{0}.containsCIDR({1})", 2),
    ("{0}.ip()", 1), ("{0}.masked()", 1), ("{0}.prefixLength()", 1),
    # format library and semver
    ("format.dns1123Label().validate({0})", 1), ("format.named({0})", 1),
    ("format.named({0}).value().validate({1})", 2), ("isSemver({0})", 1),
    ("isSemver({0}, true)", 1), ("semver({0})", 1), ("semver({0}, true)", 1),
    ("{0}.major()", 1), ("{0}.minor()", 1), ("{0}.patch()", 1),
    # math extension
    ("math.greatest({0}, {1})", 2), ("math.least({0}, {1})", 2), ("math.abs({0})", 1),
    ("math.ceil({0})", 1), ("math.bitOr({0}, {1})", 2),
]


def _expr(draw: Draw, depth: int) -> str:
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        return str(draw(st.sampled_from(_LEAVES)))
    template, arity = draw(st.sampled_from(_CALLS))
    args = [_expr(draw, depth - 1) for _ in range(arity)]
    text = template.format(*args)
    return f"({text})" if draw(st.booleans()) else text


@st.composite
def cel_expressions(draw: Draw, max_depth: int = 4) -> str:
    """One expression of the grammar (module docstring)."""
    return _expr(draw, draw(st.integers(0, max_depth)))


# --- objects -------------------------------------------------------------------------------

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.text(max_size=12), st.sampled_from(["NICConfig", "a", "1Ki", "10.0.0.1"]))
JSON_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=12)
"""Values a JSON object (a claim's opaque parameters) can hold."""

OBJECTS = st.dictionaries(st.sampled_from(KEYS), JSON_VALUES, max_size=5)

_ODD = st.one_of(JSON_VALUES, st.sampled_from([["x"], {"a": 1}, 1, True, None, "", "a" * 300]))
"""A value for a field that may be of the wrong type."""


@st.composite
def resource_slices(draw: Draw) -> dict[str, Any]:
    """A ResourceSlice with generated extractors and, sometimes, wrongly typed fields."""
    entries = [{"name": draw(st.sampled_from(["a", "b", "net", "a", "x" * 70, ""])),
                "expression": draw(st.one_of(cel_expressions(), st.sampled_from(
                    ['object.?kind.orValue("") == "NICConfig" ? "%s".format([object.x]) : ""',
                     "object.x", '"k"', "", " ", "1 +"])))}
               for _ in range(draw(st.integers(0, 9)))]
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": draw(st.sampled_from(["meta", "s-1", "S_bad"]))},
        "spec": {"driver": "networking.example.com", "nodeName": "node-a",
                 "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1}},
    }
    if entries or draw(st.booleans()):
        doc["spec"]["sharingAffinity"] = entries
    if draw(st.booleans()):
        doc["spec"]["devices"] = [{"name": f"d{i}", "allowMultipleAllocations": True}
                                  for i in range(draw(st.integers(0, 3)))]
    if draw(st.integers(0, 5)) == 0:  # a wrongly typed field somewhere
        path = draw(st.sampled_from([("spec", "driver"), ("spec", "pool", "name"), ("kind",),
                                     ("spec", "pool", "generation"), ("metadata", "name"),
                                     ("spec", "sharingAffinity"), ("spec",)]))
        target = doc
        for part in path[:-1]:
            target = target.setdefault(part, {})
        if isinstance(target, dict):
            target[path[-1]] = draw(_ODD)
    return doc


@st.composite
def resource_claims(draw: Draw) -> dict[str, Any]:
    params = draw(st.one_of(OBJECTS, st.just({"kind": "NICConfig", "x": "a"})))
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nic"}}],
                             "config": [{"requests": ["r"], "opaque": {
                                 "driver": "networking.example.com", "parameters": params}}]}},
    }


@st.composite
def admission_reviews(draw: Draw) -> dict[str, Any]:
    """An AdmissionReview as the API server sends it, or with one hostile twist."""
    new = draw(resource_slices())
    operation = draw(st.sampled_from(["CREATE", "UPDATE", "UPDATE", "DELETE", "CONNECT"]))
    old = copy.deepcopy(new) if operation == "UPDATE" and draw(st.booleans()) else (
        draw(resource_slices()) if operation == "UPDATE" else None)
    request: dict[str, Any] = {
        "uid": draw(st.sampled_from(["u-1", "x" * 200, "\u00e9"])),
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
        "operation": operation, "name": "meta", "dryRun": draw(st.booleans()),
        "object": new if operation != "DELETE" else None, "oldObject": old,
    }
    if draw(st.integers(0, 6)) == 0:
        key = draw(st.sampled_from(["uid", "kind", "operation", "dryRun", "object"]))
        request[key] = draw(_ODD)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def review_bytes(review: dict[str, Any]) -> bytes:
    return json.dumps(review).encode()
