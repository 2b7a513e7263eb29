"""The values of a large, plain YAML file without composing it node by node.

Why: a `kubectl get ... -o yaml` dump of a large cluster (100,000 claims, 60 MB) takes libyaml
longer to compose, and more memory to hold as one `List` node tree, than the whole of `locks`,
`explain` or `simulate` may take (docs/performance.md, "Lock observability at scale").
rapidyaml parses the same text in C++ and writes it out as JSON, which the C JSON decoder
reads, in a fraction of that. Where that gives
exactly what `yaml_positions.NodeBuilder` would have built, the commands that hold every
document and need positions only for the rare finding (`lazy_positions`) take it; in every
other case (`None`) the loader composes the file with libyaml as the plain path does, so every error,
warning and position is still libyaml's and the builder's.

"Exactly" is kept by refusing, not by emulating:

* The text must be one document with no node properties: no tag (`!!str 5` would lose its
  tag), anchor or alias, no explicit key (`? `), no directive, no `---`/`...` marker, no
  comment, no tab, no carriage return, no character libyaml rejects or reads as a line break
  (NEL, LS, PS), no reserved indicator (`@`, a backquote) or flow end (`,`, `]`, `}`) where a
  block node starts, no block scalar header libyaml would not take, no empty key, and no
  implicit key of 1,024 characters or more (libyaml's limit). rapidyaml is more lenient than
  libyaml in each of these places (or, after a comment, misreads indentation); a
  `kubectl -o yaml` dump has none of them.
* Plain scalars are typed as kubectl types them here (go-yaml v2, the builder's rule), not by
  rapidyaml: a number rapidyaml writes bare is built from its text as the builder builds a
  plain scalar, and a string the JSON holds that go-yaml would read as something else when
  plain (`"on"`, `"y"`, `"0x1F"`, `"~"`) is refused unless rapidyaml writes that scalar bare
  when it is plain — then the JSON string was quoted in the file. A key is refused when the
  builder would turn its plain form into other text (`1.50` → `"1.5"`, `n` → `"false"`).
* A repeated key is refused (the builder reports it), as is anything rapidyaml cannot parse
  (its message goes nowhere: libyaml's error is the one reported).

`tests/sources/test_yaml_fast.py` compares both paths on every scalar form in every quoting, on
generated documents in every dumper style, on mutated dumps (broken YAML must be refused), and
on every YAML file the repository ships.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..policies.core.source import Position
from .yaml_positions import go_tag, plain_key, plain_scalar

try:
    import ryml
except ImportError:  # pragma: no cover - a dependency; its absence only costs speed
    ryml = None

_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"

_REFUSED_CHARACTER = re.compile(
    "[\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]"
)
"""Tabs, carriage returns, characters libyaml rejects, and those it reads as line breaks."""
_REFUSED_LINE = re.compile(r"^(?:%|--- *[^ \n]|\.\.\.(?:[ \n]|$))", re.MULTILINE)
"""Directives, a `---` line with content after it, and `...` markers (a bare `---` line
starts a document: `_segments`)."""
_INDICATORS = "!&*?@`%|>"
"""A tag, anchor or alias (`!`, `&`, `*`), an explicit key (`?`), or a reserved indicator
(`@`, a backquote, `%`: libyaml refuses them), or a block scalar's header (`|`, `>`) that
is not one libyaml takes, if a node starts there."""
_BLOCK_HEADER = re.compile(r"[|>](?:[-+][1-9]?|[1-9][-+]?)?(?: +#[^\n]*| *)(?:\n|$)")
_FLOW_ENDS = ",]}"
"""Flow indicators, which libyaml refuses where a block node starts (rapidyaml reads on)."""
_COMMENT_START = re.compile(r"(?:^| )$")
"""Where a comment starts: rapidyaml misreads the indentation of a key on the line after some
comments (`"  exactly"` for `exactly`), and a dump has none."""
_BLOCK_NODE_START = re.compile(r"^ *$|^(?:- +)+$|[:?\-] +$")
_NODE_START = re.compile(r"(?:^|[\[{,]) *$|[:?\-] +$|^(?:- +)+$")
"""What precedes (on its line) a place where a node may start: nothing but indentation or
sequence entries, a flow indicator, or a key/entry indicator and a space."""
_PRINTABLE_ASCII = bytes(range(32, 127)) + b"\n"
"""What an ASCII text may hold (deleting these from its bytes leaves nothing)."""


_SURROGATE_ESCAPE = re.compile(r"\\(?:u[dD][89a-fA-F]|U0000[dD][89a-fA-F])")
"""A double-quoted escape of a surrogate: libyaml refuses it, rapidyaml writes its bytes."""
_ESCAPED_BREAK_BEFORE_EMPTY = re.compile(r"\\\n[ ]*\n")
"""An escaped line break followed by an empty line, which rapidyaml folds to a space where
libyaml keeps the line break."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _refused(text: str) -> bool:
    """Whether the text holds what this path does not take (module docstring).

    Over-cautious on purpose: an indicator inside a quoted string that looks like a node start
    only costs speed. Each test is a substring search where one will do (a regular expression
    over a large dump costs far more per test): the indicators are rare in a dump (CEL's `!=` and `&&`
    follow an operand), so each is looked at alone."""
    if ("\\u" in text or "\\U" in text) and _SURROGATE_ESCAPE.search(text):
        return True
    if "\\\n" in text and _ESCAPED_BREAK_BEFORE_EMPTY.search(text):
        return True
    if text.isascii():
        if text.encode("ascii").translate(None, _PRINTABLE_ASCII):
            return True
    elif _REFUSED_CHARACTER.search(text):
        return True
    markers = ("%", "---", "...")
    if (text.startswith(markers) or any(f"\n{m}" in text for m in markers)) \
            and _REFUSED_LINE.search(text):
        return True
    for indicators, context in ((_INDICATORS, _NODE_START), (_FLOW_ENDS, _BLOCK_NODE_START),
                                ("#", _COMMENT_START)):
        for indicator in indicators:
            start = text.find(indicator)
            while start >= 0:
                if indicator != "?" or text[start + 1 : start + 2] in ("", " ", "\n"):
                    line = text[text.rfind("\n", 0, start) + 1 : start]
                    if context.search(line) and not (
                            indicator in "|>" and _BLOCK_HEADER.match(text, start)):
                        return True
                start = text.find(indicator, start + 1)
    return False


_LONG_LINE = re.compile(r"\n.{1024,}")
"""A line of 1,024 characters or more (with its newline): a literal first character lets `re`
skip to each newline, where `^` under MULTILINE tries a match at every position."""

_CANDIDATE = re.compile(
    r'"([-+.0-9][-+.0-9_:A-Za-z]*|~|<<|=|y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF'
    r'|True|TRUE|False|FALSE|null|Null|NULL)"(\s*:)?'
)
"""A JSON string that go-yaml v2 might type otherwise when plain: the first characters of its
int and float forms, and its words for booleans, null and merge (with `=` and the `:` forms
YAML 1.1 had, kept for caution); with whether it is a key."""


_LEADING_ZERO = re.compile(r"([-+]?)0(\.[0-9])")


def _origins(text: str) -> list[str]:
    """The other plain scalars rapidyaml writes as this bare number (`Typing.number`)."""
    origins = [text[:-1]] if text.endswith(".0") else []
    if _LEADING_ZERO.match(text):
        origins.append(_LEADING_ZERO.sub(r"\1\2", text, count=1))
    return origins


def _same(left: object, right: object) -> bool:
    """Equal values of the same type (`1 == 1.0 == True` in Python, not in a document)."""
    return type(left) is type(right) and left == right


class _Unsure(Exception):
    """Raised inside the JSON decoder's hooks: this path cannot vouch for the value."""


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """rapidyaml's C++ error handler writes its message to file descriptor 2 before raising;
    an input libyaml is about to report must not print a second, different message."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _emitted(data: bytes) -> list[str] | None:
    """rapidyaml's JSON for each document of `data` (one for a text without `---`), or None
    if it does not parse it."""
    assert ryml is not None
    try:
        with _quiet_stderr():
            tree = ryml.parse_in_arena(data)
            root = tree.root_id()
            nodes = list(ryml.children(tree, root)) if tree.is_stream(root) else [root]
            out = [ryml.emit_json_malloc(tree, node) for node in nodes]
    except Exception:  # rapidyaml's ExceptionParse and friends: libyaml will say what is wrong
        return None
    return [text if isinstance(text, str) else bytes(text).decode("utf-8") for text in out]


_REWRITTEN = (".inf", ".nan")
"""The strings rapidyaml writes for other plain scalars (`inf` and `.Inf` as `.inf`): which
one the file held cannot be told, so such a string is never vouched for."""

MAX_AMBIGUOUS = 256
"""Distinct strings a file may hold that go-yaml types otherwise when plain (each costs a
search of the source); past this, the file is composed."""


def _occurs_plain(source: str, text: str) -> bool:
    """`_Typing._plain_somewhere`: an occurrence of `text` neither inside a longer word nor
    between the same quote on both sides."""
    size = len(text)
    at = source.find(text)
    while at >= 0:
        before = source[at - 1] if at else "\n"
        after = source[at + size : at + size + 1]
        if not (before in "'\"" and after == before) and before in " \n[{,?-:" \
                and after in ("", "\n", " ", ",", "]", "}", ":"):
            return True
        at = source.find(text, at + 1)
    return False


class _Typing:
    """kubectl's (go-yaml v2's) typing of plain scalars, asked once per distinct text of one
    file."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._numbers: dict[str, object] = {}
        self._bare: dict[str, bool] = {}
        self._plain: dict[str, bool] = {}

    def tag(self, text: str) -> str:
        return go_tag(text)

    def number(self, text: str) -> object:
        """The builder's value for a plain scalar rapidyaml wrote as a bare JSON number.

        rapidyaml writes `1.` as `1.0` and `.5`, `-.5` as `0.5`, `-0.5` (and changes no other
        number): where the text could be such a rewrite, every scalar it could come from must
        build to the same value (`-.5` and `-0.5` are the same float)."""
        found = self._numbers.get(text)
        if found is None:
            found = self._numbers[text] = self._built(text)
            for origin in _origins(text):
                if not _same(self._built(origin), found):
                    raise _Unsure(text)
        return found

    def _built(self, text: str) -> object:
        value, clean = plain_scalar(text, self.tag(text))
        if not clean:
            raise _Unsure(text)
        return value

    def ambiguous(self, text: str, *, key: bool) -> bool:
        """Whether a JSON string `text` could stand for a plain scalar the builder types
        otherwise (module docstring)."""
        tag = self.tag(text)
        if tag == _STR:
            return False
        if text.lstrip("+-") in _REWRITTEN:
            return True  # rapidyaml writes plain `inf`, `.Inf`, `nan`, `.NaN` like this
        if tag == _MERGE:
            differs = True  # `<<` merges when plain: the builder's merge, not a key
        elif key:
            built, clean = plain_key(text, tag)
            differs = not clean or built != text
        else:
            value, clean = plain_scalar(text, tag)
            differs = not (clean and value == text and isinstance(value, str)) \
                and not self._written_bare(text)
        return differs and self._plain_somewhere(text)

    def _plain_somewhere(self, text: str) -> bool:
        """Whether the source holds `text` other than between matching quotes, delimited as a
        whole plain scalar could be (`'0x8003'` everywhere: every such string was quoted).
        Over-cautious: `a 0x8003 b` inside a quoted string counts as plain."""
        found = self._plain.get(text)
        if found is None:
            if len(self._plain) >= MAX_AMBIGUOUS:
                raise _Unsure(text)
            found = self._plain[text] = _occurs_plain(self._source, text)
        return found

    def learn_bare(self, texts: Iterable[str]) -> None:
        """`_written_bare` for many texts in one rapidyaml parse (a dump quotes a distinct
        `resourceVersion: "123456"` on every object, so a parse per text is a parse per object);
        texts that break the batch are asked one by one later."""
        new = [text for text in texts if text not in self._bare]
        if not new:
            return
        emitted = _emitted("".join(f"k{i}: {text}\n" for i, text in enumerate(new)).encode())
        try:
            values = json.loads(emitted[0]) if emitted is not None and len(emitted) == 1 else None
        except ValueError:
            values = None
        if isinstance(values, dict) and len(values) == len(new):
            for i, text in enumerate(new):
                self._bare[text] = not isinstance(values.get(f"k{i}"), str)

    def _written_bare(self, text: str) -> bool:
        bare = self._bare.get(text)
        if bare is None:
            emitted = _emitted(b"k: " + text.encode())
            bare = self._bare[text] = emitted is not None and '"k": "' not in emitted[0]
        return bare


class _DumpDecoder:
    """Parts of one file turned into values: rapidyaml's JSON, checked and typed (`_Typing`)."""

    def __init__(self, source: str) -> None:
        self.typing = _Typing(source)
        self.repeated = False
        """Some mapping repeats a key: the builder reports it, so the caller composes."""
        self._json = json.JSONDecoder(object_pairs_hook=self._pairs, parse_int=self.typing.number,
                                      parse_float=self.typing.number,
                                      parse_constant=self._constant)

    def _pairs(self, items: list[tuple[str, object]]) -> dict[str, object]:
        value = dict(items)
        if len(value) != len(items):
            self.repeated = True
        return value

    @staticmethod
    def _constant(name: str) -> object:
        raise _Unsure(name)

    def decode(self, part: str) -> object:
        """The value of one YAML text; `_Unsure` if this path cannot vouch for it."""
        emitted = _emitted(part.encode("utf-8"))
        if emitted is None or len(emitted) != 1:
            raise _Unsure("not parsed")
        return self._typed(emitted[0])

    def decode_stream(self, parts: list[str]) -> list[object]:
        """The values of several small documents, parsed as one stream and decoded as one
        JSON array: one call into rapidyaml and the decoder for many documents."""
        stream = "".join("---\n" + part + ("" if part.endswith("\n") else "\n") for part in parts)
        emitted = _emitted(stream.encode("utf-8"))
        if emitted is None or len(emitted) != len(parts):
            raise _Unsure("not parsed")
        values = self._typed("[" + ",".join(emitted) + "]")
        if not isinstance(values, list):
            raise _Unsure("not a stream")
        return values

    def _typed(self, emitted: str) -> object:
        """The decoded JSON, typed as kubectl types it (module docstring)."""
        if not emitted.isascii() and _SURROGATE.search(emitted):
            raise _Unsure("not UTF-8")  # bytes rapidyaml wrote that no text of libyaml's holds
        if '"": ' in emitted:
            raise _Unsure("an empty key")  # libyaml refuses an empty plain key, takes ""
        candidates = set(_CANDIDATE.findall(emitted))
        self.typing.learn_bare(text for text, key in candidates if not key)
        for candidate, key in candidates:
            if self.typing.ambiguous(candidate, key=bool(key)):
                raise _Unsure(candidate)
        try:
            return self._json.decode(emitted)
        except (ValueError, RecursionError) as error:
            raise _Unsure(str(error)) from None


def documents(text: str) -> tuple[list[tuple[int, Any, Position]], bool] | None:
    """The documents of `text` as `NodeBuilder` builds them — (index in the stream, value,
    where it starts), empty ones left out — and whether a mapping repeats a key (the caller
    then composes the file); None where this path cannot vouch for the result (module
    docstring).

    Small documents are parsed many to a stream (one call for a batch); a large `List` a
    batch of items at a time (`_split_items`): rapidyaml's tree of a whole 60 MB dump is
    640 MB, more than the values built from it."""
    if ryml is None or _refused(text) or _long_key(text):
        return None
    decoder = _DumpDecoder(text)
    out: list[tuple[int, Any, Position]] = []
    small: list[tuple[int, int, int, int]] = []

    def flush() -> None:
        if small:
            values = decoder.decode_stream([text[start:end] for _, start, end, _ in small])
            for (index, start, _, line), value in zip(small, values, strict=True):
                out.append((index, value, _start(text, start, line)))
            small.clear()

    try:
        for index, start, end, line in _segments(text):
            if end - start >= BATCH_CHARS:
                flush()
                out.append((index, _document(decoder, text[start:end]), _start(text, start, line)))
            else:
                small.append((index, start, end, line))
                if end - small[0][1] >= BATCH_CHARS:
                    flush()
        flush()
    except _Unsure:
        return None
    if not all(isinstance(value, dict) for _, value, _ in out):
        return None  # a scalar or list document: the builder's finding, at its position
    return out, decoder.repeated


def _document(decoder: _DumpDecoder, text: str) -> object:
    """One large document, a `List`'s items a batch at a time."""
    head, batches = _split_items(text)
    value = decoder.decode(head)
    if not batches:
        return value
    if not isinstance(value, dict) or value.get("items", False) is not None:
        raise _Unsure("items")
    items: list[object] = []
    for start, end in batches:
        part = decoder.decode(text[start:end])
        if not isinstance(part, list):
            raise _Unsure("items")
        items += part
    value["items"] = items
    return value


def _segments(text: str) -> Iterator[tuple[int, int, int, int]]:
    """(index in the stream, start, end, first line) of each document that is not empty,
    cut at its `---` lines (`_refused` leaves no other marker). Text before the first `---`
    is a document only if it holds something, as in libyaml; an explicit empty one still
    takes its index."""
    markers = [0] if text.startswith("---") and text[3:4] in ("", " ", "\n") else []
    at = text.find("\n---")
    while at >= 0:
        if text[at + 4 : at + 5] in ("", " ", "\n"):
            markers.append(at + 1)
        at = text.find("\n---", at + 1)
    index, start, line = 0, 0, 1
    for number, end in enumerate([*markers, len(text)]):
        if text[start:end].strip():
            yield index, start, end, line
            index += 1
        elif number:
            index += 1  # an explicit empty document
        if end == len(text):
            return
        after = text.find("\n", end)
        line += text.count("\n", start, end) + 1
        start = len(text) if after < 0 else after + 1


_COLUMN_ZERO = re.compile(r"\n[^ \n]")
"""The first character of a line that starts at column 0 (after its newline)."""
_ITEMS_KEY = re.compile(r"items:[ ]*(?:#[^\n]*)?(?:\n|$)")
BATCH_CHARS = 2 * 1024 * 1024
"""About how much of a List's items one rapidyaml tree holds at a time."""


def _split_items(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The document without its top-level `items:` block sequence, and that sequence cut
    into batches of whole items (offsets into `text`); the whole text and no batches when the
    layout is not that plain one.

    Why cutting at lines is sound: in a block mapping at column 0, a line that starts at
    column 0 begins a key, an item of the indentless `items:` sequence (`- `), or a comment;
    nothing an item holds (block scalars, continuation lines) starts there, and a quoted
    scalar cut in two leaves a batch rapidyaml refuses. Anything else at column 0 (a `-` not
    under `items:`, a second `items:`) keeps the text whole."""
    starts = [0] if text[:1] not in ("", " ", "\n") else []
    starts += [match.end() - 1 for match in _COLUMN_ZERO.finditer(text)]
    region: tuple[int, int] | None = None
    items_keys = 0
    for start in starts:
        char = text[start]  # never `#`: a comment refuses the text (`_refused`)
        if char == "-" and text[start + 1 : start + 2] in (" ", "\n", ""):
            if region is None or region[1] != -1:
                return text, []  # an item outside the one items: sequence
            continue
        if region is not None and region[1] == -1:
            region = (region[0], start)
        if _ITEMS_KEY.match(text, start):
            items_keys += 1
            line_end = text.find("\n", start)
            region = (len(text) if line_end < 0 else line_end + 1, -1)
    if region is None or items_keys != 1:
        return text, []
    first, last = region[0], len(text) if region[1] == -1 else region[1]
    batches: list[tuple[int, int]] = []
    begin = first
    for start in starts:
        if start <= first or start >= last or text[start] != "-":
            continue
        if start - begin >= BATCH_CHARS:
            batches.append((begin, start))
            begin = start
    if last > begin:
        batches.append((begin, last))
    return text[:first] + text[last:], batches


def _long_key(text: str) -> bool:
    """Whether some line may hold an implicit key of 1,024 characters or more, which libyaml
    refuses ("could not find expected ':'") and rapidyaml takes."""
    first = text.find("\n")
    lines = [text[: len(text) if first < 0 else first]]
    lines += [match.group()[1:] for match in _LONG_LINE.finditer(text)]
    for line in lines:
        if len(line) < 1024:
            continue
        colon = line.find(": ")
        if colon < 0 and line.endswith(":"):
            colon = len(line) - 1
        if colon >= 1000 or (colon < 0 and ":" in line[1000:]):
            return True
    return False


_CONTENT = re.compile(r"^[ ]*([^ \n#])", re.MULTILINE)


def _start(text: str, start: int = 0, line: int = 1) -> Position:
    """Where the document beginning at `start` (a line start, on `line`) has its root node:
    its first character that is not blank (the root's start mark in libyaml)."""
    match = _CONTENT.search(text, start)
    if match is None:
        return Position(line, 1)
    offset = match.start(1)
    return Position(line + text.count("\n", start, offset), offset - text.rfind("\n", 0, offset))
