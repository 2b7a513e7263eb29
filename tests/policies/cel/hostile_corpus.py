"""Hostile inputs for the evaluation bounds: hand-picked worst cases and a generator of more.

Each case is an extractor (or a device selector) and the object it reads, built to make one
evaluation exceed 1 s of CPU or 256 MiB: values shared through nested `cel.bind` and then
walked whole (`x == x`, `flatten`, `format`, handing them to a function), calls whose result is
far larger than their price (`replace`, `join`, `split('')`, `findAll`, `format`), parsing huge
strings (`quantity`, `semver`, `ip`, `cidr`, `url`), regular expressions on long input, lists
near the cost limit, and claims carrying the longest strings and deepest nesting the API server
accepts. Used by `test_hostile_bounds.py` (a bounded run) and `bench/hostile_eval_bench.py`
(figures), and by the long run documented in docs/development.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st


@dataclass(frozen=True)
class HostileCase:
    """One evaluation: `expression` on `obj` (an extractor's `object`), or, with `selector`,
    a device selector on a device whose attributes are `obj` (name -> attribute value)."""

    name: str
    expression: str
    obj: dict[str, object] = field(default_factory=dict)
    selector: bool = False


def chain(seed: str, step: Callable[[str], str], depth: int, body: Callable[[str], str]) -> str:
    """`cel.bind(v0, seed, cel.bind(v1, step(v0), ... body(v<depth>)))`."""
    text = body(f"v{depth}")
    for i in range(depth, 0, -1):
        text = f"cel.bind(v{i}, {step(f'v{i - 1}')}, {text})"
    return f"cel.bind(v0, {seed}, {text})"


def _pair(v: str) -> str:
    return f"[{v}, {v}]"


def _double(v: str) -> str:
    return f"{v} + {v}"


def _pick(v: str) -> str:
    return f"{v} == {v} ? 'a' : 'b'"


# A claim's opaque parameters are at most 10,240 bytes of JSON (the API server's
# OpaqueParametersMaxLength): the longest string and the deepest nesting it can carry.
LONG_TEXT = "a" * 10_000
DEEP = 400
_deep: object = "x"
for _ in range(DEEP):
    _deep = [_deep]
DEEP_OBJECT = {"d": _deep}


HAND_PICKED: tuple[HostileCase, ...] = (
    # values shared through nested bindings, then walked whole
    HostileCase("shared-list-result", chain("[1, 2]", _pair, 22, lambda v: v)),
    HostileCase("shared-list-equality", chain("[1, 2]", _pair, 22, _pick)),
    HostileCase("shared-map-equality", chain("[1, 2]", lambda v: f"{{'a': {v}, 'b': {v}}}", 22,
                                             _pick)),
    HostileCase("shared-list-flatten", chain("[1, 2]", _pair, 22,
                                             lambda v: f"string({v}.flatten(22).size())")),
    HostileCase("shared-list-format", chain("[1, 2]", _pair, 22,
                                            lambda v: f"'%s'.format([{v}])")),
    HostileCase("shared-list-in", chain("[1, 2]", _pair, 22,
                                        lambda v: f"{v} in [{v}] ? 'a' : 'b'")),
    HostileCase("shared-list-distinct", chain("[1, 2]", _pair, 22,
                                              lambda v: f"string({v}.distinct().size())")),
    HostileCase("shared-list-sets", chain("[1, 2]", _pair, 22,
                                          lambda v: f"string(sets.contains({v}, {v}))")),
    HostileCase("shared-map-transform", chain("{'a': 1}", lambda v: f"{{'a': {v}, 'b': {v}}}", 22,
                                              lambda v: f"{v}.transformMap(k, x, x) == {v} ? 'a' : 'b'")),
    HostileCase("mapped-references", chain("lists.range(1000)", lambda v: f"{v}.map(x, {v})", 2,
                                           lambda v: f"'%s'.format([{v}])")),
    HostileCase("list-doubling", chain("object.items", _double, 24, lambda v: f"string(size({v}))"),
                {"items": [1, 2, 3]}),
    # results far larger than their price
    HostileCase("replace-explosion", chain("object.s", _double, 7,
                                           lambda v: f"string({v}.replace('a', {v}).size())"),
                {"s": LONG_TEXT}),
    HostileCase("replace-empty", chain("object.s", _double, 7,
                                       lambda v: f"string({v}.replace('', {v}).size())"),
                {"s": LONG_TEXT}),
    HostileCase("split-empty", chain("object.s", _double, 6,
                                     lambda v: f"string({v}.split('').size())"),
                {"s": LONG_TEXT}),
    HostileCase("join-references", chain("object.s", _double, 4,
                                         lambda v: f"lists.range(5000).map(i, {v}).join()"),
                {"s": LONG_TEXT}),
    HostileCase("format-references", chain("object.s", _double, 4,
                                           lambda v: f"'%s%s%s%s%s%s%s%s'.format([{v}, {v}, {v}, "
                                                     f"{v}, {v}, {v}, {v}, {v}])"),
                {"s": LONG_TEXT}),
    HostileCase("format-precision", "lists.range(256).map(i, '%.1000f').join().format("
                                    "lists.range(256).map(i, 1.0e308))"),
    HostileCase("format-huge-precision", "'%.999999999f'.format([1.0])"),
    HostileCase("quote-long", chain("object.s", _double, 7,
                                    lambda v: f"strings.quote({v} + '\\u0001')"),
                {"s": LONG_TEXT}),
    HostileCase("find-all-empty", chain("object.s", _double, 5,
                                        lambda v: f"string({v}.findAll('').size())"),
                {"s": LONG_TEXT}),
    # parsing huge strings
    HostileCase("quantity-exponent", "string(quantity(object.q).isInteger())",
                {"q": "1e1000000000"}),
    HostileCase("quantity-long", chain("object.s", _double, 6,
                                       lambda v: f"string(isQuantity('1' + {v}.replace('a', '0')))"),
                {"s": LONG_TEXT}),
    HostileCase("semver-long", chain("object.s", _double, 6, lambda v: f"string(isSemver({v}))"),
                {"s": LONG_TEXT}),
    HostileCase("ip-long", chain("object.s", _double, 6, lambda v: f"string(isIP({v}))"),
                {"s": LONG_TEXT}),
    HostileCase("cidr-long", chain("object.s", _double, 6, lambda v: f"string(isCIDR({v}))"),
                {"s": LONG_TEXT}),
    HostileCase("url-long", chain("object.s", _double, 6,
                                  lambda v: f"string(isURL('http://h/' + {v}))"),
                {"s": LONG_TEXT}),
    # regular expressions on long input, patterns from the claim
    HostileCase("regex-long-input", chain("object.s", _double, 7,
                                          lambda v: f"string({v}.matches(object.re))"),
                {"s": LONG_TEXT, "re": "(a|aa|aaa|aaaa)*(b|c)" * 40}),
    HostileCase("find-claim-pattern", chain("object.s", _double, 5,
                                            lambda v: f"string({v}.findAll(object.re).size())"),
                {"s": LONG_TEXT, "re": "a?" * 2000}),
    # lists near the cost limit
    HostileCase("range-sum", "string(lists.range(999000).sum())"),
    HostileCase("range-strings", "lists.range(300000).map(x, string(x)).join()"),
    HostileCase("range-sort", "string(lists.range(700).map(x, 700 - x).sort()[0])"),
    HostileCase("sort-by", "string(lists.range(2000).sortBy(x, -x)[0])"),
    # the claim itself: the longest string, the deepest nesting
    HostileCase("claim-deep", "string(object.d == object.d)", DEEP_OBJECT),
    HostileCase("claim-deep-format", "'%s'.format([object.d])", DEEP_OBJECT),
    HostileCase("claim-long-text", "object.s + object.s", {"s": LONG_TEXT}),
    HostileCase("claim-list-map", "string(object.items.map(x, x).size())",
                {"items": [0] * 5_000}),
    HostileCase("range-map", "string(lists.range(9999).map(x, x).size())"),
    HostileCase("selector-range-map", "lists.range(9999).map(x, x).size() > 0", selector=True),
    # device selectors: the same constructions over a device's attributes
    HostileCase("selector-shared-list",
                chain("[device.attributes['dra.example.com'].model]", _pair, 22,
                      lambda v: f"{v} == {v}"),
                {"model": "m" * 64}, selector=True),
    HostileCase("selector-replace",
                chain("device.attributes['dra.example.com'].model", _double, 12,
                      lambda v: f"{v}.replace('m', {v}).size() > 0"),
                {"model": "m" * 64}, selector=True),
    HostileCase("selector-join",
                chain("device.attributes['dra.example.com'].model", _double, 10,
                      lambda v: f"lists.range(5000).map(i, {v}).join().size() > 0"),
                {"model": "m" * 64}, selector=True),
)


# ------------------------------------------------------------------------------------------------
# Generated cases
# ------------------------------------------------------------------------------------------------

_SEEDS = ("[1, 2]", "object.items", "object.s", "'ab'", "{'k': object.s}", "[object.s]",
          "lists.range(100)")
_STEPS: tuple[Callable[[str], str], ...] = (
    _pair, _double, lambda v: f"{{'a': {v}, 'b': {v}}}", lambda v: f"[{v}, {v}, {v}]",
    lambda v: f"lists.range(4).map(i, {v})",
    lambda v: f"dyn({v})",
)
_BODIES: tuple[Callable[[str], str], ...] = (
    lambda v: v,
    lambda v: f"string({v} == {v})",
    lambda v: f"'%s'.format([{v}])",
    lambda v: f"string(dyn({v}).size())",
    lambda v: f"string([{v}].flatten().size())",
    lambda v: f"string(dyn({v}).replace('a', dyn({v})).size())",
    lambda v: f"dyn({v}).join()",
    lambda v: f"string(dyn({v}).split('').size())",
    lambda v: f"string(dyn({v}).findAll('').size())",
    lambda v: f"string({v} in [{v}])",
    lambda v: f"string([{v}].distinct().size())",
    lambda v: f"string(dyn({v}).matches(object.re))",
    lambda v: f"string(isQuantity(dyn({v})))",
    lambda v: f"strings.quote(dyn({v}))",
)


@st.composite
def hostile_objects(draw: st.DrawFn) -> dict[str, object]:
    """Claims' opaque parameters within the API server's 10 KiB: a long string, a list, a
    regular expression."""
    text = draw(st.text(alphabet="ab%\u00e9\u0001", min_size=0, max_size=64))
    repeat = draw(st.integers(min_value=1, max_value=max(1, 8_000 // max(1, len(text)))))
    items = draw(st.lists(st.integers(min_value=-3, max_value=3), max_size=64))
    pattern = draw(st.sampled_from(["a*", "(a|aa)*b", "", "a?" * 500, "[ab]+$"]))
    return {"s": text * repeat, "items": items, "re": pattern}


@st.composite
def hostile_cases(draw: st.DrawFn) -> HostileCase:
    """A binding chain of a growing step over a seed, then a body that walks or grows it."""
    seed = draw(st.sampled_from(_SEEDS))
    step = draw(st.sampled_from(_STEPS))
    depth = draw(st.integers(min_value=1, max_value=24))
    body = draw(st.sampled_from(_BODIES))
    return HostileCase("generated", chain(seed, step, depth, body), draw(hostile_objects()))
