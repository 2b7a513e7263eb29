"""Plain Python values from composed YAML nodes, with a line:column per field path.

`yaml.compose_all(..., Loader=CSafeLoader)` parses in C and hands us a node tree
whose nodes carry marks; this module walks one document's tree once, building the
plain values kubectl would send for it (dict, list, str, int, float, bool, None) and
recording, for every field path, where its value and its key start.

Choices, and why:

* Positions are packed into one `int` per path (key line/column in the high 64
  bits, value line/column in the low 64) and exposed through two read-only
  `Mapping` views. A `Position` object or a tuple per node would cost an
  allocation (and a GC-tracked one, for `Position`) on the hottest path.
* Plain scalars are typed as kubectl types them before sending JSON: go-yaml v2's resolver
  (sigs.k8s.io/yaml's fork, what `YAMLToJSON` runs), not PyYAML's YAML 1.1 one (`go_plain`).
  `y`/`n`/`yes`/`on`/`off` in their listed spellings are booleans, numbers are what Go's
  `strconv` parses (`0x1f`, `0o17`, `017`, `1e5`, `1_000`; `9223372036854775808` as uint64),
  there is no sexagesimal (`1:30` stays a string), and a float out of range stays a string.
  The value is then what the JSON kubectl sends decodes to (`sent_number`): a float Go writes
  without a fraction (`1e5`, `1.0`) arrives as an integer; `.inf`/`.nan` cannot be sent at all.
* Timestamps and `!!binary` stay strings: Kubernetes decodes YAML through JSON,
  where both are strings, and rules compare or print them as text.
* Unknown tags (`!foo`) are ignored and the node is built by its kind, as
  Kubernetes' YAML decoder does; a standard tag whose text does not fit
  (`!!int abc`) is reported and the text is kept.
* Non-string scalar keys become strings as sigs.k8s.io/yaml writes them (`1` → `"1"`,
  `true` → `"true"`, a float as Go's 32-bit shortest `%g`: `1e6` → `"1e+06"`); a null or
  uint64 key is refused, as there, so a `FieldPath` is always made of `str` keys and `int`
  indexes.
* `!!set` becomes a mapping to nulls (what Kubernetes' YAML-to-JSON step makes of it),
  not a Python `set`.
* Duplicate keys are reported (`duplicate field "spec.a"`, strict field validation's words) and
  the last value wins, as in kubectl's conversion; merge keys (`<<`) are
  honoured, explicit keys overriding merged ones, earlier merges overriding later.
* Alias expansion is budgeted with the ratio rule of Kubernetes' YAML decoder
  (go-yaml's `allowedAliasRatio`): a document may draw 99% of its nodes from
  aliases while small, falling to 10% between 400,000 and 4,000,000 nodes. A
  billion-laughs document is refused after a few thousand nodes instead of
  expanding exponentially; a recursive alias is refused outright.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..policies.core.source import FieldPath, Position, render_path

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"

_GO_WORDS: dict[str, object] = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"),
                    False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
"""go-yaml v2's resolve map: the only spellings of its booleans, nulls and special floats."""
_GO_MAP_HINTS = frozenset("+-0123456789yYnNtTfFoO~.")
"""First characters for which go-yaml looks a plain scalar up in `_GO_WORDS` at all."""
_GO_NUMBER_HINTS = frozenset("+-0123456789")
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
"""go-yaml's `yamlStyleFloat`: what it hands to `strconv.ParseFloat` after the integer tries."""
_GO_DOT_FLOAT = re.compile(r"\.[0-9_]*[0-9][0-9_]*(?:[eE][-+]?[0-9][0-9_]*)?\Z")
"""What `strconv.ParseFloat` takes of a text that starts with a dot: decimal digits, an
exponent, and underscores where `_go_underscores_ok` allows them (Go's float literal syntax)."""
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
_TAG_NAMES = {_STR: "str", _INT: "int", _FLOAT: "float", _BOOL: "bool", _NULL: "null"}


def _go_parse_uint(text: str, base: int = 0) -> int | None:
    """`strconv.ParseUint(text, base, 64)`: with base 0, Go's prefixes (`0x`, `0o`, `0b`, a bare
    leading `0` for octal); no sign, no underscore; None where Go returns an error."""
    if not text:
        return None
    digits = text
    if base == 0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, digits = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, digits = 8, text[1:]
    value = 0
    for char in digits:
        digit = _DIGITS.find(char.lower()) if char.isascii() else -1
        if digit < 0 or digit >= base:
            return None
        value = value * base + digit
    return value if value <= _UINT64_MAX else None


def _go_int(plain: str, base: int = 0) -> int | None:
    """`strconv.ParseInt(plain, base, 64)`, then `ParseUint(plain, base, 64)`, as go-yaml
    tries them."""
    sign = plain[:1]
    if sign in ("+", "-"):
        magnitude = _go_parse_uint(plain[1:], base)
        if magnitude is None:
            return None
        value = -magnitude if sign == "-" else magnitude
        return value if _INT64_MIN <= value <= _INT64_MAX else None
    return _go_parse_uint(plain, base)


def _go_underscores_ok(text: str) -> bool:
    """strconv's `underscoreOK` for a decimal text: each `_` between two digits."""
    previous = "^"
    for char in text:
        if char.isdigit():
            previous = "0"
        elif char == "_":
            if previous != "0":
                return False
            previous = "_"
        elif previous == "_":
            return False
        else:
            previous = "!"
    return previous != "_"


def _go_float(text: str) -> float | None:
    """`strconv.ParseFloat(text, 64)` of a decimal text: None where Go reports ErrRange."""
    value = float(text)
    return None if math.isinf(value) else value


def go_plain(text: str) -> tuple[str, object]:
    """(tag, value) of a plain scalar as go-yaml v2 resolves it into an `interface{}`.

    Why this and not PyYAML's resolver: kubectl converts YAML to JSON with sigs.k8s.io/yaml,
    whose `YAMLToJSON` unmarshals with its go-yaml v2 fork; the API server only ever sees that
    JSON. A timestamp (`2001-12-14`) is a string there (v2 keeps the text for an interface).
    Values are Python's: an int holds int64 or uint64, a float may be `inf`/`nan` here.
    """
    first = text[:1]
    if text and first not in _GO_MAP_HINTS:
        return _STR, text
    if text in _GO_WORDS:
        value = _GO_WORDS[text]
        tag = _NULL if value is None else _BOOL if isinstance(value, bool) else _FLOAT
        return tag, value
    if first == ".":
        if _GO_DOT_FLOAT.match(text) and _go_underscores_ok(text):
            number = _go_float(text.replace("_", ""))
            if number is not None:
                return _FLOAT, number
        return _STR, text
    if first in _GO_NUMBER_HINTS:
        plain = text.replace("_", "")
        integer = _go_int(plain)
        if integer is not None:
            return _INT, integer
        if _GO_FLOAT.match(plain):
            number = _go_float(plain)
            if number is not None:
                return _FLOAT, number
        if plain.startswith("0b"):  # `-0b…` was read above; `0b-101` is -5 here
            integer = _go_int(plain[2:], 2)
            if integer is not None:
                return _INT, integer
    return _STR, text


def go_tag(text: str) -> str:
    """The tag go-yaml v2 gives a plain scalar; `<<` is the merge key, as go-yaml's decoder
    treats a plain `<<` key."""
    if text == "<<":
        return _MERGE
    return go_plain(text)[0]


def sent_number(value: int | float) -> int | float:
    """A number as the API server decodes the JSON kubectl sends for it.

    Go's encoding/json writes a finite float64 with `%f` below 1e21 (and `%e` above) in its
    shortest round-trip digits, so an integral float (`1e5`, `1.0`, `-0.0`) is sent as integer
    digits — `5.289450292337226e+16` as 52894502923372260, not the float's exact value — and the
    decoder makes an int64 of digits that fit. An int (int64 or uint64) is sent as its digits;
    the caller keeps a uint64 above int64 exact, so a field that must be an int64 reports the
    overflow.
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        digits = int(Decimal(repr(value)))  # repr: Python's shortest round-trip, as Go's
        if _INT64_MIN <= digits <= _INT64_MAX:
            return digits
    return value


def go_float_key(value: float) -> str:
    """A float map key as sigs.k8s.io/yaml writes it: `strconv.FormatFloat(v, 'g', -1, 32)`
    (the shortest text that reads back as the same float32), with `.inf`, `-.inf`, `.nan`."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.inf if value > 0 else -math.inf
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1.0, single) < 0 else "0"
    for precision in range(1, 10):
        text = f"{single:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent_text = text.split("e")
    exponent = int(exponent_text)
    digits = mantissa.replace(".", "").lstrip("-")
    negative = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:
        head = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{negative}{head}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    point = exponent + 1
    if point <= 0:
        return f"{negative}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return negative + digits + "0" * (point - len(digits))
    return f"{negative}{digits[:point]}.{digits[point:]}"

_M32 = (1 << 32) - 1
_M64 = (1 << 64) - 1

ALIAS_RATIO_LOW = 400_000
ALIAS_RATIO_HIGH = 4_000_000
"""Node counts between which the allowed alias share falls from 99% to 10% (go-yaml)."""


def allowed_alias_ratio(decoded: int) -> float:
    """The share of a document's nodes that may come from alias expansion."""
    if decoded <= ALIAS_RATIO_LOW:
        return 0.99
    if decoded >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


class PackedPositions(Mapping[FieldPath, Position]):
    """A read-only view of packed marks: the value positions, or the key positions.

    Both views share one dict; a path with no key (list items, the root) is absent
    from the key view.
    """

    __slots__ = ("_marks", "_shift")

    def __init__(self, marks: Mapping[FieldPath, int], *, keys: bool) -> None:
        self._marks = marks
        self._shift = 64 if keys else 0

    def _unpack(self, packed: int) -> Position | None:
        half = (packed >> self._shift) & _M64
        if not half:
            return None
        return Position(half >> 32, (half & _M32) + 1)

    def __getitem__(self, path: FieldPath) -> Position:
        position = self._unpack(self._marks[path])
        if position is None:
            raise KeyError(path)
        return position

    def get(self, path: FieldPath, default: Position | None = None) -> Position | None:  # type: ignore[override]
        packed = self._marks.get(path)
        if packed is None:
            return default
        position = self._unpack(packed)
        return default if position is None else position

    def __contains__(self, path: object) -> bool:
        packed = self._marks.get(path)  # type: ignore[call-overload]
        return packed is not None and bool((packed >> self._shift) & _M64)

    def __iter__(self) -> Iterator[FieldPath]:
        shift = self._shift
        return (path for path, packed in self._marks.items() if (packed >> shift) & _M64)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True, slots=True)
class Issue:
    """Something wrong inside a document that still produced a value (or aborted it)."""

    message: str
    path: FieldPath
    position: Position


@dataclass(slots=True)
class Built:
    """One object built from a node: its value (None if aborted), positions, issues."""

    value: object
    marks: dict[FieldPath, int]
    issues: list[Issue] = field(default_factory=list)
    aborted: bool = False

    @property
    def positions(self) -> PackedPositions:
        return PackedPositions(self.marks, keys=False)

    @property
    def key_positions(self) -> PackedPositions:
        return PackedPositions(self.marks, keys=True)


class _Abort(Exception):
    """Unwinds a walk that must stop (alias bomb, recursive alias); never escapes `build`."""

    def __init__(self, issue: Issue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _kind_name(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return "a scalar"


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z")


def _json_number(text: str) -> object:
    """A plain scalar of a JSON text that go-yaml left a string (`1E400`): as a JSON number if
    it is one (the decoder's int, or a float as sent), else the text."""
    try:
        if any(c in text for c in ".eE"):
            number = float(text)
            return sent_number(number) if math.isfinite(number) else text
        return int(text)
    except ValueError:
        return text


class NodeBuilder:
    """Builds the objects of one YAML document, sharing its alias budget between them.

    `line_base` is added to every 0-based mark line: 1 for a whole file, more when
    parsing resumed after a syntax error in an earlier document.
    `json_numbers` resolves plain scalars as JSON does (for input that is JSON). A plain
    scalar's style is `None` from PyYAML's Python parser but `""` from its C parser.
    """

    def __init__(self, *, line_base: int = 1, json_numbers: bool = False) -> None:
        self._base = line_base
        self._json = json_numbers
        self._marks: dict[FieldPath, int] = {}
        self._issues: list[Issue] = []
        self._seen: set[int] = set()
        self._expanding: set[int] = set()
        self._alias_depth = 0
        self._decoded = 0
        self._aliased = 0
        self.exhausted = False
        """Set once the alias budget is spent: later objects of the document are refused too."""

    def position(self, node: Node) -> Position:
        mark = node.start_mark
        return Position(mark.line + self._base, mark.column + 1)

    def build(self, node: MappingNode) -> Built:
        """Build a mapping node as a root object (its paths start at `()`)."""
        marks: dict[FieldPath, int] = {}
        issues: list[Issue] = []
        self._marks, self._issues = marks, issues
        mark = node.start_mark
        marks[()] = (mark.line + self._base) << 32 | mark.column
        self._decoded += 1
        try:
            if self.exhausted:
                raise _Abort(self._excessive(node))
            value = self._collection(node, ())
            self._check_budget(node)
        except _Abort as stop:
            issues.append(stop.issue)
            return Built(None, marks, issues, aborted=True)
        except RecursionError:
            issues.append(Issue("document is nested too deeply to load", (), self.position(node)))
            return Built(None, marks, issues, aborted=True)
        return Built(value, marks, issues)

    # -- budget ---------------------------------------------------------------------------

    def _excessive(self, node: Node) -> Issue:
        self.exhausted = True
        return Issue(
            f"document contains excessive aliasing: {self._aliased} of {self._decoded} nodes "
            'come from YAML aliases (a "billion laughs" document?); Kubernetes refuses it too',
            (),
            self.position(node),
        )

    def _check_budget(self, node: Node) -> None:
        aliased, decoded = self._aliased, self._decoded
        if aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded):
            raise _Abort(self._excessive(node))

    # -- walking --------------------------------------------------------------------------

    def _collection(self, node: Node, path: FieldPath) -> object:
        ident = id(node)
        items = node.value
        count = 2 * len(items) if node.__class__ is MappingNode else len(items)
        self._decoded += count
        if ident not in self._seen:
            self._seen.add(ident)
            if self._alias_depth:
                self._aliased += count
            return (
                self._mapping(node, path)
                if node.__class__ is MappingNode
                else self._sequence(node, path)
            )
        # Seen before in this document: this is an alias being expanded.
        if ident in self._expanding:
            raise _Abort(
                Issue("recursive YAML alias: a node contains itself", path, self.position(node))
            )
        self._aliased += count
        self._check_budget(node)
        self._expanding.add(ident)
        self._alias_depth += 1
        try:
            if node.__class__ is MappingNode:
                return self._mapping(node, path)
            return self._sequence(node, path)
        finally:
            self._expanding.discard(ident)
            self._alias_depth -= 1

    def _mapping(self, node: Node, path: FieldPath) -> dict[str, object]:
        out: dict[str, object] = {}
        marks = self._marks
        base = self._base
        json_numbers = self._json
        merges: list[Node] | None = None
        key: str | None
        for knode, vnode in node.value:
            if knode.__class__ is ScalarNode and knode.tag == _STR:
                key = knode.value
            elif knode.__class__ is ScalarNode and knode.tag == _MERGE:
                merges = [*merges, vnode] if merges else [vnode]
                continue
            else:
                key = self._key(knode, path)
                if key is None:
                    continue
            child = path + (key,)  # noqa: RUF005 -- concatenation is cheaper than unpacking here
            kmark = knode.start_mark
            if key in out:
                self._duplicate(key, child, knode)
            vmark = vnode.start_mark
            marks[child] = (
                ((kmark.line + base) << 32 | kmark.column) << 64
                | (vmark.line + base) << 32
                | vmark.column
            )
            if vnode.__class__ is ScalarNode:
                if vnode.tag == _STR and (vnode.style or not json_numbers):
                    out[key] = vnode.value
                else:
                    out[key] = self._scalar(vnode, child)
            else:
                out[key] = self._collection(vnode, child)
        if merges:
            self._merge(out, merges, path)
        return out

    def _sequence(self, node: Node, path: FieldPath) -> list[object]:
        out: list[object] = []
        append = out.append
        marks = self._marks
        base = self._base
        json_numbers = self._json
        for index, item in enumerate(node.value):
            child = path + (index,)  # noqa: RUF005 -- hot path, see _mapping
            mark = item.start_mark
            marks[child] = (mark.line + base) << 32 | mark.column
            if item.__class__ is ScalarNode:
                if item.tag == _STR and (item.style or not json_numbers):
                    append(item.value)
                else:
                    append(self._scalar(item, child))
            else:
                append(self._collection(item, child))
        return out

    def _merge(self, out: dict[str, object], merges: list[Node], path: FieldPath) -> None:
        """Apply `<<` keys: explicit keys win, then earlier merge sources over later ones.

        Merged values are built against a scratch position table so that a merged
        key never overwrites the position of an explicit one.
        """
        sources: list[Node] = []
        for merge in merges:
            if merge.__class__ is SequenceNode:
                sources.extend(merge.value)
            else:
                sources.append(merge)
        saved = self._marks
        scratch: dict[FieldPath, int] = {}
        merged: dict[str, object] = {}
        self._marks = scratch
        try:
            for source in reversed(sources):
                if source.__class__ is not MappingNode:
                    self._issues.append(
                        Issue(
                            f"merge key (<<) needs a mapping or a list of mappings, "
                            f"found {_kind_name(source)}",
                            path,
                            self.position(source),
                        )
                    )
                    continue
                built = self._collection(source, path)
                if isinstance(built, dict):
                    merged.update(built)
        finally:
            self._marks = saved
        depth = len(path)
        for child, packed in scratch.items():
            if child[depth] not in out:
                saved[child] = packed
        for key, value in merged.items():
            out.setdefault(key, value)

    def _duplicate(self, key: str, child: FieldPath, knode: Node) -> None:
        first = (self._marks[child] >> 96) & _M32
        where = f" (first at line {first})" if first else ""
        self._issues.append(
            Issue(
                f'duplicate field "{render_path(child)}"{where}: the API server\'s strict field '
                "validation refuses it in a body sent as written (kubectl's own conversion keeps "
                "the last value silently)",
                child,
                self.position(knode),
            )
        )

    def _key(self, knode: Node, path: FieldPath) -> str | None:
        if knode.__class__ is not ScalarNode:
            self._issues.append(
                Issue(
                    f"a mapping key must be a string, found {_kind_name(knode)}",
                    path,
                    self.position(knode),
                )
            )
            return None
        value = self._typed(knode, path)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return go_float_key(value)
        if isinstance(value, int) and value <= _INT64_MAX:
            return str(value)
        what = "<nil>" if value is None else "uint64"
        self._issues.append(Issue(
            f"unsupported map key of type {what} ({knode.value!r}): kubectl cannot convert "
            "this document to JSON", path, self.position(knode)))
        return None

    def _scalar(self, node: ScalarNode, path: FieldPath) -> object:
        """A scalar value as the API server receives it (module docstring)."""
        value = self._typed(node, path)
        if isinstance(value, float):
            if math.isfinite(value):
                return sent_number(value)
            self._issues.append(Issue(
                f'"{node.value}" cannot be sent as JSON (json: unsupported value: '
                f"{_go_special(value)}): kubectl refuses the document", path, self.position(node)))
            return node.value
        return value

    def _typed(self, node: ScalarNode, path: FieldPath) -> object:
        """A scalar as go-yaml v2 decodes it into an `interface{}` (floats not yet sent)."""
        tag = node.tag
        text: str = node.value
        if tag == _STR:
            if not self._json or node.style:
                return text
            value = _json_number(text)
            if value is text and _JSON_NUMBER.match(text):
                self._issues.append(Issue(
                    f"json: cannot unmarshal number {text} into Go value of type float64: "
                    "kubectl refuses the document", path, self.position(node)))
            return value
        if tag not in _TAG_NAMES:
            return text  # an unknown tag, `!!timestamp`, `!!binary`: the text
        resolved, value = go_plain(text)
        if self._json and not node.style and resolved == _STR:
            resolved, value = _STR, _json_number(text)
            if not isinstance(value, str):
                resolved = _INT if isinstance(value, int) else _FLOAT
        if resolved == tag:
            return value
        if tag == _FLOAT and resolved == _INT:
            return float(value)  # type: ignore[arg-type]
        self._issues.append(Issue(
            f"cannot decode !!{_TAG_NAMES[resolved]} `{text}` as a !!{_TAG_NAMES[tag]}",
            path, self.position(node)))
        return text


def _go_special(value: object) -> str:
    """How Go prints a non-finite float in encoding/json's error."""
    if value != value:  # NaN
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"  # type: ignore[operator]


_NO_MARK = Mark("", 0, 0, 0, None, None)  # type: ignore[arg-type]
"""Where a scalar built outside any text (`plain_scalar`) is said to start."""


def plain_scalar(text: str, tag: str) -> tuple[object, bool]:
    """What a plain scalar with this text and resolved tag builds to (as a value), and
    whether it built cleanly; for `yaml_fast`, which must give exactly what this module
    gives without composing nodes."""
    builder = NodeBuilder()
    value = builder._scalar(ScalarNode(tag, text, _NO_MARK, _NO_MARK, style=""), ())
    return value, not builder._issues


def plain_key(text: str, tag: str) -> tuple[str | None, bool]:
    """What a plain scalar with this text and resolved tag builds to as a mapping key."""
    builder = NodeBuilder()
    key = builder._key(ScalarNode(tag, text, _NO_MARK, _NO_MARK, style=""), ())
    return key, not builder._issues
