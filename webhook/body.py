"""An AdmissionReview body decoded as Go's `encoding/json` decodes it, nesting included.

Go's decoder accepts 10,000 levels of nesting and refuses the 10,001st with
`invalid character '[' exceeded max depth`. Python's `json` recurses once per level and stops
at the interpreter's recursion limit (1,000 by default), so a review nested ~990 levels deep
(say in `metadata.managedFields[].fieldsV1`, which the API server stores as given) was
answered 400 "maximum recursion depth exceeded" where a Go webhook answers 200 — and a
non-200 reply makes the API server apply the failurePolicy.

So: decode as usual; only when that runs out of recursion, measure the depth without
recursion (strings blanked by one regular expression, then a running sum over the brackets,
both in C; skipped when the body holds no more opening brackets than the bound), refuse
beyond `GO_MAX_DEPTH` with Go's message, and otherwise decode again with the recursion limit
raised just enough for that depth, one deep document at a time. The limit is bounded by
`GO_MAX_DEPTH`, and 10,000 levels of the C decoder stay well inside a thread's stack (tested
at the bound through the real server). The scan is the costly part (docs/performance.md has
its figure), so only bodies nested beyond Python's recursion limit pay it.
"""

from __future__ import annotations

import re
import sys
import threading
from itertools import accumulate

from ..policies.cel.common.jsonvalue import loads_strict

GO_MAX_DEPTH = 10_000
"""`maxNestingDepth` of Go's `encoding/json` scanner."""

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
for _open in b"[{":
    _STEP[_open] = 1
for _close in b"]}":
    _STEP[_close] = -1
_SLICE = 1 << 16
_DEEP = threading.Lock()
_HEADROOM = 200
"""Frames above the decoder's own: the request's stack down to the decode call."""


class DepthError(ValueError):
    """Nested deeper than Go's decoder allows (its message)."""


def nesting(data: bytes) -> tuple[int, int | None]:
    """The deepest nesting of `data` outside strings, and the bracket that first passes
    `GO_MAX_DEPTH` (None when none does). In slices, so memory stays bounded."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    deepest = depth = 0
    for start in range(0, len(brackets), _SLICE):
        part = brackets[start:start + _SLICE]
        running = list(accumulate(map(_STEP.__getitem__, part), initial=depth))
        depth = running[-1]
        peak = max(running)
        if peak > GO_MAX_DEPTH:  # steps are ±1: the first level past the bound is bound + 1
            return GO_MAX_DEPTH + 1, part[running.index(GO_MAX_DEPTH + 1) - 1]
        deepest = max(deepest, peak)
    return deepest, None


def decode(data: bytes) -> object:
    """`loads_strict`, with Go's nesting limit instead of Python's recursion limit."""
    try:
        return loads_strict(data)
    except RecursionError:
        pass
    if data.count(b"[") + data.count(b"{") <= GO_MAX_DEPTH:  # cannot nest deeper: skip the scan
        depth, culprit = GO_MAX_DEPTH, None
    else:
        depth, culprit = nesting(data)
    if culprit is not None:
        raise DepthError(f"invalid character {chr(culprit)!r} exceeded max depth")
    with _DEEP:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, previous + depth + _HEADROOM))
        try:
            return loads_strict(data)
        finally:
            sys.setrecursionlimit(previous)
