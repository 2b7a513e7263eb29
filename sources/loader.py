"""The CLI's input: files, directories and stdin turned into documents with positions.

Two kinds of failure, kept apart because they mean different exit codes:

* a path named on the command line that cannot be used (missing, unreadable) is a
  *usage error* (`LoadResult.usage_errors`, the CLI exits 2);
* anything wrong inside the input — bad bytes, bad YAML/JSON, a document that is not
  an object, duplicate keys, alias bombs, an unreadable file met while walking a
  directory — is an `SA000` finding with file, line and column, and loading goes
  on with the next document or file.

Nothing raises: every exception from reading or parsing becomes one of the two.

Directories are walked as `kubectl apply -R -f` does: recursively, `*.yaml`, `*.yml`
and `*.json` only, in name order; symlinks are followed, a symlink loop is reported
once and skipped, and a file reached twice (through two links) is loaded once.
Hidden entries, what git ignores and `--exclude` patterns are left out (`walk.WalkFilter`).
`kind: List` and typed lists (`ResourceSliceList`, what `kubectl get -o yaml` and the
API print) are unpacked into their items, each with positions relative to itself.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..policies.core import layers
from ..policies.core.findings import Finding, Location, ObjectRef
from ..policies.core.gc_pause import gc_paused
from ..policies.core.problems import INPUT_ERROR
from ..policies.core.source import FieldPath, Position, Source
from ..policies.model.schema import SCHEMAS
from .walk import SkipReason, WalkFilter
from .yaml_positions import Built, Issue, NodeBuilder, go_tag, sent_number

STDIN_NAME = "<stdin>"
EXTENSIONS = (".yaml", ".yml", ".json")
"""What a directory walk picks up (kubectl's list); a file named explicitly is read as it is."""

_BASE_PARSER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)
"""libyaml's parser (C, much faster); PyYAML's own if it was built without libyaml."""
_STR_TAG = "tag:yaml.org,2002:str"


class _TagMemoParser(_BASE_PARSER):  # type: ignore[misc,valid-type]
    """The safe loader with plain scalars tagged as go-yaml v2 tags them, once per distinct text.

    Why: kubectl's YAML-to-JSON step (sigs.k8s.io/yaml) resolves with go-yaml v2, not YAML 1.1
    (`yaml_positions.go_plain`); and the answer depends only on the scalar's text, so it is
    memoised per parser (dropped with it): keys and repeated values cost one dict lookup, where
    the C parser would call PyYAML's regex resolver for every node. Quoted scalars are strings,
    collections get the default tags, as the resolver would say.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._tags: dict[str, str] = {}

    def resolve(self, kind: type[Node], value: str | None, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if not implicit[0]:
                return _STR_TAG
            tag = self._tags.get(value)  # type: ignore[arg-type]
            if tag is None:
                tag = self._tags[value] = go_tag(value)  # type: ignore[index,arg-type]
            return tag
        return super().resolve(kind, value, implicit)

    def descend_resolver(self, current_node: object, current_index: object) -> None:
        """No path resolvers are registered on the safe loader: nothing to track."""

    def ascend_resolver(self) -> None:
        """See `descend_resolver`."""
_NULL_TAG = "tag:yaml.org,2002:null"
_FILE_START = Position(1, 1)
_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.MULTILINE)
_JSON_SPACE = re.compile(r"[ \t\r\n]*")


@dataclass(frozen=True, slots=True)
class LoadedDocument:
    """One object to lint: a top-level document, or one item of a List document.

    `item` is the index in the List's `items` (None for a top-level document); the
    item's `source` has paths relative to the item itself. Items of a typed list
    (`ResourceSliceList`) that omit `apiVersion`/`kind`, as API list responses do,
    get them from the list, in `data` as well as here.
    """

    data: dict[str, Any]
    source: Source
    kind: str | None
    api_version: str | None
    item: int | None = None


@dataclass(slots=True)
class LoadResult:
    """Everything the loader produced; `files` counts the files (and stdin) actually read.

    `texts` keeps each file's text by the name its findings carry (`<stdin>` included), so
    what needs the text after loading — suppression comments, positions inside an expression —
    reads it from here: every file is read once, and stdin (which can only be read once) works
    like any file. A file that is not text is kept decoded with U+FFFD for its bad bytes, so a
    suppression comment in it is still seen.
    """

    documents: list[LoadedDocument] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    usage_errors: list[str] = field(default_factory=list)
    files: int = 0
    texts: dict[str, str] = field(default_factory=dict)
    not_walked: dict[SkipReason, int] = field(default_factory=dict)
    """What directory walks left out, by reason (hidden, git-ignored, excluded)."""
    yielded: dict[str, int] = field(default_factory=dict)
    """Per command-line argument (`-` for stdin): the objects of a modelled kind and the input
    findings it gave; 0 is an input that reads as nothing (`inputs.warn_empty`)."""


def load_paths(paths: Sequence[str], *, stdin: TextIO | None = None,
               json_positions: bool = True, walk: WalkFilter | None = None,
               lazy_positions: bool = False) -> LoadResult:
    """Load every path in order: files, directories (recursively) and `-` for stdin.

    `json_positions=False`: JSON documents get one position each instead of one per node —
    a positional decode of a large cluster dump costs far more than `json.loads`; callers
    load again with positions when they have a finding to place. `walk` decides what a
    directory walk leaves out and counts it (a default one if None).
    `lazy_positions`: a YAML document keeps only where it starts; the rest of its positions
    (a large share of a claim's memory) are composed again, once per file, the first time one is asked
    for — for commands that hold every document and place few findings (simulate, dry-run).
    """
    loader = _Loader(stdin if stdin is not None else sys.stdin, json_positions=json_positions,
                     walk=walk, lazy_positions=lazy_positions)
    for path in paths:
        result = loader.result
        before = loader.modelled + len(result.findings) + len(result.usage_errors)
        loader.load_argument(path)
        gave = loader.modelled + len(result.findings) + len(result.usage_errors) - before
        if path in loader.repeated:
            gave += 1
        loader.result.yielded[path] = loader.result.yielded.get(path, 0) + gave
    loader.result.not_walked = dict(loader._filter.skipped)
    return loader.result


@dataclass(frozen=True, slots=True)
class FileTask:
    """One file to read later (`plan_paths`), possibly in another process.

    `path` is a file to open (`explicit`: named on the command line, so an unreadable one is
    a usage error); or `content` is what was already read from stdin under `name`. `before`
    holds what the walk reported since the previous task (usage errors, SA000 findings), so a
    run that reads its tasks in order reports everything in the order `load_paths` does.
    """

    name: str
    path: str | None = None
    explicit: bool = False
    content: bytes | str | None = None
    before: LoadResult | None = None
    argument: str = ""
    """The command-line argument this file came from (`-` for stdin)."""


@dataclass(slots=True)
class Plan:
    """What `plan_paths` found: the tasks in input order, then what came after the last one."""

    tasks: list[FileTask]
    after: LoadResult
    not_walked: dict[SkipReason, int]
    arguments: tuple[str, ...] = ()
    """Every argument walked, in order (one may have given no task: an empty directory)."""
    repeated: frozenset[str] = frozenset()
    """Arguments that named a file an earlier one had read already."""


def plan_paths(paths: Sequence[str], *, stdin: TextIO | None = None,
               walk: WalkFilter | None = None) -> Plan:
    """Walk every path as `load_paths` does, but read no file: list them as `FileTask`s.

    Why: `lint --jobs N` reads and checks files in worker processes, and only one file's
    documents should be alive at a time. Stdin (which only this process can read) is read
    here. `load_task` on every task, in order, gives what `load_paths` gives.
    """
    loader = _Loader(stdin if stdin is not None else sys.stdin, walk=walk)
    loader.plan = []
    for path in paths:
        loader.load_argument(path)
    return Plan(loader.plan, loader.result, dict(loader._filter.skipped), tuple(paths),
                frozenset(loader.repeated))


def load_task(task: FileTask, sink: Callable[[LoadedDocument, str], None] | None = None) -> LoadResult:
    """Read and load one planned file (the walk's reports before it not included); with a
    `sink`, each document is handed to it as soon as it is built instead of being kept."""
    loader = _Loader(None)
    loader.sink = sink
    if task.path is not None:
        loader._load_file(task.path, explicit=task.explicit)
    elif task.content is not None:
        loader.load_data(task.name, task.content)
    return loader.result


def load_text(text: str, *, name: str = STDIN_NAME) -> LoadResult:
    """Load one in-memory YAML/JSON stream (tests, other doors) as if read from `name`."""
    loader = _Loader(None)
    loader.result.files = 1
    loader.load_text(name, text)
    return loader.result




def _display(path: str) -> str:
    """A path fit for printing: undecodable bytes in a file name become U+FFFD."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _object_ref(data: dict[str, Any], kind: str | None) -> ObjectRef | None:
    if kind is None:
        return None
    metadata = data.get("metadata")
    name = namespace = None
    if isinstance(metadata, dict):
        name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
        ns = metadata.get("namespace")
        namespace = ns if isinstance(ns, str) else None
    return ObjectRef(kind=kind, name=name, namespace=namespace)


def _scalar_text(node: Node | None) -> str | None:
    if isinstance(node, ScalarNode) and node.tag != _NULL_TAG:
        return str(node.value)
    return None


def _top_level(node: MappingNode, *names: str) -> dict[str, Node]:
    """The value nodes of some plain top-level keys (last one wins, as in the built value)."""
    found: dict[str, Node] = {}
    for knode, vnode in node.value:
        if isinstance(knode, ScalarNode) and knode.value in names:
            found[knode.value] = vnode
    return found


def _utf8_error(raw: bytes, error: UnicodeDecodeError) -> tuple[Position, str]:
    line_start = raw.rfind(b"\n", 0, error.start) + 1
    line = raw.count(b"\n", 0, error.start) + 1
    column = len(raw[line_start : error.start].decode("utf-8", "replace")) + 1
    byte = raw[error.start]
    return Position(line, column), f"file is not UTF-8 text: invalid byte 0x{byte:02X}"


def _decode(raw: bytes) -> tuple[str | None, Position, str]:
    """Text of a file, or None with the position and reason it is not text."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if raw.startswith(bom):
            try:
                text = raw.decode(codec)
            except UnicodeDecodeError:
                return (
                    None,
                    _FILE_START,
                    f"file starts with a {codec.upper()} mark but is not {codec.upper()}",
                )
            if "\0" in text:
                return None, _FILE_START, "binary file (contains NUL characters)"
            return text, _FILE_START, ""
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    nul = raw.find(b"\0")
    if nul >= 0:
        return None, _FILE_START, f"binary file (NUL byte at offset {nul}), not YAML or JSON"
    try:
        return raw.decode("utf-8"), _FILE_START, ""
    except UnicodeDecodeError as error:
        position, message = _utf8_error(raw, error)
        return None, position, message


def _looks_like_json(text: str) -> bool:
    start = _JSON_SPACE.match(text)
    head = text[start.end() : start.end() + 1] if start else text[:1]
    return head in ("{", "[")


@dataclass(slots=True)
class _JsonStream:
    """The values of a JSON text (a stream of values, as kubectl accepts), or its error."""

    values: list[tuple[object, Position]]
    error: Position | None = None
    message: str = ""
    yaml_differs: bool = False
    """Some object repeats a key (the decoder keeps the last value silently), or a value is
    `NaN`/`Infinity` (Python's decoder takes them; to YAML they are strings)."""

    def plain(self, text: str) -> bool:
        """Whether the decoder's values are exactly what the YAML path would build, with no
        finding to place: every document an object (or null), every List item too, no repeated
        key, and no character YAML reads differently from JSON (NEL, LS, PS are line breaks to
        YAML, folded inside a string)."""
        if self.yaml_differs or any(c in text for c in _YAML_BREAKS):
            return False
        for value, _ in self.values:
            if value is None:
                continue
            if not isinstance(value, dict):
                return False
            kind, items = value.get("kind"), value.get("items")
            if isinstance(kind, str) and _is_list_kind(kind):
                if isinstance(items, list):
                    if not all(item is None or (isinstance(item, dict)
                                                and not _is_list_kind(_text_field(item, "kind")))
                               for item in items):
                        return False  # a finding to place at its item
                elif kind == "List" and items is not None:
                    return False
        return True


_YAML_BREAKS = ("\x85", "\u2028", "\u2029")

YAML_FAST = layers.declare(
    "yaml-fast",
    "libyaml composes a large `kubectl -o yaml` dump node by node, slower and larger than the "
    "commands that read a whole cluster may take; rapidyaml parses it in C++ into the same values "
    "(`lint/yaml_fast.py`), or refuses and libyaml composes it")

FAST_YAML_CHARS = 512 * 1024
"""From this size on, the commands that keep every document (`lazy_positions`) try `yaml_fast`
first (the `yaml-fast` layer): under it libyaml's composition costs little, and a small file's
behaviour stays libyaml's by construction."""


class _FilePositions:
    """The positions of one file's documents, composed by the YAML parser on first use.

    Why: decoding JSON with the `json` module is much faster than composing it as YAML, and
    keeping every YAML document's positions is a large share of its memory, while most
    documents never need a position beyond their start (no finding in them). The file is composed once, the
    first time any of its documents is asked for one; if the YAML parser cannot follow JSON
    (surrogate-pair escapes), each document keeps only its start.
    """

    __slots__ = ("_json", "_name", "_table", "_text")

    def __init__(self, name: str, text: str, *, json_numbers: bool) -> None:
        self._name = name
        self._text: str | None = text
        self._json = json_numbers
        self._table: dict[tuple[int, int | None], Source] = {}

    def source(self, document: int, item: int | None) -> Source | None:
        if self._text is not None:
            loader = _Loader(None)
            with gc_paused():
                parsed = loader._load_yaml(self._name, self._text, json_numbers=self._json,
                                           strict=self._json)
            self._text = None
            if parsed >= 0:
                self._table = {(d.source.document, d.item): d.source for d in loader.result.documents}
        return self._table.get((document, item))


class _ComposedOnUse(Mapping[FieldPath, Position]):
    """A document's value or key positions, resolved through its file's `_FilePositions`.

    The root position (where the object starts) is known without composing when `known`
    (a top-level JSON document, any YAML object); anything else composes the file once.
    """

    __slots__ = ("_document", "_file", "_item", "_keys", "_known", "_root", "_table")

    def __init__(self, file: _FilePositions, document: int, item: int | None, root: Position,
                 *, keys: bool, known: bool | None = None) -> None:
        self._file = file
        self._document = document
        self._item = item
        self._root = root
        self._keys = keys
        self._known = item is None if known is None else known
        self._table: Mapping[FieldPath, Position] | None = None

    def _resolved(self) -> Mapping[FieldPath, Position]:
        if self._table is None:
            source = self._file.source(self._document, self._item)
            if source is None:
                self._table = {} if self._keys else {(): self._root}
            else:
                self._table = source.key_positions if self._keys else source.positions
        return self._table

    def get(self, path: FieldPath, default: Position | None = None) -> Position | None:  # type: ignore[override]
        if not path and self._known and self._table is None:
            return default if self._keys else self._root
        return self._resolved().get(path, default)

    def __getitem__(self, path: FieldPath) -> Position:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def __contains__(self, path: object) -> bool:
        return self.get(path) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[FieldPath]:
        return iter(self._resolved())

    def __len__(self) -> int:
        return len(self._resolved())


def _line_column(text: str, offset: int) -> Position:
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(text.count("\n", 0, offset) + 1, offset - line_start + 1)


def _json_float(text: str) -> object:
    """A JSON number with a fraction or exponent as kubectl re-sends it (`1.0` → 1); one out of
    float64's range stays text (the caller has the YAML path report it)."""
    number = float(text)
    return sent_number(number) if math.isfinite(number) else text


def _json_int(text: str) -> int | float:
    """A JSON integer as go-yaml reads the same digits: int64 or uint64 exactly, else a float."""
    number = int(text)
    if -(1 << 63) <= number < (1 << 64):
        return number
    return sent_number(float(number))


def _parse_json(text: str) -> _JsonStream:
    out = _JsonStream([])

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        value = dict(items)
        if len(value) != len(items):
            out.yaml_differs = True
        return value

    def constant(name: str) -> float:
        out.yaml_differs = True
        return float(name)

    def number(text: str) -> object:
        value = _json_float(text)
        if isinstance(value, str):
            out.yaml_differs = True  # out of float64's range: the YAML path reports it
        return value

    decoder = json.JSONDecoder(object_pairs_hook=pairs, parse_constant=constant,
                               parse_float=number, parse_int=_json_int)
    index = 0
    while True:
        match = _JSON_SPACE.match(text, index)
        index = match.end() if match else index
        if index >= len(text):
            return out
        try:
            value, end = decoder.raw_decode(text, index)
        except json.JSONDecodeError as error:
            out.error = Position(error.lineno, error.colno)
            out.message = f"invalid JSON: {error.msg}"
            return out
        except RecursionError:
            out.error = _line_column(text, index)
            out.message = "invalid JSON: nested too deeply"
            return out
        out.values.append((value, _line_column(text, index)))
        index = end


def _yaml_error(error: yaml.YAMLError, chunk: str, line_base: int) -> tuple[Position, str]:
    """Position (absolute) and message of a PyYAML error raised on `chunk`."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        message = f"YAML syntax error: {error.problem}"
        if error.context:
            context = error.context
            if error.context_mark is not None:
                cm = error.context_mark
                context += f" at line {cm.line + line_base}, column {cm.column + 1}"
            message += f" ({context})"
        return Position(mark.line + line_base, mark.column + 1), message
    if isinstance(error, yaml.reader.ReaderError):
        encoded = chunk.encode("utf-8")
        offset = min(error.position, len(encoded))
        line_start = encoded.rfind(b"\n", 0, offset) + 1
        line = encoded.count(b"\n", 0, offset) + line_base
        column = len(encoded[line_start:offset].decode("utf-8", "replace")) + 1
        character = error.character
        what = f"#x{character:04x}" if isinstance(character, int) else repr(character)
        return Position(line, column), f"unacceptable character {what}: {error.reason}"
    return Position(line_base, 1), f"YAML error: {error}"


def _line_offset(text: str, line: int) -> int:
    """The offset where 0-based `line` starts (the text's length past its last line)."""
    offset = 0
    for _ in range(line):
        offset = text.find("\n", offset)
        if offset < 0:
            return len(text)
        offset += 1
    return offset


def _text_field(data: dict[str, Any] | None, key: str) -> str | None:
    value = data.get(key) if data is not None else None
    return value if isinstance(value, str) else None


def _is_list_kind(kind: str | None) -> bool:
    return kind is not None and kind.endswith("List")


def _with_list_defaults(
    item: dict[str, Any], list_kind: str | None, api_version: str | None
) -> dict[str, Any]:
    """A typed list's item, with the `apiVersion`/`kind` API list responses leave out."""
    if list_kind is None or list_kind == "List":
        return item
    defaults = {"apiVersion": api_version, "kind": list_kind.removesuffix("List")}
    missing = {k: v for k, v in defaults.items() if v is not None and k not in item}
    return {**missing, **item} if missing else item


def _found(value: object) -> str:
    """How to name what was found where an object was expected."""
    if isinstance(value, (SequenceNode, list)):
        return "a list"
    text = value.value if isinstance(value, ScalarNode) else value
    return f"a scalar ({str(text)[:40]!r})"


def _nested_list(number: int, outer: str | None, inner: str | None) -> str:
    """A List item that is a List: reported, not read (its objects would be checked by nobody
    and the file would pass)."""
    return (f"item {number} of the {outer} is itself a {inner}: a list inside a list is not "
            "read; put its items in the outer list")


def _not_object(what: str, found: str) -> str:
    return f"{what} is not an object: found {found}"


class _SinkFailed(Exception):
    """Carries an exception raised by a `sink` past the loader's last-resort guard."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Loader:
    """One `load_paths` call: its result, and which files it has already read."""

    def __init__(self, stdin: TextIO | None, *, json_positions: bool = True,
                 walk: WalkFilter | None = None, lazy_positions: bool = False) -> None:
        self.result = LoadResult()
        self._stdin = stdin
        self._json_positions = json_positions
        self._lazy = lazy_positions
        self._positions: _FilePositions | None = None
        """The current YAML file's, with `lazy_positions`."""
        self._filter = walk or WalkFilter()
        self._read: set[tuple[int, int]] = set()
        self.plan: list[FileTask] | None = None
        """Set by `plan_paths`: files are listed here instead of being read."""
        self.argument = ""
        """The command-line argument being read."""
        self.modelled = 0
        """Documents built so far whose kind the model reads (`LoadResult.yielded`)."""
        self.repeated: set[str] = set()
        """Arguments that named a file already read (not "empty" for it)."""
        self.sink: Callable[[LoadedDocument, str], None] | None = None
        """Set by `load_task`: each document goes there as soon as it is built, not to
        `result.documents`, so a large file's documents need not all be alive at once; with
        the text of its file (suppressions may need the document kept)."""

    def _emit(self, document: LoadedDocument) -> None:
        if document.kind in SCHEMAS:
            self.modelled += 1
        if self.sink is None:
            self.result.documents.append(document)
        else:
            try:
                self.sink(document, self.result.texts.get(document.source.file or "", ""))
            except Exception as error:
                raise _SinkFailed(error) from error

    def _defer(self, name: str, path: str | None = None, *, explicit: bool = False,
               content: bytes | str | None = None) -> None:
        assert self.plan is not None
        self.plan.append(FileTask(name, path, explicit, content, self.result, self.argument))
        self.result = LoadResult()

    # -- paths ----------------------------------------------------------------------------

    def load_argument(self, path: str) -> None:
        self.argument = path
        if path == "-":
            self._load_stdin()
            return
        try:
            info = os.stat(path)
        except OSError as error:
            self.result.usage_errors.append(f"{_display(path)}: {_reason(error)}")
            return
        is_dir = stat.S_ISDIR(info.st_mode)
        if self._filter.skip_argument(path, is_dir=is_dir):
            return
        if is_dir:
            self._walk(path, frozenset(), explicit=True)
        else:
            self._load_file(path, explicit=True)

    def _file_finding(self, name: str, message: str, position: Position = _FILE_START) -> None:
        self.result.findings.append(
            INPUT_ERROR.finding(message, Location(file=_display(name), position=position))
        )

    def _unreadable(self, path: str, what: str, error: OSError, *, explicit: bool) -> None:
        """The module's two kinds of failure for one path that cannot be read: a usage error
        when the command line named it, an SA000 finding on it when a walk met it (the walk
        goes on)."""
        if explicit:
            self.result.usage_errors.append(f"{_display(path)}: {_reason(error)}")
        else:
            self._file_finding(path, f"cannot read {what}: {_reason(error)}")

    def _walk(
        self, directory: str, ancestors: frozenset[tuple[int, int]], *, explicit: bool
    ) -> None:
        try:
            info = os.stat(directory)
            identity = (info.st_dev, info.st_ino)
            if identity in ancestors:
                self._file_finding(
                    directory, "symlink loop: this directory contains itself; not walked again"
                )
                return
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            self._unreadable(directory, "directory", error, explicit=explicit)
            return
        inside = ancestors | {identity}
        # A walk of the working directory names its files `deploy/x.yaml`, as git and
        # pre-commit do, not `./deploy/x.yaml`: one file, one spelling in every report.
        here = os.path.normpath(directory) == os.curdir
        for entry in entries:
            path = entry.name if here else os.path.join(directory, entry.name)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir and not entry.name.lower().endswith(EXTENSIONS):
                continue
            if self._filter.skip_entry(directory, entry.name, is_dir=is_dir):
                continue
            if is_dir:
                self._walk(path, inside, explicit=False)
            else:
                self._load_file(path, explicit=False)

    def _load_file(self, path: str, *, explicit: bool) -> None:
        try:
            info = os.stat(path)
            regular = stat.S_ISREG(info.st_mode)
            if not regular and not explicit:
                self._file_finding(path, "not a regular file (a FIFO, socket or device); skipped")
                return
            identity = (info.st_dev, info.st_ino)
            if regular and identity in self._read:
                self.repeated.add(self.argument)  # what it holds was counted where first read
                return
            if self.plan is not None:
                if regular:
                    self._read.add(identity)
                self._defer(_display(path), path, explicit=explicit)
                return
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as error:
            self._unreadable(path, "file", error, explicit=explicit)
            return
        if regular:
            self._read.add(identity)
        self.result.files += 1
        self._load_bytes(_display(path), raw)

    def _load_stdin(self) -> None:
        stream = self._stdin
        if stream is None:
            self.result.usage_errors.append("-: no standard input")
            return
        try:
            buffer = getattr(stream, "buffer", None)
            data: bytes | str = buffer.read() if buffer is not None else stream.read()
        except UnicodeDecodeError as error:
            self.result.files += 1
            self._file_finding(STDIN_NAME, f"standard input is not UTF-8 text: {error.reason}")
            return
        except (OSError, ValueError) as error:
            self.result.usage_errors.append(f"-: cannot read standard input: {error}")
            return
        if self.plan is not None:
            self._defer(STDIN_NAME, content=data)
            return
        self.load_data(STDIN_NAME, data)

    def load_data(self, name: str, data: bytes | str) -> None:
        """What was read from stdin (bytes from a binary stream, else text), as one file."""
        self.result.files += 1
        if isinstance(data, bytes):
            self._load_bytes(name, data)
        elif "\0" in data:
            self.result.texts[name] = data
            self._file_finding(name, "binary input (contains NUL characters), not YAML or JSON")
        else:
            self.load_text(name, data.removeprefix("\ufeff"))

    def _load_bytes(self, name: str, raw: bytes) -> None:
        text, position, problem = _decode(raw)
        if text is None:
            self.result.texts[name] = raw.decode("utf-8-sig", "replace")
            self._file_finding(name, problem, position)
            return
        self.load_text(name, text)

    # -- content --------------------------------------------------------------------------

    def load_text(self, name: str, text: str) -> None:
        """Load one file's text; a last-resort guard turns any exception into a finding."""
        self.result.texts[name] = text
        try:
            with gc_paused():
                self._load_content(name, text)
        except _SinkFailed as failed:
            raise failed.error from None  # the consumer's own failure, not the loader's
        except Exception as error:  # a bug, but the CLI must still answer with a finding
            self._file_finding(
                name, f"internal error while loading: {type(error).__name__}: {error}"
            )

    def _load_content(self, name: str, text: str) -> None:
        is_json_name = name.lower().endswith(".json")
        if is_json_name or _looks_like_json(text):
            stream = _parse_json(text)
            if stream.error is None:
                self._load_json(name, text, stream)
                return
            if is_json_name:
                self._file_finding(name, stream.message, stream.error)
                return
        if self._lazy and len(text) >= FAST_YAML_CHARS and YAML_FAST.on and self._load_fast_yaml(name, text):
            return
        self._positions = _FilePositions(name, text, json_numbers=False) if self._lazy else None
        try:
            self._load_yaml(name, text, json_numbers=False)
        finally:
            self._positions = None

    def _load_json(self, name: str, text: str, stream: _JsonStream) -> None:
        """Valid JSON: the decoder's values; positions from the YAML parser (JSON is YAML).

        When the values hold nothing to report (`_JsonStream.plain`), they are used as they
        are and the positions are composed only if asked for (`_FilePositions`). Otherwise
        the YAML parser builds the documents, so a repeated key or a non-object item is
        reported at its line. If the YAML parser cannot follow (surrogate-pair escapes,
        concatenated values), use the JSON decoder's values with one position per document.
        """
        if self._json_positions and stream.plain(text):
            positions = _FilePositions(name, text, json_numbers=True)
            for index, (value, position) in enumerate(stream.values):
                self._add_plain(name, index, value, position, positions)
            return
        if self._json_positions:
            before = (len(self.result.documents), len(self.result.findings))
            sink, self.sink = self.sink, None  # what the attempt yields may be taken back
            try:
                parsed = self._load_yaml(name, text, json_numbers=True, strict=True)
            finally:
                self.sink = sink
            if parsed == len(stream.values):
                if sink is not None:
                    kept = self.result.documents[before[0] :]
                    del self.result.documents[before[0] :]
                    for document in kept:
                        self._emit(document)
                return
            del self.result.documents[before[0] :]
            del self.result.findings[before[1] :]
        for index, (value, position) in enumerate(stream.values):
            self._add_plain(name, index, value, position)

    def _load_fast_yaml(self, name: str, text: str) -> bool:
        """A large YAML file through `yaml_fast`, if it vouches for the values and they hold
        nothing to report (as `_JsonStream.plain` decides for JSON); positions composed by
        libyaml on first use. False: nothing was loaded, compose the file."""
        from . import yaml_fast

        fast = yaml_fast.documents(text)
        if fast is None:
            return False
        documents, repeated = fast
        stream = _JsonStream([(value, start) for _, value, start in documents], yaml_differs=repeated)
        if not stream.plain(text):
            return False
        positions = _FilePositions(name, text, json_numbers=False)
        for index, value, start in documents:
            self._add_plain(name, index, value, start, positions)
        return True

    def _load_yaml(self, name: str, text: str, *, json_numbers: bool, strict: bool = False) -> int:
        """Parse a multi-document stream; return the number of documents, -1 if `strict` failed.

        After an error, the rest of the stream — from the end of the last document built — is
        split at its `---` lines and each part is parsed alone, as kubectl splits a stream and
        converts each document by itself: only the document holding the error is lost. (libyaml
        checks characters a buffer at a time, so a control character in the fourth document
        stops the stream before the first three are built: those are parsed again.)
        """
        index = 0
        parser = _TagMemoParser(text)
        built_to = 0  # the 0-based line after the last document built
        try:
            while parser.check_node():
                node = parser.get_node()
                if node is None:
                    break
                self._load_node(name, node, index, 1, json_numbers)
                index += 1
                mark = node.end_mark  # a block node ends where the next line starts
                built_to = mark.line + (1 if mark.column else 0)
            return index
        except yaml.YAMLError:
            if strict:
                return -1
        finally:
            parser.dispose()
        start = _line_offset(text, built_to)
        marks = [m.start() for m in _DOCUMENT_START.finditer(text, start)]
        for begin, end in zip([start, *marks], [*marks, len(text)], strict=True):
            index = self._load_part(name, text[begin:end], text.count("\n", 0, begin), index,
                                    json_numbers, last=end == len(text))
        return index

    def _load_part(self, name: str, part: str, line: int, index: int, json_numbers: bool, *,
                   last: bool) -> int:
        """One `---`-delimited part of a stream (0-based `line` where it starts): its documents,
        or one finding where it cannot be parsed. Returns the next document index."""
        parser = _TagMemoParser(part)
        try:
            while parser.check_node():
                node = parser.get_node()
                if node is None:
                    break
                self._load_node(name, node, index, line + 1, json_numbers)
                index += 1
            return index
        except yaml.YAMLError as error:
            position, message = _yaml_error(error, part, line + 1)
            content = part.rstrip("\n")
            end = line + content.count("\n") + 1
            if position.line > end and not last:  # "unexpected end of stream": at the end of
                # this part, not on the next part's `---` line
                position = Position(end, len(content) - content.rfind("\n"))
            self._file_finding(name, message, position)
            return index + 1
        finally:
            parser.dispose()

    def _load_node(
        self, name: str, node: Node, index: int, line_base: int, json_numbers: bool
    ) -> None:
        builder = NodeBuilder(line_base=line_base, json_numbers=json_numbers)
        if isinstance(node, ScalarNode) and node.tag == _NULL_TAG:
            return  # an empty document
        if not isinstance(node, MappingNode):
            issue = Issue(_not_object("document", _found(node)), (), builder.position(node))
            self._content_finding(name, issue, None)
            return
        top = _top_level(node, "kind", "apiVersion", "items")
        kind = _scalar_text(top.get("kind"))
        items = top.get("items")
        if _is_list_kind(kind) and isinstance(items, SequenceNode):
            self._load_items(name, index, builder, items, kind, _scalar_text(top.get("apiVersion")))
        elif kind == "List":
            if items is not None and not (isinstance(items, ScalarNode) and items.tag == _NULL_TAG):
                issue = Issue("List items must be a list", ("items",), builder.position(items))
                self._content_finding(name, issue, None)
        else:
            self._add_built(name, index, builder.build(node), None)

    def _load_items(
        self,
        name: str,
        index: int,
        builder: NodeBuilder,
        items: SequenceNode,
        list_kind: str | None,
        api_version: str | None,
    ) -> None:
        for position, item in enumerate(items.value):
            if builder.exhausted:
                return
            if not isinstance(item, MappingNode):
                if not (isinstance(item, ScalarNode) and item.tag == _NULL_TAG):
                    what = f"item {position} of the {list_kind}"
                    issue = Issue(_not_object(what, _found(item)), (), builder.position(item))
                    self._content_finding(name, issue, None)
                continue
            nested = _scalar_text(_top_level(item, "kind").get("kind"))
            if _is_list_kind(nested):
                issue = Issue(_nested_list(position, list_kind, nested), (), builder.position(item))
                self._content_finding(name, issue, None)
                continue
            built = builder.build(item)
            if isinstance(built.value, dict):
                built.value = _with_list_defaults(built.value, list_kind, api_version)
            self._add_built(name, index, built, position)

    def _add_built(self, name: str, index: int, built: Built, item: int | None) -> None:
        data = built.value if isinstance(built.value, dict) else None
        kind = _text_field(data, "kind")
        ref = _object_ref(data, kind) if data is not None else None
        for issue in built.issues:
            self._content_finding(name, issue, ref)
        if data is None or built.aborted:
            return
        lazy = self._positions
        if lazy is not None and self._lazy:
            root = built.positions.get(()) or _FILE_START
            source = Source(
                file=name, document=index,
                positions=_ComposedOnUse(lazy, index, item, root, keys=False, known=True),
                key_positions=_ComposedOnUse(lazy, index, item, root, keys=True, known=True),
            )
        else:
            source = Source(
                file=name, document=index, positions=built.positions, key_positions=built.key_positions
            )
        self._emit(LoadedDocument(data, source, kind, _text_field(data, "apiVersion"), item))

    def _add_plain(self, name: str, index: int, value: object, position: Position,
                   lazy: _FilePositions | None = None) -> None:
        """A document decoded without nodes: positions composed on first use (`lazy`), or one
        position for all of it (the JSON fallback)."""

        def source(item: int | None) -> Source:
            if lazy is None:
                return Source(file=name, document=index, positions={(): position})
            return Source(file=name, document=index,
                          positions=_ComposedOnUse(lazy, index, item, position, keys=False),
                          key_positions=_ComposedOnUse(lazy, index, item, position, keys=True))

        if value is None:
            return
        if not isinstance(value, dict):
            issue = Issue(_not_object("document", _found(value)), (), position)
            self._content_finding(name, issue, None)
            return
        kind = _text_field(value, "kind")
        items = value.get("items")
        if not (_is_list_kind(kind) and isinstance(items, list)):
            if kind != "List":
                doc = LoadedDocument(value, source(None), kind, _text_field(value, "apiVersion"))
                self._emit(doc)
            return
        api_version = _text_field(value, "apiVersion")
        for number, item in enumerate(items):
            nested = _text_field(item, "kind") if isinstance(item, dict) else None
            if _is_list_kind(nested):
                issue = Issue(_nested_list(number, kind, nested), (), position)
                self._content_finding(name, issue, None)
            elif isinstance(item, dict):
                data = _with_list_defaults(item, kind, api_version)
                doc = LoadedDocument(
                    data, source(number), _text_field(data, "kind"), _text_field(data, "apiVersion"),
                    number,
                )
                self._emit(doc)
            elif item is not None:
                issue = Issue(
                    _not_object(f"item {number} of the {kind}", _found(item)), (), position
                )
                self._content_finding(name, issue, None)

    def _content_finding(self, name: str, issue: Issue, ref: ObjectRef | None) -> None:
        self.result.findings.append(
            INPUT_ERROR.finding(
                issue.message, Location(field=issue.path, file=name, position=issue.position, object=ref)
            )
        )
