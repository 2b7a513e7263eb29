"""The vocabulary a slice rule writes its ValidatingAdmissionPolicy CEL in.

A structural slice rule says, in its own module, how it reads as VAP CEL (`SliceRule.vap`, a
function of the release's `Limits` returning a `VapCel`); `policies.rules.vap` only assembles
those into one policy. What they share lives here: the policy's composited variables, the
CEL text helpers, and the RE2 classes derived from the Python predicates the webhook uses.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache

from ..core.k8s_names import QNAME_FMT, SUBDOMAIN_FMT

SLICES = "spec.sharingAffinity"
MAX_UTF8_BYTES_PER_CODE_POINT = 4

ENTRIES = "variables.entries"
NAMES = "variables.names"
OLD_EXPRESSIONS = "variables.oldExpressions"


@dataclass(frozen=True, slots=True)
class Variable:
    """A VAP composited variable (`spec.variables[]`), reachable as `variables.<name>`."""

    name: str
    expression: str


VARIABLES: tuple[Variable, ...] = (
    Variable("entries", "has(object.spec.sharingAffinity) ? object.spec.sharingAffinity : []"),
    Variable("names", f"{ENTRIES}.map(a, has(a.name) ? a.name : '')"),
    Variable(
        "oldExpressions",
        "oldObject != null && has(oldObject.spec.sharingAffinity)"
        " ? oldObject.spec.sharingAffinity.filter(o, has(o.expression)).map(o, o.expression)"
        " : []",
    ),
)
"""Evaluated lazily by the API server, at most once per request: `oldExpressions` only when an
expression is over the length limit."""


@dataclass(frozen=True, slots=True)
class VapCel:
    """One rule as VAP CEL: true when the object complies; `detail` names the offenders."""

    expression: str
    detail: str | None
    field_path: str


def cel_string(text: str) -> str:
    """A CEL double-quoted string literal for `text` (JSON's escapes are a subset of CEL's)."""
    return json.dumps(text, ensure_ascii=False)


def cel_raw(pattern: str) -> str:
    """A CEL raw single-quoted literal: regex escapes pass through to RE2 untouched."""
    if "'" in pattern or "\n" in pattern:
        raise ValueError(f"pattern cannot be a raw CEL literal: {pattern!r}")
    return f"r'{pattern}'"


def _re2_char(code: int) -> str:
    return f"\\x{{{code:x}}}"


@lru_cache(maxsize=1)
def whitespace_class() -> str:
    """An RE2 character class of exactly the characters `str.isspace` accepts.

    SA104 calls an expression empty when `str.strip()` leaves nothing, i.e. every character
    satisfies `str.isspace` (which, unlike Go's `unicode.IsSpace` and so CEL's `trim()`, also
    accepts U+001C..U+001F). Deriving the class from the predicate keeps the two identical.
    Cached: it walks every code point once.
    """
    codes = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    ranges: list[tuple[int, int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    parts = [_re2_char(lo) if lo == hi else f"{_re2_char(lo)}-{_re2_char(hi)}" for lo, hi in ranges]
    return "[" + "".join(parts) + "]"


def qualified_name_pattern() -> str:
    """`IsQualifiedName` as one anchored RE2 pattern (the lengths are checked beside it)."""
    return f"^({SUBDOMAIN_FMT}/)?{QNAME_FMT}$"


def indexed(field: str) -> str:
    """CEL building `spec.sharingAffinity[<i>].<field>` for the comprehension index `i`."""
    return f"'{SLICES}[' + string(i) + '].{field}'"
