"""Go's `regexp` package, on RE2 itself (the `google-re2` binding).

Why: upstream's `find`/`findAll`, the format validators and the check of regex literals all
use Go's regexp, which is RE2's design ported to Go: the same syntax, leftmost-first
matching, linear time. Matching is therefore left to RE2; this module adds only what differs
between RE2 and Go:

* constructs RE2 accepts and Go rejects: `\\C` (any byte) and capture names outside
  `[A-Za-z0-9_]`; and lookbehind, which both reject, Go as a bad named capture (`(?<=`);
* the error texts: RE2's error codes are Go's `regexp/syntax` codes under other words
  (`missing )` is Go's `missing closing )`), and the offending text RE2 reports is the text
  Go reports;
* `FindAllString`'s empty-match rule (no empty match right after the previous match).

Not reproduced, both about sizes: Go's limit on the height of the parse tree (`expression
nests too deeply`, beyond 1000 levels), which RE2 does not have; and the size limit. Go
budgets instructions (about 3.3 million), RE2 memory (8 MiB by default), and RE2 compiles a
Unicode class to many instructions where Go uses one, so a pattern such as `\\pL{1000}`
(1.2 million RE2 instructions, 40 MB) is too large here, `expression too large` in Go's
words, and valid in Go. We keep RE2's default: a larger budget would let a few such
patterns pin gigabytes in the compiled-pattern caches, and cel-cpp's own `matches` rejects
the same patterns with the same budget.

RE2 objects are immutable and safe to share between threads. Compiled patterns are kept in a
bounded cache of the same size as google-re2's own (128), so at most 128 compiled patterns
live at a time, each within RE2's budget.
"""

from __future__ import annotations

from typing import Any

import re2

from ...core.cache import cached

ERR_INTERNAL = "regexp/syntax: internal error"
ERR_INVALID_CHAR_CLASS = "invalid character class"
ERR_INVALID_CHAR_RANGE = "invalid character class range"
ERR_INVALID_ESCAPE = "invalid escape sequence"
ERR_INVALID_NAMED_CAPTURE = "invalid named capture"
ERR_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
ERR_INVALID_REPEAT_OP = "invalid nested repetition operator"
ERR_INVALID_REPEAT_SIZE = "invalid repeat count"
ERR_INVALID_UTF8 = "invalid UTF-8"
ERR_MISSING_BRACKET = "missing closing ]"
ERR_MISSING_PAREN = "missing closing )"
ERR_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
ERR_TRAILING_BACKSLASH = "trailing backslash at end of expression"
ERR_UNEXPECTED_PAREN = "unexpected )"
ERR_LARGE = "expression too large"

# RE2's error code texts (re2/regexp.cc) and the Go error code each one is.
_RE2_CODES: dict[str, str] = {
    "unexpected error": ERR_INTERNAL,
    "invalid escape sequence": ERR_INVALID_ESCAPE,
    "invalid character class": ERR_INVALID_CHAR_CLASS,
    "invalid character class range": ERR_INVALID_CHAR_RANGE,
    "missing ]": ERR_MISSING_BRACKET,
    "missing )": ERR_MISSING_PAREN,
    "unexpected )": ERR_UNEXPECTED_PAREN,
    "trailing \\": ERR_TRAILING_BACKSLASH,
    "no argument for repetition operator": ERR_MISSING_REPEAT_ARGUMENT,
    "invalid repetition size": ERR_INVALID_REPEAT_SIZE,
    "bad repetition operator": ERR_INVALID_REPEAT_OP,
    "invalid perl operator": ERR_INVALID_PERL_OP,
    "invalid UTF-8": ERR_INVALID_UTF8,
    "invalid named capture group": ERR_INVALID_NAMED_CAPTURE,
}
_RE2_TOO_LARGE = "pattern too large - compile failed"
# Errors RE2 and Go find only at the end of the pattern.
_END_OF_PATTERN = frozenset({ERR_MISSING_PAREN, ERR_MISSING_BRACKET})

MAX_MEM = 8 << 20
"""RE2's default memory budget per pattern (see the module docstring)."""

_CACHE_SIZE = 128

Regex = Any
"""A compiled google-re2 pattern (the binding ships no type information)."""


class Re2Error(Exception):
    """A pattern Go's regexp rejects, worded as Go's `regexp/syntax.Error`."""

    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")
        self.code = code
        self.expr = expr


def compile_re2(pattern: str) -> Regex:
    """Compile with Go's rules (raises Re2Error with Go's message). Bounded cache."""
    compiled = _compile(pattern)
    if isinstance(compiled, Re2Error):
        raise Re2Error(compiled.code, compiled.expr)  # a fresh one: cached ones are never raised
    return compiled


def pattern_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error text for `pattern`, or None when Go accepts it."""
    compiled = _compile(pattern)
    return str(compiled) if isinstance(compiled, Re2Error) else None


@cached("cel.library.regexes", _CACHE_SIZE)
def _compile(pattern: str) -> Regex | Re2Error:
    compiled = _re2_compile(pattern)
    go_only = _go_only_error(pattern)
    if go_only is None:
        return compiled
    position, error = go_only
    if not isinstance(compiled, Re2Error) or compiled.code in _END_OF_PATTERN:
        return error
    # Both reject: whichever error comes first in the pattern is the one Go reports. RE2's
    # comes first when RE2 already rejects the text before the Go-only construct, for the
    # same reason.
    before = _re2_compile(pattern[:position])
    if isinstance(before, Re2Error) and before.code == compiled.code:
        return compiled
    return error


def _re2_compile(pattern: str) -> Regex | Re2Error:
    """RE2's verdict, its error translated to Go's."""
    options = re2.Options()
    options.log_errors = False  # RE2 would print every rejected pattern to stderr
    options.max_mem = MAX_MEM
    try:
        return re2.compile(pattern, options)
    except re2.error as err:
        raw = err.args[0] if err.args else ""
        message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return _go_error(pattern, message)


def _go_error(pattern: str, message: str) -> Re2Error:
    if message == _RE2_TOO_LARGE:
        return Re2Error(ERR_LARGE, pattern)
    code, _, arg = message.partition(": ")
    go_code = _RE2_CODES.get(code)
    if go_code is None:
        return Re2Error(ERR_INTERNAL, pattern)
    if go_code == ERR_INVALID_PERL_OP and arg in ("(?<=", "(?<!"):
        start = pattern.find(arg)
        if start >= 0:
            return _named_capture_error(pattern, start)
    return Re2Error(go_code, arg)


# ------------------------------------------------------------------------------------------------
# What Go rejects and RE2 accepts, found by a lexical scan that skips what Go's parser skips:
# escapes, `\Q...\E` literals and character classes.


def _go_only_error(pattern: str) -> tuple[int, Re2Error] | None:
    """The first Go-only error in `pattern`, with its offset."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            following = pattern[i + 1 : i + 2]
            if following == "C":
                return i, Re2Error(ERR_INVALID_ESCAPE, "\\C")
            if following == "Q":
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
            else:
                i += 2
        elif c == "[":
            i = _class_end(pattern, i)
        elif pattern.startswith("(?", i):
            error = _group_error(pattern, i)
            if error is not None:
                return i, error
            i += 2
        else:
            i += 1
    return None


def _class_end(pattern: str, start: int) -> int:
    """Offset after the character class opening at `start` (Go's parseClass bounds)."""
    i, n = start + 1, len(pattern)
    if pattern.startswith("^", i):
        i += 1
    first = True
    while i < n:
        c = pattern[i]
        if c == "]" and not first:
            return i + 1
        first = False
        if c == "\\":
            i += 2
        elif pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
            i = end + 2
        else:
            i += 1
    return n


def _group_error(pattern: str, start: int) -> Re2Error | None:
    """Go's verdict on a `(?<` group RE2 judges differently: lookbehind, non-ASCII names."""
    if pattern.startswith(("(?<=", "(?<!"), start):
        return _named_capture_error(pattern, start)
    if pattern.startswith("(?P<", start):
        begin = start + 4
    elif pattern.startswith("(?<", start):
        begin = start + 3
    else:
        return None
    end = pattern.find(">", begin)
    if end < 0 or pattern[begin:end].isascii():
        return None  # RE2 rejects the same names as Go, with the same text
    return Re2Error(ERR_INVALID_NAMED_CAPTURE, pattern[start : end + 1])


def _named_capture_error(pattern: str, start: int) -> Re2Error:
    """Go's error for `(?<...` whose name is invalid: the text up to `>`, or to the end."""
    end = pattern.find(">", start)
    return Re2Error(ERR_INVALID_NAMED_CAPTURE, pattern[start:] if end < 0 else pattern[start : end + 1])


# ------------------------------------------------------------------------------------------------
# Matching


# Both functions search the UTF-8 bytes: google-re2 then reports RE2's own byte positions,
# where a `str` search would convert every position back to code points (twice the time).


def find(regex: Regex, text: str) -> str:
    """Go's `Regexp.FindString`: the leftmost-first match, or ""."""
    data = text.encode("utf-8")
    match = regex.search(data)
    if match is None:
        return ""
    start, stop = match.span()
    return data[start:stop].decode("utf-8")


def find_all(regex: Regex, text: str, n: int) -> list[str]:
    """Go's `Regexp.FindAllString(text, n)`, including its empty-match rules.

    Every search sees the whole text, so `^` and `\\b` look at what precedes the start, as
    in Go.
    """
    data = text.encode("utf-8")
    end = len(data)
    if n < 0:
        n = end + 1
    out: list[str] = []
    pos = 0
    previous_end = -1
    while len(out) < n and pos <= end:
        match = regex.search(data, pos)
        if match is None:
            break
        start, stop = match.span()
        accept = True
        if stop == pos:
            # An empty match: not allowed right after the previous match; step one rune.
            accept = start != previous_end
            pos += _rune_width(data, pos) if pos < end else 1
        else:
            pos = stop
        previous_end = stop
        if accept:
            out.append(data[start:stop].decode("utf-8"))
    return out


def _rune_width(data: bytes, pos: int) -> int:
    lead = data[pos]
    if lead < 0x80:
        return 1
    if lead < 0xE0:
        return 2
    return 3 if lead < 0xF0 else 4
