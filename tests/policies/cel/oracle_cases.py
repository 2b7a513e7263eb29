"""Extractor cases for the differential campaign against cel-go: expressions and `object`s.

Why two generators: the fuzz grammar (`tests.fuzz.grammar`) reaches every library function
with every kind of operand, but most of its draws do not type-check, so they only compare
compile verdicts. `extractor` writes what a driver author writes: field paths into the claim's
opaque parameters, with optional chaining (`.?f`, `[?k]`, `.orValue`, `.or`), `has`, every
macro and two-variable comprehension over those fields, `cel.bind` (used and unused), the
Kubernetes library functions on field values, and deliberately wrong types (a macro over a
string, a field of a list, an index into a string), against objects whose fields take every
JSON shape. Case `i` of seed `s` is the same on every run (`RandomSource`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tests.fuzz.grammar import RandomSource, Source, choice, coin, expression, json_value

FIELDS = ("spec", "items", "s", "n", "name", "subnet", "vlan", "tags")

_PATHS = (
    "object", "object.spec", "object.items", "object.s", "object.n", "object.name",
    "object.spec.subnet", "object.spec.vlan", "object.spec.tags", "object.items[0]",
    "object.items[1]", "object['spec']", "object.tags", "object.spec.items",
)
_OPTIONAL_PATHS = (
    "object.?spec", "object.?spec.?subnet", "object.?items", "object.?n", "object.?s",
    "object[?'spec']", "object.?spec[?'subnet']", "object.?items[?0]", "object.?n[0]",
    "object.?spec.?vlan", "object.?tags[?1]", "object.?name",
)
_STRINGS = ("''", "'a'", "'blue'", "'10.0.0.1'", "'10.0.0.0/8'", "'1Gi'", "'1.2.3'", "'x-y'",
            "'https://a.example.com:8080/p?q=1'", "'%s-%d'", "'A b'", "'::1'", "'1e3'",
            "'abc'", "'dns-1'")
_NUMBERS = ("0", "1", "-1", "2", "10", "1000", "9223372036854775807", "1u", "0u", "2.5",
            "-0.5", "1e3", "0.0")
_LITERALS = _STRINGS + _NUMBERS + (
    "true", "false", "null", "[]", "{}", "[1, 2, 3]", "['a', 'b']", "{'a': 1}", "[[1], [2]]",
    "{'k': 'v', 'l': 'w'}", "b'ab'", "duration('1h')", "timestamp('2024-01-01T00:00:00Z')",
    "int", "string", "optional.none()", "optional.of('v')", "[1, 'a']", "dyn(1)")

_PREDICATES = (
    "has(e.name)", "e == 'a'", "e > 1", "e.size() > 0", "e.startsWith('a')", "has(e.x)",
    "e.?name.orValue('') == 'a'", "type(e) == string", "e != null", "e in ['a', 1]",
    "int(e) > 0", "string(e) != ''", "e.name == 'a'", "true", "false", "e / 0 == 1",
)
_MAPPERS = (
    "e", "e + 1", "e * 2", "string(e)", "e.name", "e.?name.orValue('-')", "[e]", "{'k': e}",
    "size(e)", "type(e)", "e + e", "dyn(e)",
)

# (template, holes) where a hole is "p" (a path), "o" (an optional path), "s" (a string),
# "n" (a number), "l" (any literal), "q" (a predicate over e), "m" (a mapper of e), "x" (an
# extractor-ish expression: recursion)
_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("{0}", "p"), ("{0}", "o"), ("{0}.orValue({1})", "ol"), ("{0}.orValue({1})", "os"),
    ("{0}.or({1}).orValue({2})", "ool"), ("{0}.hasValue()", "o"), ("{0}.value()", "o"),
    ("has({0}.name)", "p"), ("has({0}.subnet)", "p"), ("{0}.optMap(v, v)", "o"),
    ("{0}.optFlatMap(v, optional.of(v))", "o"), ("{0}.optMap(v, string(v)).orValue('')", "o"),
    ("{0}.exists(e, {1})", "pq"), ("{0}.all(e, {1})", "pq"), ("{0}.exists_one(e, {1})", "pq"),
    ("{0}.filter(e, {1})", "pq"), ("{0}.map(e, {1})", "pm"), ("{0}.map(e, {1}, {2})", "pqm"),
    ("{0}.all(k, v, v != null)", "p"), ("{0}.exists(k, v, k == 'spec')", "p"),
    ("{0}.existsOne(k, v, v == 1)", "p"), ("{0}.transformList(i, e, {1})", "pm"),
    ("{0}.transformMap(k, e, {1})", "pm"), ("{0}.transformMapEntry(k, e, {{string(k): {1}}})", "pm"),
    ("cel.bind(x, {0}, {1})", "xx"), ("cel.bind(x, {0}, x)", "x"),
    ("cel.bind(x, {0}.map(e, {1}), 'k')", "pm"), ("cel.bind(x, {0}, x + x)", "p"),
    ("cel.bind(x, {0}, cel.bind(y, x, y))", "x"),
    ("{0}[0]", "p"), ("{0}[{1}]", "pl"), ("{0}[?{1}]", "pl"), ("{0}.name", "p"), ("{0}.?name", "p"),
    ("size({0})", "p"), ("{0} + {1}", "xl"), ("{0} + {1}", "xx"), ("{0} == {1}", "xl"),
    ("{0} < {1}", "xl"), ("{0} in {1}", "lp"), ("{0} ? {1} : {2}", "xss"),
    ("{0} / {1}", "nn"), ("{0} % {1}", "nn"), ("{0} * {1}", "xn"), ("-{0}", "p"),
    ("string({0})", "x"), ("int({0})", "x"), ("uint({0})", "x"), ("double({0})", "x"),
    ("bool({0})", "x"), ("bytes({0})", "x"), ("type({0})", "x"), ("type(type({0}))", "x"),
    ("dyn({0})", "x"), ("{0}.size()", "x"),
    ("{0}.lowerAscii()", "p"), ("{0}.upperAscii()", "s"), ("{0}.charAt({1})", "sn"),
    ("{0}.indexOf({1})", "ss"), ("{0}.indexOf({1}, {2})", "ssn"), ("{0}.lastIndexOf({1}, {2})", "ssn"),
    ("{0}.lastIndexOf({1})", "ss"), ("{0}.substring({1})", "sn"), ("{0}.substring({1}, {2})", "snn"),
    ("{0}.split({1})", "ss"), ("{0}.split({1}, {2})", "ssn"), ("{0}.replace({1}, {2})", "sss"),
    ("{0}.trim()", "s"), ("{0}.reverse()", "s"), ("{0}.join({1})", "ls"), ("{0}.join()", "l"),
    ("{0}.format([{1}])", "sl"), ("'%e'.format([{0}])", "n"),
    ("'%.2f|%x|%o|%b|%d'.format([{0}, {0}, {0}, {0}, {0}])", "n"),
    ("'%s'.format([{0}])", "x"), ("strings.quote({0})", "s"), ("{0}.matches({1})", "ss"),
    ("{0}.find({1})", "ss"), ("{0}.findAll({1})", "ss"), ("{0}.findAll({1}, {2})", "ssn"),
    ("lists.range({0})", "n"), ("{0}.distinct()", "l"), ("{0}.flatten()", "l"), ("{0}.flatten()[0]", "l"),
    ("{0}.indexOf({1})", "ll"), ("{0}.lastIndexOf({1})", "ll"), ("{0}.sort()", "l"),
    ("{0}.slice({1}, {2})", "lnn"), ("{0}.first()", "l"), ("{0}.last()", "l"),
    ("{0}.sortBy(e, {1})", "lm"), ("{0}.isSorted()", "l"), ("{0}.sum()", "l"), ("{0}.min()", "l"),
    ("{0}.max()", "l"), ("{0}.reverse()", "l"), ("{0}.includes({1})", "ll"),
    ("sets.contains({0}, {1})", "ll"), ("sets.intersects({0}, {1})", "ll"),
    ("sets.equivalent({0}, {1})", "ll"),
    ("quantity({0})", "s"), ("quantity({0}).add({1})", "sn"), ("quantity({0}).isInteger()", "s"),
    ("quantity({0}).asInteger()", "s"), ("quantity({0}).asApproximateFloat()", "s"),
    ("quantity({0}).compareTo(quantity({1}))", "ss"), ("quantity({0}).sign()", "s"),
    ("isQuantity({0})", "x"), ("quantity(string({0}))", "p"),
    ("ip({0})", "s"), ("ip({0}).family()", "s"), ("isIP({0})", "x"), ("ip.isCanonical({0})", "s"),
    ("cidr({0})", "s"), ("cidr({0}).containsIP({1})", "ss"), ("cidr({0}).containsCIDR({1})", "ss"),
    ("cidr({0}).containsCIDR(cidr({1}))", "ss"), ("cidr({0}).prefixLength()", "s"),
    ("cidr({0}).masked()", "s"), ("isCIDR({0})", "x"), ("cidr('10.0.0.0/8').containsCIDR({0})", "s"),
    ("cidr('10.1.2.3/16').containsCIDR('10.1.0.0/24')", ""),
    ("url({0}).getHost()", "s"), ("url({0}).getPort()", "s"), ("isURL({0})", "x"),
    ("semver({0})", "s"), ("isSemver({0})", "x"), ("semver({0}).major()", "s"),
    ("semver({0}).compareTo(semver({1}))", "ss"),
    ("format.dns1123Label().validate({0})", "s"), ("format.dns1123Label().validate({0}).orValue([])", "s"),
    ("format.dns1123Label().validate({0}) == optional.none()", "s"),
    ("format.named({0})", "s"), ("format.named({0}).orValue(format.uuid()).validate({1})", "ss"),
    ("format.named({0}).hasValue()", "s"), ("format.named({0}) == optional.none()", "s"),
    ("format.named('dns1123Label').or(optional.none()).hasValue()", ""),
    ("optional.ofNonZeroValue({0})", "x"), ("optional.ofNonZeroValue(timestamp('0001-01-01T00:00:00Z'))", ""),
    ("optional.ofNonZeroValue(timestamp(0))", ""), ("optional.of({0})", "x"),
    ("[?{0}]", "o"), ("{{?'k': {0}}}", "o"), ("[{0}, ?{1}]", "xo"),
    ("{{{0}: 1}}", "l"), ("{{{0}: 1, {1}: 2}}", "ll"),
    ("timestamp({0})", "s"), ("duration({0})", "s"), ("{0}.getFullYear()", "x"),
    ("{0} == dyn", "x"), ("type({0}) == dyn", "x"), ("[string].exists(x, x == string)", ""),
    ("1e309", ""), ("['a','b'].indexOf(1)", ""), ("{0} && {1}", "xx"), ("{0} || {1}", "xx"),
    ("!{0}", "x"), ("{0}.map(e, e).size()", "p"), ("math.greatest({0}, 1)", "n"),
)


def _hole(src: Source, kind: str, depth: int) -> str:
    if kind == "p":
        return choice(src, _PATHS)
    if kind == "o":
        return choice(src, _OPTIONAL_PATHS)
    if kind == "s":
        return choice(src, _STRINGS) if src.integer(0, 3) else choice(src, _PATHS)
    if kind == "n":
        return choice(src, _NUMBERS) if src.integer(0, 3) else choice(src, _PATHS)
    if kind == "l":
        return choice(src, _LITERALS) if src.integer(0, 3) else choice(src, _PATHS)
    if kind == "q":
        return choice(src, _PREDICATES)
    if kind == "m":
        return choice(src, _MAPPERS)
    return extractor(src, depth - 1)


def extractor(src: Source, depth: int = 3) -> str:
    """An expression as a driver author writes one (module docstring)."""
    if depth <= 0:
        return choice(src, _PATHS + _OPTIONAL_PATHS + _LITERALS)
    template, holes = choice(src, _TEMPLATES)
    text = template.format(*(_hole(src, h, depth) for h in holes))
    return f"({text})" if coin(src) and src.integer(0, 3) == 0 else text


def _field_value(src: Source) -> Any:
    kind = src.integer(0, 9)
    if kind == 0:
        return [choice(src, ("a", "b", "blue", "")) for _ in range(src.integer(0, 4))]
    if kind == 1:
        return [src.integer(-3, 5) for _ in range(src.integer(0, 4))]
    if kind == 2:
        return [{"name": choice(src, ("a", "b"))} if coin(src) else {"x": 1}
                for _ in range(src.integer(0, 3))]
    if kind == 3:
        return {"subnet": choice(src, ("blue", "10.0.0.0/8", "")), "vlan": src.integer(0, 9)}
    if kind == 4:
        return choice(src, ("blue", "a", "", "10.0.0.1", "1Gi", "abc"))
    if kind == 5:
        return src.integer(-2, 10)
    if kind == 6:
        return choice(src, (1.5, 2.0, -0.0, 1e300))
    if kind == 7:
        return [1, "a", None, [2], {"name": "a"}][: src.integer(0, 5)]
    return json_value(src, 2)


def claim_object(src: Source) -> dict[str, Any]:
    """A claim's opaque parameters: the fields the extractors read, in any JSON shape."""
    return {name: _field_value(src) for name in FIELDS if src.integer(0, 2)}


def case(src: Source) -> dict[str, Any]:
    """One case: `expr` and `object` (its JSON text is what both sides decode)."""
    text = extractor(src, src.integer(1, 3)) if src.integer(0, 3) else expression(src, 3)
    return {"expr": text, "object": claim_object(src)}


def cases(seed: int, count: int) -> Iterator[dict[str, Any]]:
    """`count` cases; case `i` of seed `seed` is the same on every run."""
    for i in range(count):
        yield case(RandomSource(seed * 1_000_003 + i))


def object_json(obj: Any) -> str:
    """The JSON text both sides decode (`1.0` stays a double, as in apimachinery)."""
    return json.dumps(obj)
