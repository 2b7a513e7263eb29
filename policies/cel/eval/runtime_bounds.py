"""How much one call of an evaluation may take and build, measured before the call runs.

Why: cel-go's runtime cost is charged after a call has run, and prices most calls by the
top-level sizes of their arguments (or by the receiver alone). Two kinds of expressions
therefore slip past the 1,000,000 limit, in cel-go as here:

* shared values: `cel.bind(x, [x, x], ...)` nested 22 times costs under 300 and holds four
  million elements through shared references; `x == x`, `x.flatten()`, `'%s'.format([x])` or
  handing `x` to the engine then walks all of them;
* calls whose result is much larger than their price: `s.replace('a', s)` (priced by `s`),
  `'%s'.format(...)` (priced by the format string), `join` and `findAll` (charged once the
  result exists), `split('')`.

So before a call runs, the walk measures what it hands the call (every element and character,
counted through shared references: `handled_size`) and what the call can build
(`output_bound`, an upper bound from the argument values), and refuses the call when either
passes `MAX_HANDLED_ELEMENTS` or `MAX_HANDLED_CHARS`. The same bound applies to an
evaluation's result, which every caller converts whole. Only arguments that can be large are
measured (`bulky`): the scalars and short strings of a typical extractor skip it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..common.jsonvalue import Opaque, OptionalValue
from ..k8s_library.strings_format import MAX_RENDERED_PRECISION

__all__ = [
    "BULKY_TEXT",
    "MAX_HANDLED_CHARS",
    "MAX_HANDLED_ELEMENTS",
    "bulky",
    "call_seconds",
    "handled_size",
    "output_bound",
]

MAX_HANDLED_ELEMENTS = 250_000
"""List elements and map entries one call may take plus build. Handing a value to the engine
and decoding its answer costs at most `SECONDS_PER_ELEMENT` and about 100 bytes per element,
so a call this large stays within the 1 s CPU ceiling (`call_seconds`) and a few tens of MB."""

MAX_HANDLED_CHARS = 8_000_000
"""String code points and bytes one call may take plus build: at up to 4 bytes a code point,
held by the walk, the engine and the decoded result, under 100 MB."""

BULKY_TEXT = 256
"""Strings and bytes shorter than this are not measured: no call on a few of them grows past
the bounds or runs long, so the CPU clock, read every `runtime_steps._CPU_CHECK_EVERY` steps,
is overrun by little."""

_SCALARS = frozenset({bool, int, float, type(None)})

_FORMAT_CLAUSE_CHARS = MAX_RENDERED_PRECISION + 330
"""Most characters one `format` clause renders from a scalar: a `%.1000f` of the largest
double (309 digits before the point)."""

_RENDERED_SCALAR_CHARS = 70
"""Most characters `format` renders for one scalar element (`%b` of a 64-bit int, a quoted
double inside a list)."""

_QUOTED_CHAR_CHARS = 10
"""Most characters `strings.quote` writes for one code point (`\\U0010ffff`)."""


SECONDS_PER_ELEMENT = 4e-6
"""CPU a call spends per element it takes or builds, at most (measured by
`bench/hostile_eval_bench.py` on a loaded machine: handing a list to the engine, a library
function in Python, decoding the result; strings decoded one by one are the slowest)."""

SECONDS_PER_CHAR = 1e-8
"""CPU a call spends per character it takes or builds, at most (copies and scans)."""

PARSER_SECONDS_PER_CHAR = 1e-6
"""CPU the Kubernetes libraries' parsers (written in Python) spend per character of input."""

_PARSERS = frozenset({"ip", "isIP", "cidr", "isCIDR", "url", "isURL", "quantity", "isQuantity",
                      "semver", "isSemver", "ip.isCanonical", "validate"})


def call_seconds(function: str, elements: int, chars: int) -> float:
    """A bound on the CPU one call of `function` handling `elements` and `chars` takes."""
    per_char = PARSER_SECONDS_PER_CHAR if function in _PARSERS else SECONDS_PER_CHAR
    return elements * SECONDS_PER_ELEMENT + chars * per_char


class _Over(Exception):
    """Internal: the measure passed a bound (its args: the partial counts)."""


def bulky(values: Sequence[object]) -> bool:
    """Whether any of `values` can be large: a container, a library value, or a long string."""
    for value in values:
        kind = type(value)
        if kind is str or kind is bytes:
            if len(value) > BULKY_TEXT:  # type: ignore[arg-type]
                return True
        elif kind not in _SCALARS:
            return True
    return False


def handled_size(values: Sequence[object]) -> tuple[int, int]:
    """(elements, characters) of `values`, counted through shared references (each distinct
    container is measured once); once either passes its bound the partial counts, already
    over it, are returned."""
    memo: dict[int, tuple[int, int]] = {}
    elements = chars = 0
    try:
        for value in values:
            e, c = _measure(value, memo)
            elements += e
            chars += c
            if elements > MAX_HANDLED_ELEMENTS or chars > MAX_HANDLED_CHARS:
                break
    except _Over as over:
        return over.args[0], over.args[1]
    return elements, chars


def _measure(value: object, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    kind = type(value)
    if kind in _SCALARS:
        return 0, 0
    if kind is str or kind is bytes:
        return 0, len(value)  # type: ignore[arg-type]
    if isinstance(value, list | dict):
        key = id(value)
        known = memo.get(key)
        if known is not None:
            return known
        elements, chars = len(value), 0
        items = value if isinstance(value, list) else [*value.keys(), *value.values()]
        for item in items:
            if type(item) in _SCALARS:
                continue
            e, c = _measure(item, memo)
            elements += e
            chars += c
            if elements > MAX_HANDLED_ELEMENTS or chars > MAX_HANDLED_CHARS:
                raise _Over(elements, chars)
        memo[key] = (elements, chars)
        return elements, chars
    if isinstance(value, OptionalValue):
        return _measure(value.value, memo) if value.has_value else (0, 0)
    if isinstance(value, Opaque):
        return _measure(value.token, memo)
    return 0, 0


def output_bound(function: str, values: Sequence[object], elements: int, chars: int
                 ) -> tuple[int, int] | None:
    """An upper bound on the (elements, characters) the call `function(values...)` builds,
    for the functions whose result can be much larger than their arguments; None for the
    others (their result is no larger than what they were handed). `elements` and `chars`
    are `handled_size(values)`."""
    bound = _OUTPUTS.get(function)
    return bound(values, elements, chars) if bound is not None else None


def _limited(count: int, values: Sequence[object], index: int) -> int:
    """`count`, or the call's count argument at `index` (`replace`, `split`, `findAll`) where
    that is a non-negative int below it."""
    limit = values[index] if len(values) > index else None
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
        return min(count, limit)
    return count


def _text(values: Sequence[object]) -> str | None:
    """The receiver of a string function, or None where it is not a string."""
    text = values[0] if values else None
    return text if type(text) is str else None


def _replace(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    if len(values) < 3 or not all(type(v) is str for v in values[:3]):
        return None
    text, old, new = values[0], values[1], values[2]
    assert isinstance(text, str) and isinstance(old, str) and isinstance(new, str)
    count = _limited(text.count(old) if old else len(text) + 1, values, 3)
    return 0, len(text) + count * max(0, len(new) - len(old))


def _join(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    items = values[0] if values else None
    if not isinstance(items, list):
        return None
    separator = values[1] if len(values) == 2 and type(values[1]) is str else ""
    assert isinstance(separator, str)
    return 0, chars + len(separator) * len(items)


def _split(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    text = _text(values)
    if text is None or len(values) < 2 or type(values[1]) is not str:
        return None
    separator = values[1]
    assert isinstance(separator, str)
    pieces = text.count(separator) + 1 if separator else len(text)
    return _limited(pieces, values, 2), len(text)


def _find_all(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    text = _text(values)
    if text is None:
        return None
    # a pattern matching the empty string matches between every two characters
    return _limited(len(text) + 1, values, 2), len(text)


def _format(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    text = _text(values)
    if text is None:
        return None
    clauses = text.count("%")
    return 0, (len(text) + clauses * _FORMAT_CLAUSE_CHARS + 6 * chars
               + _RENDERED_SCALAR_CHARS * (elements + 1))


def _quote(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    text = _text(values)
    if text is None:
        return None
    if text.isascii() and text.isprintable():
        return 0, len(text) + text.count('"') + text.count("\\") + 2
    return 0, _QUOTED_CHAR_CHARS * len(text) + 2


def _concat(values: Sequence[object], elements: int, chars: int) -> tuple[int, int] | None:
    if len(values) == 2 and type(values[0]) in (str, bytes) and type(values[1]) in (str, bytes):
        return 0, chars
    return None


_OUTPUTS = {
    "replace": _replace,
    "join": _join,
    "split": _split,
    "findAll": _find_all,
    "format": _format,
    "strings.quote": _quote,
    "_+_": _concat,
}
