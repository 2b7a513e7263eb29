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


def on_long_text(name: str, depth: int, body: Callable[[str], str],
                 **extra: object) -> HostileCase:
    """`body` on the claim's longest string doubled `depth` times through nested bindings;
    `extra` adds fields to the claim."""
    return HostileCase(name, chain("object.s", _double, depth, body), {"s": LONG_TEXT, **extra})


def on_shared_list(name: str, body: Callable[[str], str]) -> HostileCase:
    """`body` on a list of 2**23 integers that nested bindings build by sharing: 22 levels of
    `[v, v]`."""
    return HostileCase(name, chain("[1, 2]", _pair, 22, body))


_MODEL = "device.attributes['dra.example.com'].model"


def on_device_model(name: str, seed: str, step: Callable[[str], str], depth: int,
                    body: Callable[[str], str]) -> HostileCase:
    """A device selector: `body` on `seed` (a template of the device's 64-character model
    attribute) grown by `step` `depth` times."""
    return HostileCase(name, chain(seed.format(_MODEL), step, depth, body), {"model": "m" * 64},
                       selector=True)


HAND_PICKED: tuple[HostileCase, ...] = (
    # values shared through nested bindings, then walked whole
    on_shared_list("shared-list-result", lambda v: v),
    on_shared_list("shared-list-equality", _pick),
    HostileCase("shared-map-equality", chain("[1, 2]", lambda v: f"{{'a': {v}, 'b': {v}}}", 22,
                                             _pick)),
    on_shared_list("shared-list-flatten", lambda v: f"string({v}.flatten(22).size())"),
    on_shared_list("shared-list-format", lambda v: f"'%s'.format([{v}])"),
    on_shared_list("shared-list-in", lambda v: f"{v} in [{v}] ? 'a' : 'b'"),
    on_shared_list("shared-list-distinct", lambda v: f"string({v}.distinct().size())"),
    on_shared_list("shared-list-sets", lambda v: f"string(sets.contains({v}, {v}))"),
    HostileCase("shared-map-transform", chain("{'a': 1}", lambda v: f"{{'a': {v}, 'b': {v}}}", 22,
                                              lambda v: f"{v}.transformMap(k, x, x) == {v} ? 'a' : 'b'")),
    HostileCase("mapped-references", chain("lists.range(1000)", lambda v: f"{v}.map(x, {v})", 2,
                                           lambda v: f"'%s'.format([{v}])")),
    HostileCase("list-doubling", chain("object.items", _double, 24, lambda v: f"string(size({v}))"),
                {"items": [1, 2, 3]}),
    # results far larger than their price
    on_long_text("replace-explosion", 7, lambda v: f"string({v}.replace('a', {v}).size())"),
    on_long_text("replace-empty", 7, lambda v: f"string({v}.replace('', {v}).size())"),
    on_long_text("split-empty", 6, lambda v: f"string({v}.split('').size())"),
    on_long_text("join-references", 4, lambda v: f"lists.range(5000).map(i, {v}).join()"),
    on_long_text("format-references", 4,
                 lambda v: f"'%s%s%s%s%s%s%s%s'.format([{', '.join([v] * 8)}])"),
    HostileCase("format-precision", "lists.range(256).map(i, '%.1000f').join().format("
                                    "lists.range(256).map(i, 1.0e308))"),
    HostileCase("format-huge-precision", "'%.999999999f'.format([1.0])"),
    on_long_text("quote-long", 7, lambda v: f"strings.quote({v} + '\\u0001')"),
    on_long_text("find-all-empty", 5, lambda v: f"string({v}.findAll('').size())"),
    # parsing huge strings
    HostileCase("quantity-exponent", "string(quantity(object.q).isInteger())",
                {"q": "1e1000000000"}),
    on_long_text("quantity-long", 6,
                 lambda v: f"string(isQuantity('1' + {v}.replace('a', '0')))"),
    on_long_text("semver-long", 6, lambda v: f"string(isSemver({v}))"),
    on_long_text("ip-long", 6, lambda v: f"string(isIP({v}))"),
    on_long_text("cidr-long", 6, lambda v: f"string(isCIDR({v}))"),
    on_long_text("url-long", 6, lambda v: f"string(isURL('http://h/' + {v}))"),
    # regular expressions on long input, patterns from the claim
    on_long_text("regex-long-input", 7, lambda v: f"string({v}.matches(object.re))",
                 re="(a|aa|aaa|aaaa)*(b|c)" * 40),
    on_long_text("find-claim-pattern", 5, lambda v: f"string({v}.findAll(object.re).size())",
                 re="a?" * 2000),
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
    on_device_model("selector-shared-list", "[{}]", _pair, 22, lambda v: f"{v} == {v}"),
    on_device_model("selector-replace", "{}", _double, 12,
                    lambda v: f"{v}.replace('m', {v}).size() > 0"),
    on_device_model("selector-join", "{}", _double, 10,
                    lambda v: f"lists.range(5000).map(i, {v}).join().size() > 0"),
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
