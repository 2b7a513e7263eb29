"""Plain Python values from composed YAML nodes, with a line:column per field path.

`yaml.compose_all(..., Loader=CSafeLoader)` parses in C and hands us a node tree
whose nodes carry marks; this module walks one document's tree once, building the
same plain values `yaml.safe_load` would (dict, list, str, int, float, bool, None)
and recording, for every field path, where its value and its key start.

Choices, and why:

* Positions are packed into one `int` per path (key line/column in the high 64
  bits, value line/column in the low 64) and exposed through two read-only
  `Mapping` views. A `Position` object or a tuple per node would cost an
  allocation (and a GC-tracked one, for `Position`) on the hottest path.
* Timestamps and `!!binary` stay strings: Kubernetes decodes YAML through JSON,
  where both are strings, and rules compare or print them as text.
* Unknown tags (`!foo`) are ignored and the node is built by its kind, as
  Kubernetes' YAML decoder does; a standard tag whose text does not fit
  (`!!int abc`) is reported and the text is kept.
* Non-string scalar keys become strings (`1` → `"1"`, `true` → `"true"`), again as
  Kubernetes' YAML-to-JSON conversion does, so a `FieldPath` is always made of
  `str` keys and `int` indexes.
* `!!set` becomes a mapping to nulls (what Kubernetes' YAML-to-JSON step makes of it),
  not a Python `set`.
* Duplicate keys are reported and the last value wins; merge keys (`<<`) are
  honoured, explicit keys overriding merged ones, earlier merges overriding later.
* Alias expansion is budgeted with the ratio rule of Kubernetes' YAML decoder
  (go-yaml's `allowedAliasRatio`): a document may draw 99% of its nodes from
  aliases while small, falling to 10% between 400,000 and 4,000,000 nodes. A
  billion-laughs document is refused after a few thousand nodes instead of
  expanding exponentially; a recursive alias is refused outright.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import yaml
from dra_affinity.policies.core.source import FieldPath, Position
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"

_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
"""YAML 1.1 booleans, as `safe_load` (and Kubernetes' go-yaml v2) resolve them."""

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


def _json_number(text: str) -> object:
    """A plain JSON scalar the YAML 1.1 resolver left as a string (`1e5`, `-1E-3`)."""
    try:
        if any(c in text for c in ".eE"):
            return float(text)
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
        self._constructor = SafeConstructor()
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
            child = path + (key,)  # noqa: RUF005 -- 2.5x faster than (*path, key) here
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
                f'duplicate key "{key}"{where}: the last value is used, but Kubernetes '
                "rejects duplicate fields in strict mode",
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
        value = self._scalar(knode, path)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            return "null"
        return str(value)

    def _scalar(self, node: ScalarNode, path: FieldPath) -> object:
        tag = node.tag
        text: str = node.value
        if tag == _STR:
            return _json_number(text) if self._json and not node.style else text
        if tag == _INT:
            if text.isascii() and text.isdigit() and (text[0] != "0" or len(text) == 1):
                return int(text)
            return self._construct(node, path, self._constructor.construct_yaml_int)
        if tag == _FLOAT:
            if ":" not in text:
                try:
                    return float(text)
                except ValueError:
                    pass
            return self._construct(node, path, self._constructor.construct_yaml_float)
        if tag == _BOOL:
            flag = _BOOLS.get(text.lower())
            if flag is None:
                self._issues.append(
                    Issue(f'cannot read "{text}" as !!bool', path, self.position(node))
                )
                return text
            return flag
        if tag == _NULL:
            return None
        return text

    def _construct(
        self, node: ScalarNode, path: FieldPath, construct: Callable[[ScalarNode], object]
    ) -> object:
        """The YAML 1.1 forms `safe_load` accepts (`0x1F`, `0o17`, `1_000`, `1:30`, `.inf`)."""
        try:
            return construct(node)
        except (ValueError, yaml.YAMLError):
            short = node.tag.rsplit(":", 1)[-1]
            self._issues.append(
                Issue(f'cannot read "{node.value}" as !!{short}', path, self.position(node))
            )
            return node.value


def plain_scalar(text: str, tag: str) -> tuple[object, bool]:
    """What a plain scalar with this text and resolved tag builds to (as a value), and
    whether it built cleanly; for `yaml_fast`, which must give exactly what this module
    gives without composing nodes."""
    builder = NodeBuilder()
    value = builder._scalar(ScalarNode(tag, text, style=""), ())
    return value, not builder._issues


def plain_key(text: str, tag: str) -> tuple[str | None, bool]:
    """What a plain scalar with this text and resolved tag builds to as a mapping key."""
    builder = NodeBuilder()
    key = builder._key(ScalarNode(tag, text, style=""), ())
    return key, not builder._issues
