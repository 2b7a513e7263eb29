"""The fuzz campaign's inputs: CEL from a grammar, slices, claims, reviews, and mutated examples.

Why a grammar and not random text: random text almost never parses, so it only exercises the
parser. These expressions cover every macro (`all`, `exists`, `exists_one`, `map` with two and
three arguments, `filter`, the two-variable comprehensions with and without their filter,
`cel.bind`, `has`), the optional syntax (`.?f`, `[?k]`, `[?x]`, `{?k: v}`, `optional.*`, `or`,
`orValue`, `optMap`, `optFlatMap`), and every function of the Kubernetes libraries
(`policies/cel/k8s_library`; `test_fuzz` checks the list against the libraries' declarations)
and of the cel-go extensions Kubernetes enables, with operands drawn from all value kinds
(optionals nested and behind `dyn`, type values, bytes that are not UTF-8) — the shapes that
found the engine crashers. The shipped examples' expressions are mutated too (a leaf
replaced, the whole wrapped, a character dropped), so near-valid variants of real extractors
reach the rules and the engine. Most draws do not type-check; that is fine: the invariants are
"no crash, no traceback", and the ones that do compile reach the libraries with values nobody
thought of.

Every generator takes a `Source` of choices, so one grammar serves two engines:
`RandomSource` (a seeded `random.Random`: the long campaign, tens of thousands of cases a
minute, each reproducible from its seed) and `HypothesisSource` (the suite's property tests,
which shrink a failure to a small example). Hypothesis's own generation costs ~5 ms a case here,
five times what evaluating the case does: the campaign would measure hypothesis.
"""

from __future__ import annotations

import copy
import functools
import math
import random
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml
from hypothesis import strategies as st

T = TypeVar("T")
Draw = Callable[..., Any]


class Source(Protocol):
    """The choices a generator makes; see the module docstring for the two implementations."""

    def integer(self, lo: int, hi: int) -> int: ...

    def floating(self) -> float: ...

    def text(self, max_size: int) -> str: ...


def choice(src: Source, options: Sequence[T]) -> T:
    return options[src.integer(0, len(options) - 1)]


def coin(src: Source) -> bool:
    return src.integer(0, 1) == 1


_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 5e-324, 1.7976931348623157e308, -1e308, 1e16,
           2.0**53, 2.0**63, -(2.0**63), 3.14)
# ASCII, Latin-1, a combining mark, CJK, an emoji; no surrogates (JSON and YAML refuse them)
_CHAR_RANGES = ((0x20, 0x7E), (0x0, 0x1F), (0xA0, 0xFF), (0x300, 0x36F), (0x4E00, 0x4E10),
                (0x1F600, 0x1F610))


class RandomSource:
    """Choices from a seeded `random.Random` (the campaign)."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self._rng.randint(lo, hi)

    def floating(self) -> float:
        r = self._rng
        kind = r.randint(0, 3)
        if kind == 0:
            return r.choice(_FLOATS)
        if kind == 1:
            return r.uniform(-1e6, 1e6)
        if kind == 2:
            return float(r.randint(-(2**31), 2**31))
        value = r.uniform(-1, 1) * 10.0 ** r.randint(-320, 308)
        return value if math.isfinite(value) else 0.0

    def text(self, max_size: int) -> str:
        r = self._rng
        chars = []
        for _ in range(r.randint(0, max_size)):
            lo, hi = _CHAR_RANGES[0] if r.random() < 0.7 else r.choice(_CHAR_RANGES)
            chars.append(chr(r.randint(lo, hi)))
        return "".join(chars)


@functools.cache
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


_FLOAT_STRATEGY = st.floats(allow_nan=False, allow_infinity=False)


@functools.cache
def _texts(max_size: int) -> st.SearchStrategy[str]:
    return st.text(max_size=max_size)


class HypothesisSource:
    """Choices from hypothesis's `draw` (the suite's property tests: failures shrink)."""

    def __init__(self, draw: Draw) -> None:
        self._draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return int(self._draw(_integers(lo, hi)))

    def floating(self) -> float:
        return float(self._draw(_FLOAT_STRATEGY))

    def text(self, max_size: int) -> str:
        return str(self._draw(_texts(max_size)))


def strategy(generate: Callable[[Source], T]) -> st.SearchStrategy[T]:
    """A hypothesis strategy of one of this module's generators."""
    return st.composite(lambda draw: generate(HypothesisSource(draw)))()


# --- CEL ------------------------------------------------------------------------------------

KEYS = ("kind", "x", "a", "items", "spec", "name")

_LEAVES = [
    "object", "object.x", "object.a", "object.items", "object.spec", "object.?x", "object[?'a']",
    "object.?kind.orValue('')", "1", "-1", "0", "1u", "2.5", "-0.0", "'a'", "'%s'", "''",
    "b'\\xff'", "b'ab'", "true", "false", "null", "[]", "{}", "int", "string", "dyn", "list",
    "optional.none()", "optional.of(1)", "optional.of(optional.none())", "dyn(optional.none())",
    "[optional.none()]", "lists.range(3)", "'1Ki'", "'1.2.3'", "'10.0.0.1'", "'10.0.0.0/8'",
    "'::1'", "'fe80::1%eth0'", "'https://x.example.com/p?q=1'", "'%d %x %o %b %e %f %.3f %s'",
    "'%.999999999f'", "duration('1s')", "timestamp('2024-01-01T00:00:00Z')", "quantity('1Ki')",
    "ip('10.0.0.1')", "cidr('10.0.0.0/8')", "semver('1.2.3')", "url('https://x.example.com')",
    "format.dns1123Label()", "x", "v", "k", "i", "9223372036854775807", "18446744073709551615u",
    "1e308", "'\\u00e9'", "[1, 2, 3]", "['b', 'a']", "{'a': 1}", "[[1], [2, [3]]]",
]

# every format library constructor (upstream `library/format.go`)
FORMATS = ("dns1123Label", "dns1123LabelPrefix", "dns1123Subdomain", "dns1123SubdomainPrefix",
           "dns1035Label", "dns1035LabelPrefix", "qualifiedName", "labelValue", "uri", "uuid",
           "byte", "date", "datetime")

# (template, arity): `{0}` is the receiver or first argument.
_CALLS = [
    # standard library and conversions
    ("size({0})", 1), ("{0}.size()", 1), ("int({0})", 1), ("uint({0})", 1), ("double({0})", 1),
    ("string({0})", 1), ("bytes({0})", 1), ("bool({0})", 1), ("dyn({0})", 1), ("type({0})", 1),
    ("duration({0})", 1), ("timestamp({0})", 1), ("{0} in {1}", 2), ("has({0}.x)", 1),
    ("{0} == {1}", 2), ("{0} != {1}", 2), ("{0} < {1}", 2), ("{0} <= {1}", 2), ("{0} > {1}", 2),
    ("{0} >= {1}", 2), ("{0} + {1}", 2), ("{0} - {1}", 2),
    ("{0} * {1}", 2), ("{0} / {1}", 2), ("{0} % {1}", 2), ("-{0}", 1), ("!{0}", 1),
    ("{0} && {1}", 2), ("{0} || {1}", 2), ("{0} ? {1} : {2}", 3), ("{0}[{1}]", 2),
    ("[{0}, {1}]", 2), ("{{{0}: {1}}}", 2), ("{0}.matches({1})", 2), ("{0}.startsWith({1})", 2),
    ("{0}.endsWith({1})", 2), ("{0}.contains({1})", 2), ("{0}.getSeconds()", 1),
    ("{0}.getFullYear()", 1),
    # optional syntax and library
    ("optional.of({0})", 1), ("optional.ofNonZeroValue({0})", 1), ("{0}.or({1})", 2),
    ("{0}.orValue({1})", 2), ("{0}.hasValue()", 1), ("{0}.value()", 1), ("[?{0}]", 1),
    ("{{?'k': {0}}}", 1), ("{0}.?x", 1), ("{0}[?{1}]", 2), ("[{0}, ?{1}]", 2),
    ("{0}.optMap(x, {1})", 2), ("{0}.optFlatMap(x, {1})", 2), ("{0}.?x.?y", 1),
    # macros and comprehensions
    ("{0}.all(x, {1})", 2), ("{0}.exists(x, {1})", 2), ("{0}.exists_one(x, {1})", 2),
    ("{0}.map(x, {1})", 2), ("{0}.map(x, {1}, {2})", 3), ("{0}.filter(x, {1})", 2),
    ("{0}.all(k, v, {1})", 2), ("{0}.exists(k, v, {1})", 2), ("{0}.existsOne(k, v, {1})", 2),
    ("{0}.transformList(i, v, {1})", 2), ("{0}.transformList(i, v, {1}, {2})", 3),
    ("{0}.transformMap(k, v, {1})", 2), ("{0}.transformMap(k, v, {1}, {2})", 3),
    ("{0}.transformMapEntry(k, v, {{k: {1}}})", 2),
    ("{0}.transformMapEntry(k, v, {1}, {{k: {2}}})", 3), ("cel.bind(x, {0}, {1})", 2),
    ("{0}.sortBy(x, {1})", 2), ("{0}.map(x, {0}.map(v, {1}))", 2),
    # strings extension
    ("{0}.charAt({1})", 2), ("{0}.indexOf({1})", 2), ("{0}.indexOf({1}, {2})", 3),
    ("{0}.lastIndexOf({1})", 2), ("{0}.lastIndexOf({1}, {2})", 3), ("{0}.lowerAscii()", 1),
    ("{0}.upperAscii()", 1), ("{0}.replace({1}, {2})", 3), ("{0}.replace({1}, {2}, {3})", 4),
    ("{0}.split({1})", 2), ("{0}.split({1}, {2})", 3),
    ("{0}.substring({1})", 2), ("{0}.substring({1}, {2})", 3), ("{0}.trim()", 1),
    ("{0}.join({1})", 2), ("{0}.join()", 1), ("{0}.format({1})", 2), ("strings.quote({0})", 1),
    ("{0}.reverse()", 1),
    # sets and lists extensions, Kubernetes lists
    ("sets.contains({0}, {1})", 2), ("sets.equivalent({0}, {1})", 2),
    ("sets.intersects({0}, {1})", 2), ("{0}.isSorted()", 1), ("{0}.sum()", 1), ("{0}.min()", 1),
    ("{0}.max()", 1), ("lists.range({0})", 1), ("{0}.distinct()", 1), ("{0}.flatten()", 1),
    ("{0}.flatten({1})", 2), ("{0}.slice({1}, {2})", 3), ("{0}.sort()", 1),
    ("{0}.first()", 1), ("{0}.last()", 1), ("{0}.includes({1})", 2),
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
    ("{0}.ip()", 1), ("{0}.masked()", 1), ("{0}.prefixLength()", 1), ("string({0}.ip())", 1),
    # format library and semver
    *((f"format.{name}().validate({{0}})", 1) for name in FORMATS),
    ("format.named({0})", 1), ("format.named({0}).value().validate({1})", 2),
    ("format.named({0}).orValue(format.uuid()).validate({1})", 2), ("isSemver({0})", 1),
    ("isSemver({0}, true)", 1), ("semver({0})", 1), ("semver({0}, true)", 1),
    ("{0}.major()", 1), ("{0}.minor()", 1), ("{0}.patch()", 1),
    # math extension (Kubernetes does not enable it: these must be clean compile errors)
    ("math.greatest({0}, {1})", 2), ("math.least({0}, {1})", 2), ("math.abs({0})", 1),
]


def _expr(src: Source, depth: int) -> str:
    if depth <= 0 or src.integer(0, 4) == 0:
        return choice(src, _LEAVES)
    template, arity = choice(src, _CALLS)
    args = [_expr(src, depth - 1) for _ in range(arity)]
    text = template.format(*args)
    return f"({text})" if coin(src) else text


def expression(src: Source, max_depth: int = 4) -> str:
    """One expression: of the grammar (module docstring), or a shipped example mutated."""
    if src.integer(0, 7) == 0:
        return mutated_example(src)
    return _expr(src, src.integer(0, max_depth))


# --- mutations of the shipped examples ------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _expressions_in(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [str(e["expression"]) for e in node.get("sharingAffinity") or []
                 if isinstance(e, dict) and isinstance(e.get("expression"), str)]
        return found + [x for v in node.values() for x in _expressions_in(v)]
    if isinstance(node, list):
        return [x for v in node for x in _expressions_in(v)]
    return []


@functools.cache
def example_documents() -> tuple[dict[str, Any], ...]:
    """Every ResourceSlice and ResourceClaim under examples/ (their own files, as shipped)."""
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        try:
            loaded = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:  # broken on purpose (an example of a finding)
            continue
        docs.extend(d for d in loaded if isinstance(d, dict)
                    and d.get("kind") in ("ResourceSlice", "ResourceClaim"))
    return tuple(docs)


@functools.cache
def example_expressions() -> tuple[str, ...]:
    return tuple(sorted({e for d in example_documents() for e in _expressions_in(d) if e.strip()}))


_TOKEN = re.compile(r"'[^']*'|\"[^\"]*\"|[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d+)?")


def mutated_example(src: Source) -> str:
    """A shipped extractor with one leaf replaced, wrapped in a call, or a character dropped."""
    seeds = example_expressions()
    text = choice(src, seeds) if seeds else "object.x"
    how = src.integer(0, 3)
    tokens = list(_TOKEN.finditer(text))
    if how == 0 and tokens:
        token = choice(src, tokens)
        return text[:token.start()] + _expr(src, 2) + text[token.end():]
    if how == 1:
        template, arity = choice(src, _CALLS)
        return template.format(f"({text})", *(_expr(src, 1) for _ in range(arity - 1)))
    if how == 2 and text:
        at = src.integer(0, len(text) - 1)
        return text[:at] + text[at + 1:]
    return text


# --- objects -------------------------------------------------------------------------------

_STRINGS = ("NICConfig", "a", "1Ki", "10.0.0.1", "", "subnet-A", "x" * 70)


def scalar(src: Source) -> Any:
    kind = src.integer(0, 6)
    if kind == 0:
        return None
    if kind == 1:
        return coin(src)
    if kind == 2:
        return choice(src, (0, 1, -1, 2**63 - 1, -(2**63), 2**53 + 1)) if coin(src) \
            else src.integer(-1000, 1000)
    if kind == 3:
        return src.floating()
    if kind == 4:
        return src.text(12)
    return choice(src, _STRINGS)


def json_value(src: Source, depth: int = 3) -> Any:
    """A value a JSON object (a claim's opaque parameters) can hold."""
    kind = src.integer(0, 5) if depth > 0 else 0
    if kind <= 3:
        return scalar(src)
    if kind == 4:
        return [json_value(src, depth - 1) for _ in range(src.integer(0, 4))]
    return {choice(src, KEYS): json_value(src, depth - 1) for _ in range(src.integer(0, 4))}


def cel_object(src: Source) -> dict[str, Any]:
    """The `object` an extractor sees (a claim's opaque parameters)."""
    return {choice(src, KEYS): json_value(src) for _ in range(src.integer(0, 5))}


def _odd(src: Source) -> Any:
    """A value for a field that may be of the wrong type."""
    if coin(src):
        return json_value(src)
    return choice(src, (["x"], {"a": 1}, 1, True, None, "", "a" * 300))


_WRONG_TYPED = (("spec", "driver"), ("spec", "pool", "name"), ("kind",), ("apiVersion",),
                ("spec", "pool", "generation"), ("metadata", "name"), ("metadata",),
                ("spec", "sharingAffinity"), ("spec",), ("spec", "devices"), ("spec", "nodeName"))


def _set_odd(src: Source, doc: dict[str, Any], paths: Sequence[tuple[str, ...]]) -> None:
    path = choice(src, paths)
    target: Any = doc
    for part in path[:-1]:
        target = target.setdefault(part, {}) if isinstance(target, dict) else None
    if isinstance(target, dict):
        target[path[-1]] = _odd(src)


def _example(src: Source, kind: str) -> dict[str, Any] | None:
    docs = [d for d in example_documents() if d.get("kind") == kind]
    return copy.deepcopy(choice(src, docs)) if docs else None


def resource_slice(src: Source) -> dict[str, Any]:
    """A ResourceSlice with generated extractors and, sometimes, wrongly typed fields; or a
    shipped example with its extractors mutated."""
    base = _example(src, "ResourceSlice") if src.integer(0, 5) == 0 else None
    if base is not None:
        entries = base.get("spec", {}).get("sharingAffinity")
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and coin(src):
                entry["expression"] = mutated_example(src)
        if src.integer(0, 5) == 0:
            _set_odd(src, base, _WRONG_TYPED)
        return base
    entries = [{"name": choice(src, ("a", "b", "net", "a", "x" * 70, "")),
                "expression": expression(src) if src.integer(0, 3) else choice(src, (
                    'object.?kind.orValue("") == "NICConfig" ? "%s".format([object.x]) : ""',
                    "object.x", '"k"', "", " ", "1 +"))}
               for _ in range(src.integer(0, 9))]
    if entries and src.integer(0, 9) == 0:
        entries[0][choice(src, ("name", "expression"))] = _odd(src)
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": choice(src, ("meta", "s-1", "S_bad"))},
        "spec": {"driver": "networking.example.com", "nodeName": "node-a",
                 "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1}},
    }
    if entries or coin(src):
        doc["spec"]["sharingAffinity"] = entries
    if coin(src):
        doc["spec"]["devices"] = [{"name": f"d{i}", "allowMultipleAllocations": True}
                                  for i in range(src.integer(0, 3))]
    if src.integer(0, 5) == 0:
        _set_odd(src, doc, _WRONG_TYPED)
    return doc


def resource_claim(src: Source) -> dict[str, Any]:
    """A claim whose opaque parameters the slice's extractors see."""
    if src.integer(0, 5) == 0 and (base := _example(src, "ResourceClaim")) is not None:
        return base
    params = cel_object(src) if src.integer(0, 3) else {"kind": "NICConfig", "x": "a"}
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nic"}}],
                             "config": [{"requests": ["r"], "opaque": {
                                 "driver": "networking.example.com", "parameters": params}}]}},
    }
    if src.integer(0, 9) == 0:
        _set_odd(src, claim, (("spec", "devices"), ("spec",), ("metadata", "name")))
    return claim


def admission_review(src: Source) -> dict[str, Any]:
    """An AdmissionReview as the API server sends it, or with one hostile twist."""
    new = resource_slice(src)
    operation = choice(src, ("CREATE", "UPDATE", "UPDATE", "DELETE", "CONNECT"))
    old = None
    if operation == "UPDATE":
        old = copy.deepcopy(new) if coin(src) else resource_slice(src)
    request: dict[str, Any] = {
        "uid": choice(src, ("u-1", "x" * 200, "\u00e9")),
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
        "operation": operation, "name": "meta", "dryRun": coin(src),
        "object": new if operation != "DELETE" else None, "oldObject": old,
    }
    if src.integer(0, 6) == 0:
        request[choice(src, ("uid", "kind", "operation", "dryRun", "object"))] = _odd(src)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


# --- cases ---------------------------------------------------------------------------------

def expression_case(src: Source) -> dict[str, Any]:
    return {"expr": expression(src), "object": cel_object(src)}


NEST_PLACEHOLDER = "__NEST__"
NEST_ENVELOPE = 7
"""Levels above `fieldsV1`'s value: review, request, object, metadata, managedFields, [0], fieldsV1."""


def review_case(src: Source) -> dict[str, Any]:
    """A review for the webhook and, for `dry-run`, a claim the slice's extractors run on;
    one in eight nests `metadata.managedFields[0].fieldsV1` around Go's bound (10,000 levels
    in all), as text (`nest`): Python's own encoder could not write it."""
    case = {"review": admission_review(src), "claim": resource_claim(src)}
    request = case["review"].get("request")
    obj = request.get("object") if isinstance(request, dict) else None
    if src.integer(0, 7) == 0 and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        obj["metadata"]["managedFields"] = [{"manager": "fuzz", "operation": "Apply",
                                             "fieldsType": "FieldsV1", "fieldsV1": {"f:x": NEST_PLACEHOLDER}}]
        case["nest"] = {"depth": choice(src, (500, 999, 1_000, 5_000, 10_000, 10_001, 20_000)),
                        "opener": choice(src, ("[", "{"))}
    return case


def nested_text(depth: int, opener: str) -> str:
    """JSON nested `depth` levels in all once put in place of `NEST_PLACEHOLDER`."""
    inner = depth - NEST_ENVELOPE
    return ("[" * inner + "1" + "]" * inner) if opener == "[" else ('{"f:x":' * inner + "1" + "}" * inner)


TARGETS: dict[str, Callable[[Source], dict[str, Any]]] = {
    "expressions": expression_case, "reviews": review_case}


def cases(target: str, seed: int, count: int) -> Iterator[dict[str, Any]]:
    """`count` cases of `target`; case `i` is reproducible from (`seed`, `i`) alone."""
    generate = TARGETS[target]
    for i in range(count):
        yield generate(RandomSource(seed * 1_000_003 + i))


if __name__ == "__main__":  # a look at what the grammar makes: python -m tests.fuzz.grammar
    for case in cases(sys.argv[1] if len(sys.argv) > 1 else "expressions", 0, 10):
        print(case)
