"""Compile errors as values, rendered exactly as cel-go renders them.

Why a module of its own: the API server shows CEL compile errors in cel-go's format
(`common.Errors.ToDisplayString`), users paste them into bug reports, and tests compare them
byte for byte. Our engine (cel-cpp behind cel-expr-python) raises a status text in a very
similar but not identical format, and our own AST validators produce errors cel-cpp never
sees. So every error becomes a `CompileProblem` value first, and one renderer prints them all:

* `ERROR: <input>:L:C: message`, then (when the line is known and at most 16384 bytes long)
  ` | <source line>` with tabs shown as spaces and ` | <dots>^` under the column; a code point
  wider than one UTF-8 byte is marked with a full-width dot (U+FF0E) or caret (U+FF3E);
* errors sorted by line, then column (stable);
* at most 100 errors, then `N more errors were truncated`.

Where cel-cpp words an error differently from cel-go and the cel-go text can be derived from
cel-cpp's alone (plus the source), `normalize_message` rewrites it; everything else keeps
cel-cpp's wording (see `KNOWN_WORDING_DIFFERENCES`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "KNOWN_WORDING_DIFFERENCES",
    "MAX_ERRORS_TO_REPORT",
    "MAX_SNIPPET_BYTES",
    "SOURCE_DESCRIPTION",
    "CompileProblem",
    "ErrorStage",
    "normalize_error",
    "normalize_message",
    "parse_engine_errors",
    "render_error",
    "render_errors",
    "split_status",
]

SOURCE_DESCRIPTION = "<input>"
"""cel-go's description of an expression given as a string (`common.NewTextSource`)."""

MAX_ERRORS_TO_REPORT = 100
"""cel-go `common.NewErrors`: errors beyond this are counted, not shown."""

MAX_SNIPPET_BYTES = 16384
"""cel-go `common.Error`: a source line longer than this (in UTF-8 bytes) is not echoed."""

_DOT, _CARET = ".", "^"
_WIDE_DOT, _WIDE_CARET = "\uff0e", "\uff3e"


class ErrorStage(enum.Enum):
    """Which phase of compilation produced an error (upstream renders them all alike)."""

    PARSE = "parse"
    CHECK = "check"
    VALIDATE = "validate"
    PROGRAM = "program"


@dataclass(frozen=True, slots=True)
class CompileProblem:
    """One compile error.

    `line` is 1-based and `column` is the 1-based code-point column cel-go prints (its
    0-based column plus one). An error upstream reports without a location (parser limits,
    internal errors) has `line == -1` and `column == 0`, which is also how cel-go prints it.
    """

    line: int
    column: int
    message: str
    stage: ErrorStage = ErrorStage.CHECK

    @property
    def has_location(self) -> bool:
        """Whether the error points at a place in the source."""
        return self.line >= 1

    def render(self, source: str) -> str:
        """This error alone, as cel-go prints it (see `render_error`)."""
        return render_error(self, source)


def _snippet(source: str, line: int) -> str | None:
    """Line `line` (1-based) of `source`, split on '\\n' only, as cel-go's `Source.Snippet`."""
    if line < 1:
        return None
    lines = source.split("\n")
    if line > len(lines):
        return None
    return lines[line - 1]


def render_error(error: CompileProblem, source: str) -> str:
    """One error in cel-go's display format (`common.Error.ToDisplayString`).

    A PROGRAM-stage error (upstream: `env.Program()` failed, e.g. an invalid regex literal
    of `find`) carries no location upstream, so only its message is printed.
    """
    if error.stage is ErrorStage.PROGRAM:
        return error.message
    out = f"ERROR: {SOURCE_DESCRIPTION}:{error.line}:{error.column}: {error.message}"
    snippet = _snippet(source, error.line)
    if snippet is None or len(snippet.encode("utf-8")) > MAX_SNIPPET_BYTES:
        return out
    snippet = snippet.replace("\t", " ")
    marker: list[str] = []
    zero_based = max(error.column - 1, 0)
    for ch in snippet[:zero_based]:
        marker.append(_WIDE_DOT if len(ch.encode("utf-8")) > 1 else _DOT)
    at = snippet[zero_based:zero_based + 1]
    marker.append(_WIDE_CARET if at and len(at.encode("utf-8")) > 1 else _CARET)
    return f"{out}\n | {snippet}\n | {''.join(marker)}"


def render_errors(errors: Iterable[CompileProblem], source: str) -> str:
    """Several errors as cel-go's `Errors.ToDisplayString`: sorted, capped at 100, joined."""
    ordered = sorted(errors, key=lambda e: (e.line, e.column))
    shown = [render_error(e, source) for e in ordered[:MAX_ERRORS_TO_REPORT]]
    if len(ordered) > MAX_ERRORS_TO_REPORT:
        shown.append(f"{len(ordered) - MAX_ERRORS_TO_REPORT} more errors were truncated")
    return "\n".join(shown)


# ------------------------------------------------------------------------------------------------
# Reading cel-cpp's status text
# ------------------------------------------------------------------------------------------------

# The patterns of this module are strings passed to `re.match`/`re.search`/`re.sub`, which
# compile one on its first use and keep it in `re`'s own cache: most read only error text, and
# compiling all of them at import would be paid by every start, one-file `lint` included.
_STATUS_PREFIX = r"^([A-Z_]+): "
_STATUS_SUFFIX = r" \[([A-Z_]+)\]$"
_ERROR_HEAD = r"^ERROR: [^:\n]*:(-?\d+):(-?\d+): (.*)$"


def split_status(text: str) -> tuple[str, str]:
    """Split cel-cpp's `CODE: body [CODE]` status text into (code, body)."""
    code = ""
    m = re.match(_STATUS_PREFIX, text)
    if m:
        code = m.group(1)
        text = text[m.end():]
    s = re.search(_STATUS_SUFFIX, text)
    if s:
        code = code or s.group(1)
        text = text[:s.start()]
    return code, text


def parse_engine_errors(
    text: str, source: str, stage: ErrorStage = ErrorStage.CHECK
) -> tuple[CompileProblem, ...]:
    """Turn cel-cpp's compile status text into errors, normalized to cel-go's wording.

    cel-cpp renders each error as `ERROR: <input>:L:C: msg` followed by its own snippet lines
    (` | ...`); we keep line, column and message and drop the snippet (we render our own).
    A message may continue over several lines; those continuation lines are kept. Text with
    no `ERROR:` head at all (e.g. `Expression recursion limit exceeded. limit: 32`) becomes a
    single error without location. cel-cpp prints a missing location as `-1:-1`, cel-go as
    `-1:0`; we store cel-go's.
    """
    _, body = split_status(text)
    errors: list[CompileProblem] = []
    current: list[str] | None = None
    head: tuple[int, int] = (-1, 0)

    def flush() -> None:
        if current is not None:
            line, column = head
            if line < 1:
                line, column = -1, 0
            raw_error = CompileProblem(line, column, "\n".join(current), stage)
            errors.append(normalize_error(raw_error, source))

    for raw in body.split("\n"):
        m = re.match(_ERROR_HEAD, raw)
        if m:
            flush()
            head = (int(m.group(1)), int(m.group(2)))
            current = [m.group(3)]
        elif raw.startswith(" | "):
            continue
        elif current is not None:
            current.append(raw)
    flush()
    if not errors and body.strip():
        errors.append(CompileProblem(-1, 0, body.strip(), stage))
    return tuple(errors)


# ------------------------------------------------------------------------------------------------
# Wording: cel-cpp -> cel-go
# ------------------------------------------------------------------------------------------------

KNOWN_WORDING_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    (
        "expression of type 'T' cannot be the range of a comprehension (must be list, map, "
        "or dynamic)",
        "expression of type 'T' cannot be range of a comprehension (must be list, map, or "
        "dynamic)",
        "rewritten",
    ),
    (
        "expression of type 'T' cannot be the operand of a select operation",
        "type 'T' does not support field selection",
        "rewritten",
    ),
    (
        "found no matching overload for 'f' applied to '(T, A)' (member call)",
        "found no matching overload for 'f' applied to 'T.(A)'",
        "rewritten when the source shows a receiver call",
    ),
    (
        "undeclared reference to 'a.b.c' (in container ''), at the last '.'",
        "undeclared reference to 'a' (in container ''), at 'a'",
        "rewritten when the dotted name is found in the source",
    ),
    (
        "has() argument must be a field selection",
        "invalid argument to has() macro",
        "rewritten",
    ),
    (
        "all() / exists() / exists_one() variable name must be a simple identifier",
        "argument must be a simple name",
        "rewritten",
    ),
    (
        "map() / filter() variable name must be a simple identifier",
        "argument is not an identifier",
        "rewritten",
    ),
    (
        "cel.bind() variable name must be a simple identifier",
        "cel.bind() variable names must be simple identifiers",
        "rewritten",
    ),
    (
        "all() variable name cannot be __result__ (at the predicate)",
        "iteration variable overwrites accumulator variable (at the variable)",
        "rewritten and moved to the variable when it is written just before the predicate",
    ),
    (
        "all() first / second variable name must be a simple identifier (two variables)",
        "argument must be a simple name",
        "rewritten",
    ),
    (
        "all() first / second variable name cannot be __result__ (two variables)",
        "iteration variable overwrites accumulator variable",
        "rewritten",
    ),
    (
        "all() second variable must be different from the first variable (at the first)",
        "duplicate variable name: i (at the second)",
        "rewritten and moved when the two names are written as `i, i`",
    ),
    (
        "Syntax error: no viable alternative at input '.true'",
        "Syntax error: mismatched input 'true' expecting IDENTIFIER",
        "rewritten (cel-go applies the same rewrite for true/false/null)",
    ),
    (
        "Exceeded max recursion depth of 32 when parsing. / Expression recursion limit "
        "exceeded. limit: 32",
        "expression recursion limit exceeded: 250 / max recursion depth exceeded",
        "engine limit: reported by compile.py as engine_limited, or with cel-go's text when "
        "upstream would fail too",
    ),
    (
        "other Syntax error texts (ANTLR)",
        "same ANTLR messages; the expected-token sets may differ between grammar revisions",
        "kept",
    ),
)
"""(cel-cpp wording, cel-go wording, what we do) for the differences we know of."""

_COMPREHENSION_RANGE = (
    r"^expression of type '(.*)' cannot be the range of a comprehension "
    r"\(must be list, map, or dynamic\)$"
)
_SELECT_OPERAND = (r"^expression of type '(.*)' cannot be the operand of a select "
                   r"operation$")
_RESERVED_AFTER_DOT = r"no viable alternative at input '.(true|false|null)'"
_NO_OVERLOAD = r"^found no matching overload for '(.+)' applied to '\((.*)\)'$"
_IDENT_CHARS = r"[A-Za-z0-9_.]"


_UNDECLARED = r"^undeclared reference to '([^']+)' \(in container '([^']*)'\)$"


_TWO_VAR_NOT_SIMPLE = (
    r"^\w+\(\) (?:first|second) variable name must be a simple identifier$")
_TWO_VAR_ACCUMULATOR = r"^\w+\(\) (?:first|second) variable name cannot be __result__$"
_TWO_VAR_DUPLICATE = (r"^\w+\(\) second variable must be different from the first "
                      r"variable$")
_ONE_VAR_ACCUMULATOR = r"^\w+\(\) variable name cannot be __result__$"
_ACCUMULATOR = "__result__"
_OVERWRITES_ACCUMULATOR = "iteration variable overwrites accumulator variable"


def normalize_error(error: CompileProblem, source: str) -> CompileProblem:
    """An engine error with cel-go's wording and, where cel-go points elsewhere, location."""
    macro = _macro_variable_error(error, source)
    if macro is not None:
        return macro
    m = re.match(_UNDECLARED, error.message)
    if m and "." in m.group(1).lstrip("."):
        moved = _undeclared_qualified_name(source, m.group(1), error.line, error.column)
        if moved is not None:
            line, column, first = moved
            return CompileProblem(
                line, column, f"undeclared reference to '{first}' (in container '{m.group(2)}')",
                error.stage)
    message = normalize_message(error.message, source, error.line, error.column)
    return CompileProblem(error.line, error.column, message, error.stage)


def _macro_variable_error(error: CompileProblem, source: str) -> CompileProblem | None:
    """cel-go's text and place for cel-cpp's comprehension-variable errors, else None.

    cel-go's macros report a duplicate second variable at the second variable and a variable
    named after the accumulator at that variable; cel-cpp reports the former at the first
    variable and the one-variable form of the latter at the predicate.
    """
    message = error.message
    if re.match(_TWO_VAR_NOT_SIMPLE, message):
        return CompileProblem(error.line, error.column, "argument must be a simple name",
                            error.stage)
    if re.match(_TWO_VAR_ACCUMULATOR, message):
        return CompileProblem(error.line, error.column, _OVERWRITES_ACCUMULATOR, error.stage)
    if re.match(_TWO_VAR_DUPLICATE, message):
        found = _next_variable(source, error.line, error.column)
        if found is None:
            return None
        name, line, column = found
        return CompileProblem(line, column, f"duplicate variable name: {name}", error.stage)
    if re.match(_ONE_VAR_ACCUMULATOR, message):
        place = _previous_variable(source, error.line, error.column, _ACCUMULATOR)
        line, column = place if place is not None else (error.line, error.column)
        return CompileProblem(line, column, _OVERWRITES_ACCUMULATOR, error.stage)
    return None


def _offset_of(source: str, line: int, column: int) -> int | None:
    """Offset in `source` of the 1-based (line, code-point column), if it exists."""
    if line < 1 or column < 1:
        return None
    start = 0
    for _ in range(line - 1):
        start = source.find("\n", start) + 1
        if start == 0:
            return None
    end = source.find("\n", start)
    end = len(source) if end == -1 else end
    offset = start + column - 1
    return offset if offset < end else None


def _position_of(source: str, offset: int) -> tuple[int, int]:
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, offset - line_start + 1


def _identifier_at(source: str, offset: int) -> str:
    end = offset
    while end < len(source) and (source[end].isalnum() or source[end] == "_"):
        end += 1
    return source[offset:end]


def _skip_blank(source: str, i: int) -> int:
    while i < len(source):
        if source[i].isspace():
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            i = len(source) if end == -1 else end + 1
        else:
            break
    return i


def _next_variable(source: str, line: int, column: int) -> tuple[str, int, int] | None:
    """The name at (line, column) and where the identifier after its `,` starts, if the
    source there reads `name, name`."""
    at = _offset_of(source, line, column)
    if at is None:
        return None
    first = _identifier_at(source, at)
    if not first:
        return None
    comma = _skip_blank(source, at + len(first))
    if comma >= len(source) or source[comma] != ",":
        return None
    second = _skip_blank(source, comma + 1)
    if _identifier_at(source, second) != first:
        return None
    return (first, *_position_of(source, second))


def _previous_variable(source: str, line: int, column: int, name: str
                       ) -> tuple[int, int] | None:
    """Where `name` starts when the source before (line, column) reads `name, `."""
    at = _offset_of(source, line, column)
    if at is None:
        return None
    i = at - 1
    while i >= 0 and source[i].isspace():
        i -= 1
    if i < 0 or source[i] != ",":
        return None
    i -= 1
    while i >= 0 and source[i].isspace():
        i -= 1
    start = i - len(name) + 1
    if start < 0 or source[start:i + 1] != name:
        return None
    if start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_"):
        return None
    return _position_of(source, start)


def _undeclared_qualified_name(
    source: str, name: str, line: int, column: int
) -> tuple[int, int, str] | None:
    """Where cel-go reports an undeclared `a.b.c`: at its first identifier, named `a`.

    cel-cpp reports the whole qualified name at one of its selects (or at the enclosing
    `has(`); cel-go checks the operand chain down to the identifier and reports that. We find
    the written name closest to cel-cpp's position; None if it is not in the source.
    """
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return None
    leading_dot = name.startswith(".")
    segments = name.lstrip(".").split(".")
    pattern = "(" + re.escape(segments[0]) + ")" + "".join(
        r"\s*\.\s*" + re.escape(s) for s in segments[1:])
    if leading_dot:
        pattern = r"\.\s*" + pattern
    text = lines[line - 1]
    matches = list(re.finditer(r"(?<![\w.])" + pattern + r"(?!\w)", text))
    if not matches:
        return None
    here = column - 1
    best = min(matches, key=lambda mm: min(abs(mm.start() - here), abs(mm.end() - 1 - here)))
    first = ("." if leading_dot else "") + segments[0]
    return line, best.start(1) + 1, first


_FIXED_REWRITES = {
    "has() argument must be a field selection": "invalid argument to has() macro",
    "all() variable name must be a simple identifier": "argument must be a simple name",
    "exists() variable name must be a simple identifier": "argument must be a simple name",
    "exists_one() variable name must be a simple identifier": "argument must be a simple name",
    "map() variable name must be a simple identifier": "argument is not an identifier",
    "filter() variable name must be a simple identifier": "argument is not an identifier",
    "cel.bind() variable name must be a simple identifier":
        "cel.bind() variable names must be simple identifiers",
}


def normalize_message(message: str, source: str, line: int, column: int) -> str:
    """Rewrite a cel-cpp message into cel-go's wording where that is derivable and safe."""
    fixed = _FIXED_REWRITES.get(message)
    if fixed is not None:
        return fixed
    m = re.match(_COMPREHENSION_RANGE, message)
    if m:
        return (f"expression of type '{m.group(1)}' cannot be range of a comprehension "
                "(must be list, map, or dynamic)")
    m = re.match(_SELECT_OPERAND, message)
    if m:
        return f"type '{m.group(1)}' does not support field selection"
    if "no viable alternative" in message:
        message = re.sub(_RESERVED_AFTER_DOT, r"mismatched input '\1' expecting IDENTIFIER", message)
    m = re.match(_NO_OVERLOAD, message)
    if m and _is_receiver_call(source, line, column, m.group(1)):
        args = _split_type_list(m.group(2))
        if args:
            target, rest = args[0], args[1:]
            return (f"found no matching overload for '{m.group(1)}' applied to "
                    f"'{target}.({', '.join(rest)})'")
    return message


def _is_receiver_call(source: str, line: int, column: int, function: str) -> bool:
    """Whether the call at (line, column) is written `target.function(...)`.

    cel-cpp and cel-go both place a call at its opening parenthesis; the function name is the
    identifier just before it, and a receiver call has a '.' before that identifier.
    Operators (`_+_`, `@in`, ...) are never receiver calls.
    """
    if not function or (not function[0].isalpha() and function[0] != "_"):
        return False
    if function.startswith("_") and function.endswith("_"):
        return False
    text = _snippet(source, line)
    if text is None or column < 1 or column > len(text) or text[column - 1] != "(":
        return False
    end = column - 1
    while end > 0 and text[end - 1].isspace():
        end -= 1
    start = end
    while start > 0 and re.match(_IDENT_CHARS, text[start - 1]):
        start -= 1
    written = text[start:end]
    if not written.endswith(function):
        return False
    before = written[: len(written) - len(function)]
    if before:
        # `x.f(` written in one token run: the part before the name ends with '.'.
        return before.endswith(".")
    i = start
    while i > 0 and text[i - 1].isspace():
        i -= 1
    return i > 0 and text[i - 1] == "."


def _split_type_list(text: str) -> list[str]:
    """Split `int, map(string, int), list(dyn)` at top-level commas."""
    if not text.strip():
        return []
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


# Kinds of evaluation errors, in Kubernetes' words (reference §1.4, errors.go): how the
# scheduler classifies a failed extraction. Here, beside the compile errors, so that the
# runtime and the extraction model share one spelling without importing each other.
KIND_MISSING_FIELD = "missing field"
KIND_FAILED = "cel evaluation failed"
KIND_COST_EXCEEDED = "cel evaluation cost exceeded"
