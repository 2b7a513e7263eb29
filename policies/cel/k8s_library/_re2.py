"""Go/RE2 regular expressions on top of Python's `re`.

Upstream's `find`/`findAll` use Go's regexp (RE2 syntax, leftmost-first
matching). Python's `re` differs in syntax and in details that change
results: `$` also matches before a trailing newline, `\\d`/`\\w`/`\\s`/`\\b`
are Unicode-aware, `{,n}` is a repetition, backreferences and lookarounds are
accepted. This module parses the pattern with Go's rules, reports Go's error
texts, and emits an equivalent Python pattern in which every construct is
explicit (ASCII classes, `\\A`/`\\Z` anchors, scoped flags).

Not covered: Unicode script classes such as `\\p{Greek}` (general categories
like `\\pL` are) and RE2's program-size limits. A faithful alternative is the
`google-re2` binding (on PyPI), which this project does not depend on.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from dataclasses import dataclass, field

MAX_REPEAT = 1000
_MAX_RUNE = sys.maxunicode

ERR_INVALID_CHAR_CLASS = "invalid character class"
ERR_INVALID_CHAR_RANGE = "invalid character class range"
ERR_INVALID_ESCAPE = "invalid escape sequence"
ERR_INVALID_NAMED_CAPTURE = "invalid named capture"
ERR_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
ERR_INVALID_REPEAT_OP = "invalid nested repetition operator"
ERR_INVALID_REPEAT_SIZE = "invalid repeat count"
ERR_MISSING_BRACKET = "missing closing ]"
ERR_MISSING_PAREN = "missing closing )"
ERR_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
ERR_TRAILING_BACKSLASH = "trailing backslash at end of expression"
ERR_UNEXPECTED_PAREN = "unexpected )"


class Re2Error(Exception):
    """A syntax error, rendered as Go's regexp/syntax renders it."""

    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")
        self.code = code
        self.expr = expr


class Re2Unsupported(Exception):
    """Valid RE2 that this translation does not implement."""


Ranges = list[tuple[int, int]]

_DIGIT: Ranges = [(0x30, 0x39)]
_SPACE: Ranges = [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_PERL = {"d": _DIGIT, "s": _SPACE, "w": _WORD}
_POSIX: dict[str, Ranges] = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": _WORD,
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_CATEGORIES = frozenset(
    {
        *("C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me"),
        *("Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps"),
        *("S", "Sc", "Sk", "Sm", "So", "Z", "Zl", "Zp", "Zs"),
    }
)
_WORD_CLASS = "[0-9A-Za-z_]"
_WORD_BOUNDARY = f"(?:(?<={_WORD_CLASS})(?!{_WORD_CLASS})|(?<!{_WORD_CLASS})(?={_WORD_CLASS}))"
_NOT_WORD_BOUNDARY = f"(?:(?<={_WORD_CLASS})(?={_WORD_CLASS})|(?<!{_WORD_CLASS})(?!{_WORD_CLASS}))"


def _negate(ranges: Ranges) -> Ranges:
    out: Ranges = []
    nxt = 0
    for lo, hi in _normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX_RUNE:
        out.append((nxt, _MAX_RUNE))
    return out


def _normalize(ranges: Ranges) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


@functools.lru_cache(maxsize=64)
def _category_ranges(name: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of a Unicode general category (or major class)."""
    out: Ranges = []
    start = -1
    for cp in range(_MAX_RUNE + 1):
        cat = unicodedata.category(chr(cp))
        hit = cat == name or (len(name) == 1 and cat[0] == name)
        if hit and start < 0:
            start = cp
        elif not hit and start >= 0:
            out.append((start, cp - 1))
            start = -1
    if start >= 0:
        out.append((start, _MAX_RUNE))
    return tuple(out)


def _class_source(ranges: Ranges) -> str:
    ranges = _normalize(ranges)
    if not ranges:
        return "(?!)"
    parts = []
    for lo, hi in ranges:
        parts.append(_esc_cp(lo) if lo == hi else f"{_esc_cp(lo)}-{_esc_cp(hi)}")
    return "[" + "".join(parts) + "]"


def _esc_cp(cp: int) -> str:
    if cp < 0x80 and chr(cp).isalnum():
        return chr(cp)
    return f"\\U{cp:08x}"


@dataclass
class _Flags:
    fold: bool = False
    multiline: bool = False
    dotnl: bool = False
    ungreedy: bool = False


@dataclass
class _Frame:
    """An open group: alternatives of emitted atoms, and the flags to restore."""

    saved: _Flags
    alternatives: list[list[str]] = field(default_factory=lambda: [[]])


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.whole = pattern
        self.flags = _Flags()
        self.stack: list[_Frame] = [_Frame(_Flags())]

    # Emission helpers ----------------------------------------------------
    def _push(self, atom: str) -> None:
        self.stack[-1].alternatives[-1].append(atom)

    def _literal(self, ch: str) -> None:
        esc = re.escape(ch)
        self._push(f"(?i:{esc})" if self.flags.fold else esc)

    def _class(self, ranges: Ranges, negated: bool) -> None:
        if self.flags.fold:
            body = _class_source(ranges)
            if negated:
                body = "[^" + body[1:] if body.startswith("[") else "[\\x00-\\U0010ffff]"
            self._push(f"(?i:{body})")
        else:
            self._push(_class_source(_negate(ranges) if negated else ranges))

    # Main loop ------------------------------------------------------------
    def parse(self) -> str:
        t = self.whole
        last_repeat = ""
        while t:
            repeat = ""
            c = t[0]
            if c == "(":
                t = self._open_group(t)
            elif c == "|":
                self.stack[-1].alternatives.append([])
                t = t[1:]
            elif c == ")":
                self._close_group()
                t = t[1:]
            elif c == "^":
                self._push("(?m:^)" if self.flags.multiline else "\\A")
                t = t[1:]
            elif c == "$":
                self._push("(?m:$)" if self.flags.multiline else "\\Z")
                t = t[1:]
            elif c == ".":
                self._push("[\\x00-\\U0010ffff]" if self.flags.dotnl else "[^\\n]")
                t = t[1:]
            elif c == "[":
                t = self._parse_class(t)
            elif c in "*+?":
                before = t
                after = t[1:]
                after = self._repeat(c, before, after, last_repeat)
                repeat = before
                t = after
            elif c == "{":
                before = t
                parsed = _parse_repeat(t)
                if parsed is None:
                    self._literal("{")
                    t = t[1:]
                else:
                    lo, hi, after = parsed
                    if lo < 0 or lo > MAX_REPEAT or hi > MAX_REPEAT or (hi >= 0 and lo > hi):
                        raise Re2Error(ERR_INVALID_REPEAT_SIZE, before[: len(before) - len(after)])
                    quant = f"{{{lo}}}" if lo == hi else (f"{{{lo},}}" if hi < 0 else f"{{{lo},{hi}}}")
                    after = self._repeat(quant, before, after, last_repeat)
                    repeat = before
                    t = after
            elif c == "\\":
                t = self._escape_atom(t)
            else:
                self._literal(c)
                t = t[1:]
            last_repeat = repeat
        if len(self.stack) > 1:
            raise Re2Error(ERR_MISSING_PAREN, self.whole)
        return "|".join("".join(alt) for alt in self.stack[0].alternatives)

    def _repeat(self, op: str, before: str, after: str, last_repeat: str) -> str:
        lazy = False
        if after.startswith("?"):
            after = after[1:]
            lazy = True
        if last_repeat:
            raise Re2Error(ERR_INVALID_REPEAT_OP, last_repeat[: len(last_repeat) - len(after)])
        alt = self.stack[-1].alternatives[-1]
        if not alt:
            raise Re2Error(ERR_MISSING_REPEAT_ARGUMENT, before[: len(before) - len(after)])
        if self.flags.ungreedy:
            lazy = not lazy
        alt[-1] = f"(?:{alt[-1]}){op}{'?' if lazy else ''}"
        return after

    # Groups ----------------------------------------------------------------
    def _open_group(self, t: str) -> str:
        if not t.startswith("(?"):
            self.stack.append(_Frame(_copy(self.flags)))
            return t[1:]
        starts_p = len(t) > 4 and t[2] == "P" and t[3] == "<"
        starts_name = len(t) > 3 and t[2] == "<"
        if starts_p or starts_name:
            expr_start = 4 if starts_p else 3
            end = t.find(">")
            if end < 0:
                raise Re2Error(ERR_INVALID_NAMED_CAPTURE, t)
            name = t[expr_start:end]
            if not _valid_capture_name(name):
                raise Re2Error(ERR_INVALID_NAMED_CAPTURE, t[: end + 1])
            self.stack.append(_Frame(_copy(self.flags)))
            return t[end + 1 :]
        return self._perl_flags(t)

    def _perl_flags(self, s: str) -> str:
        flags = _copy(self.flags)
        t = s[2:]
        negate = False
        saw_flag = False
        while t:
            c, t = t[0], t[1:]
            if c in "imsU":
                value = not negate
                if c == "i":
                    flags.fold = value
                elif c == "m":
                    flags.multiline = value
                elif c == "s":
                    flags.dotnl = value
                else:
                    flags.ungreedy = value
                saw_flag = True
            elif c == "-":
                if negate:
                    break
                negate = True
                saw_flag = False
            elif c in ":)":
                if negate and not saw_flag:
                    break
                if c == ":":
                    self.stack.append(_Frame(_copy(self.flags)))
                self.flags = flags
                return t
            else:
                break
        raise Re2Error(ERR_INVALID_PERL_OP, s[: len(s) - len(t)])

    def _close_group(self) -> None:
        if len(self.stack) < 2:
            raise Re2Error(ERR_UNEXPECTED_PAREN, self.whole)
        frame = self.stack.pop()
        self.flags = frame.saved
        body = "|".join("".join(alt) for alt in frame.alternatives)
        self._push(f"(?:{body})")

    # Escapes ---------------------------------------------------------------
    def _escape_atom(self, t: str) -> str:
        if len(t) >= 2:
            c = t[1]
            if c == "A":
                self._push("\\A")
                return t[2:]
            if c == "z":
                self._push("\\Z")
                return t[2:]
            if c == "b":
                self._push(_WORD_BOUNDARY)
                return t[2:]
            if c == "B":
                self._push(_NOT_WORD_BOUNDARY)
                return t[2:]
            if c == "C":
                raise Re2Error(ERR_INVALID_ESCAPE, t[:2])
            if c == "Q":
                lit, _, rest = t[2:].partition("\\E")
                for ch in lit:
                    self._literal(ch)
                return rest
            if c in "pP":
                ranges, negated, rest = _parse_unicode_class(t)
                self._class(ranges, negated)
                return rest
            if c in "dDsSwW":
                self._class(_PERL[c.lower()], c.isupper())
                return t[2:]
        ch, rest = _parse_escape(t)
        self._literal(ch)
        return rest

    # Classes ---------------------------------------------------------------
    def _parse_class(self, s: str) -> str:
        t = s[1:]
        negated = False
        if t.startswith("^"):
            negated = True
            t = t[1:]
        ranges: Ranges = []
        first = True
        while not t or t[0] != "]" or first:
            first = False
            if len(t) > 2 and t[0] == "[" and t[1] == ":":
                named = _parse_named_class(t)
                if named is not None:
                    extra, t = named
                    ranges.extend(extra)
                    continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in "pP":
                extra, neg, t = _parse_unicode_class(t)
                ranges.extend(_negate(extra) if neg else extra)
                continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in "dDsSwW":
                extra = _PERL[t[1].lower()]
                ranges.extend(_negate(extra) if t[1].isupper() else extra)
                t = t[2:]
                continue
            rng = t
            lo, t = _parse_class_char(t, s)
            hi = lo
            if len(t) >= 2 and t[0] == "-" and t[1] != "]":
                t = t[1:]
                hi, t = _parse_class_char(t, s)
                if ord(hi) < ord(lo):
                    raise Re2Error(ERR_INVALID_CHAR_RANGE, rng[: len(rng) - len(t)])
            ranges.append((ord(lo), ord(hi)))
        self._class(ranges, negated)
        return t[1:]


def _copy(f: _Flags) -> _Flags:
    return _Flags(f.fold, f.multiline, f.dotnl, f.ungreedy)


def _valid_capture_name(name: str) -> bool:
    return bool(name) and all(c == "_" or (c.isascii() and c.isalnum()) for c in name)


def _parse_repeat(s: str) -> tuple[int, int, str] | None:
    """`{n}`, `{n,}`, `{n,m}`; None when `{` is a literal."""
    s = s[1:]
    parsed = _parse_int(s)
    if parsed is None:
        return None
    lo, s = parsed
    if not s:
        return None
    if s[0] != ",":
        hi = lo
    else:
        s = s[1:]
        if not s:
            return None
        if s[0] == "}":
            hi = -1
        else:
            parsed = _parse_int(s)
            if parsed is None:
                return None
            hi, s = parsed
            if hi < 0:
                lo = -1
    if not s or s[0] != "}":
        return None
    return lo, hi, s[1:]


def _parse_int(s: str) -> tuple[int, str] | None:
    i = 0
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    if i == 0 or (i >= 2 and s[0] == "0"):
        return None
    digits = s[:i]
    value = int(digits) if len(digits) <= 9 else -1
    return value, s[i:]


def _parse_escape(s: str) -> tuple[str, str]:
    """Go's parseEscape on `\\...`: a single character or an error."""
    t = s[1:]
    if not t:
        raise Re2Error(ERR_TRAILING_BACKSLASH, "")
    c, t = t[0], t[1:]
    if c.isascii() and not c.isalnum():
        return c, t
    if c in "1234567" and (not t or not ("0" <= t[0] <= "7")):
        raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
    if c in "01234567":
        value = ord(c) - 48
        for _ in range(2):
            if not t or not ("0" <= t[0] <= "7"):
                break
            value = value * 8 + ord(t[0]) - 48
            t = t[1:]
        return chr(value), t
    if c == "x" and t:
        c2, t = t[0], t[1:]
        if c2 == "{":
            value = 0
            nhex = 0
            while True:
                if not t:
                    raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
                c3, t = t[0], t[1:]
                if c3 == "}":
                    break
                v = _unhex(c3)
                if v < 0:
                    raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
                value = value * 16 + v
                if value > _MAX_RUNE:
                    raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
                nhex += 1
            if nhex == 0:
                raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
            return chr(value), t
        if not t:
            raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
        c3, t = t[0], t[1:]
        x, y = _unhex(c2), _unhex(c3)
        if x < 0 or y < 0:
            raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])
        return chr(x * 16 + y), t
    simple = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
    if c in simple:
        return simple[c], t
    raise Re2Error(ERR_INVALID_ESCAPE, s[: len(s) - len(t)])


def _unhex(c: str) -> int:
    if "0" <= c <= "9":
        return ord(c) - 48
    if "a" <= c <= "f":
        return ord(c) - 87
    if "A" <= c <= "F":
        return ord(c) - 55
    return -1


def _parse_class_char(s: str, whole_class: str) -> tuple[str, str]:
    if not s:
        raise Re2Error(ERR_MISSING_BRACKET, whole_class)
    if s[0] == "\\":
        return _parse_escape(s)
    return s[0], s[1:]


def _parse_named_class(s: str) -> tuple[Ranges, str] | None:
    end = s.find(":]", 2)
    if end < 0:
        return None
    name = s[: end + 2]
    body = name[2:-2]
    negated = body.startswith("^")
    ranges = _POSIX.get(body[1:] if negated else body)
    if ranges is None:
        raise Re2Error(ERR_INVALID_CHAR_RANGE, name)
    return (_negate(ranges) if negated else list(ranges)), s[end + 2 :]


def _parse_unicode_class(s: str) -> tuple[Ranges, bool, str]:
    negated = s[1] == "P"
    t = s[2:]
    if not t:
        raise Re2Error(ERR_INVALID_CHAR_RANGE, s)
    if t[0] != "{":
        seq, name, rest = s[:3], t[0], t[1:]
    else:
        end = s.find("}")
        if end < 0:
            raise Re2Error(ERR_INVALID_CHAR_RANGE, s)
        seq, name, rest = s[: end + 1], s[3:end], s[end + 1 :]
    if name.startswith("^"):
        negated = not negated
        name = name[1:]
    if name == "Any":
        return [(0, _MAX_RUNE)], negated, rest
    if name in _CATEGORIES:
        return list(_category_ranges(name)), negated, rest
    if len(name) > 1 and name[0].isupper() and name.isalpha():
        raise Re2Unsupported(f"Unicode class {seq} is not supported by this implementation")
    raise Re2Error(ERR_INVALID_CHAR_RANGE, seq)


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: str) -> re.Pattern[str]:
    """Translate and compile; raises Re2Error / Re2Unsupported. Bounded cache."""
    return re.compile(_Parser(pattern).parse())


def find(pattern: re.Pattern[str], text: str) -> str:
    """Go's Regexp.FindString: the leftmost-first match, or ""."""
    m = pattern.search(text)
    return m.group(0) if m else ""


def find_all(pattern: re.Pattern[str], text: str, n: int) -> list[str]:
    """Go's Regexp.FindAllString, including its empty-match rules."""
    if n < 0:
        n = len(text) + 1
    out: list[str] = []
    pos = 0
    prev_end = -1
    end = len(text)
    while len(out) < n and pos <= end:
        m = pattern.search(text, pos)
        if m is None:
            break
        accept = True
        if m.end() == pos:
            if m.start() == prev_end:
                accept = False
            pos += 1
        else:
            pos = m.end()
        prev_end = m.end()
        if accept:
            out.append(m.group(0))
    return out
