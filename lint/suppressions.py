"""Suppressions with reasons, in three forms, and their audit (SA001, SA002).

* an inline YAML comment, `# dra-affinity: ignore SA201[,SA205] -- reason`, trailing on a
  line or alone on the line above it: it covers the YAML node starting on that line —
  the field a finding points at, a whole `sharingAffinity` entry (on its `- name:`
  line), or the whole object (on its first line);
* an annotation on the object, `dra-affinity.io/ignore: "SA201: reason"` (several
  entries separated by `;` or newlines) — the only form that survives a `kubectl get`
  dump and works for `--cluster`;
* config-file ignores by rule, path glob and object glob (`dra_affinity.lint.config.Ignore`), for
  files nobody may annotate (rendered charts, vendored manifests).

The loader drops comments, and keeping them would slow every run for a rare
feature; so comments are found here, only in files whose text contains the marker,
and told apart from look-alikes inside strings (a `#` in a CEL block scalar is
not a comment) by the spans of the YAML scanner's scalar tokens. Lines map to
objects through the positions the loader already keeps.

A suppression without a reason still applies, and is reported (SA001); one that
silenced nothing among the rules that ran is reported too (SA002).
"""

from __future__ import annotations

import bisect
import enum
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from ..policies.core.findings import Finding, Location, ObjectRef
from ..policies.core.source import FieldPath, Position, Source
from ..policies.rules.catalog import catalog
from ..policies.rules.input.sa001_suppression_without_reason import RULE as NO_REASON
from ..policies.rules.input.sa002_unused_suppression import RULE as UNUSED
from .config import Config, Ignore

if TYPE_CHECKING:
    from ..sources.loader import LoadedDocument

MARKER = "dra-affinity:"
ANNOTATION = "dra-affinity.io/ignore"

_DIRECTIVE = re.compile(r"#[ \t]*dra-affinity:[ \t]*ignore(?![\w-])(?P<body>.*)$")
_LINE_BREAK = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
"""YAML's line breaks (PyYAML's too), so line numbers agree with the loader's."""
_SEPARATORS = re.compile(r"[\s,]+")
_BIG = 1 << 62


class Kind(enum.Enum):
    COMMENT = "comment"
    ANNOTATION = "annotation"
    CONFIG = "config"

    @property
    def in_source(self) -> bool:
        """SARIF's suppression kind: written in the analysed file, or outside it."""
        return self is not Kind.CONFIG


@dataclass(frozen=True, slots=True)
class ObjectSpan:
    """An object's place: its file and lines (first to last), its name, and its field positions."""

    file: str | None
    first: int | None
    last: int | None
    ref: ObjectRef | None
    source: Source | None = None

    def holds(self, loc: Location) -> bool:
        if loc.file != self.file:
            return False
        if loc.position is not None and self.first is not None and self.last is not None:
            return self.first <= loc.position.line <= self.last
        return loc.position is None and _same_object(loc.object, self.ref)

    def starts_on(self, path: FieldPath, line: int) -> bool:
        """Whether `path` or one of its ancestors (the object itself included) starts on `line`.

        A node starts where a human sees it: its key's line, or its value's for list
        entries and the object (which have no key).
        """
        if self.source is None:
            return False
        keys, values = self.source.key_positions, self.source.positions
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            pos = keys.get(prefix) or values.get(prefix)
            if pos is not None and pos.line == line:
                return True
        return False


class FileObjects:
    """The objects of one file in line order, to find the one holding a line."""

    def __init__(self, spans: Iterable[ObjectSpan]) -> None:
        self.spans = sorted((s for s in spans if s.first is not None), key=lambda s: s.first or 0)
        self.firsts = [s.first or 0 for s in self.spans]

    def holding(self, line: int) -> ObjectSpan | None:
        index = bisect.bisect_right(self.firsts, line) - 1
        if index < 0:
            return None
        span = self.spans[index]
        return span if span.last is not None and line <= span.last else None


@dataclass(frozen=True, slots=True)
class Suppression:
    """One suppression: the rules it names, why, where it is written and what it covers."""

    kind: Kind
    rules: tuple[str, ...]
    reason: str
    file: str | None
    position: Position | None
    line: int | None = None
    """COMMENT: the line whose node it covers (the comment's own, or the next with content)."""
    objects: FileObjects | None = None
    """COMMENT: the objects of its file, to find the nodes starting on `line`."""
    span: ObjectSpan | None = None
    """ANNOTATION: the annotated object; it covers every finding in it."""
    ignore: Ignore | None = None
    """CONFIG: the config entry (path and object globs)."""

    def covers(self, loc: Location, paths: _PathMatcher) -> bool:
        if self.span is not None:
            return self.span.holds(loc)
        if self.line is not None:
            return self._covers_node(loc, self.line)
        if self.ignore is not None:
            return paths.matches(self.ignore.paths, loc.file) and _object_matches(
                self.ignore.objects, loc.object)
        return False

    def _covers_node(self, loc: Location, line: int) -> bool:
        """The finding is on `line`, in a value starting on it, or inside a node starting on it."""
        if loc.file != self.file or loc.position is None:
            return False
        if loc.position.line == line or (loc.value is not None and loc.value.line == line):
            return True
        span = self.objects.holding(loc.position.line) if self.objects is not None else None
        return span is not None and span.starts_on(loc.field, line)

    def where(self) -> str:
        """`file:line:col`, for messages."""
        if self.position is None:
            return self.file or "<input>"
        return f"{self.file}:{self.position.line}:{self.position.column}"


@dataclass(frozen=True, slots=True)
class Suppressed:
    """A finding that a suppression silenced (listed by `--show-suppressed`)."""

    finding: Finding
    by: Suppression


@dataclass(frozen=True, slots=True)
class Collected:
    suppressions: tuple[Suppression, ...]
    findings: tuple[Finding, ...]
    """SA001 for each suppression without a reason."""


@dataclass(frozen=True, slots=True)
class Audit:
    findings: tuple[Finding, ...]
    """The findings left, plus SA001/SA002 about the suppressions themselves."""
    suppressed: tuple[Suppressed, ...]


# -- collecting ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Written:
    """The suppressions written in some input files: comments by file, annotations in document
    order. Small and picklable, so `lint --jobs N` workers collect them file by file."""

    comments: Mapping[str, tuple[Suppression, ...]]
    annotations: tuple[Suppression, ...]


def written(
    documents: Sequence[LoadedDocument], names: Iterable[str], texts: Mapping[str, str] | None
) -> Written:
    """The comment suppressions of `names` (from their texts) and the documents' annotations.

    Object spans (positions) are looked at only in files that have a suppression comment or
    an annotated object: elsewhere nothing needs them.
    """
    texts = texts or {}
    marked = [name for name in dict.fromkeys(names) if MARKER in texts.get(name, "")]
    annotated = [d for d in documents if _annotation(d) is not None]
    needed = {*marked, *(d.source.file for d in annotated)}
    spans = _object_spans([d for d in documents if d.source.file in needed])
    comments = {
        name: tuple(_comment_suppressions(name, texts[name], FileObjects(spans.get(name, {}).values())))
        for name in marked
    }
    annotations = tuple(s for d in annotated for s in _annotation_suppressions(d, spans))
    return Written(comments, annotations)


def combine(found: Iterable[Written], names: Iterable[str], config: Config) -> Collected:
    """One run's suppressions: the comments of `names` in that order, every annotation, then
    the config's ignores (the order `apply` tries them in)."""
    found = list(found)
    comments: dict[str, tuple[Suppression, ...]] = {}
    for part in found:
        for name, entries in part.comments.items():
            comments.setdefault(name, entries)
    ordered: list[Suppression] = [s for name in dict.fromkeys(names) for s in comments.get(name, ())]
    ordered.extend(s for part in found for s in part.annotations)
    ordered.extend(
        Suppression(Kind.CONFIG, ignore.rules, ignore.reason, ignore.file, ignore.position, ignore=ignore)
        for ignore in config.ignores
    )
    return Collected(tuple(ordered), tuple(_no_reason(s) for s in ordered if not s.reason))


def collect(
    documents: Sequence[LoadedDocument],
    config: Config,
    *,
    files: Iterable[str] = (),
    texts: Mapping[str, str] | None = None,
) -> Collected:
    """Every suppression in the loaded documents' files, their annotations and the config.

    `files` adds files that produced no document (a YAML syntax error can be suppressed
    too); `texts` is each file's text as the loader read it (`LoadResult.texts`): nothing is
    read from disk again, and a name without text (a cluster object) has no comments.
    """
    names = list(dict.fromkeys([*(d.source.file for d in documents if d.source.file), *files]))
    return combine([written(documents, names, texts)], names, config)


def _object_spans(documents: Sequence[LoadedDocument]) -> dict[str | None, dict[int, ObjectSpan]]:
    """Per file, each object's span keyed by its first line (position-less objects under 0, -1, …)."""
    starts: dict[str | None, list[tuple[int, ObjectRef | None, Source]]] = {}
    loose: dict[str | None, dict[int, ObjectSpan]] = {}
    for document in documents:
        file = document.source.file
        ref = document_ref(document)
        root = document.source.positions.get(())
        if root is None:
            bucket = loose.setdefault(file, {})
            bucket[-len(bucket)] = ObjectSpan(file, None, None, ref)
        else:
            starts.setdefault(file, []).append((root.line, ref, document.source))
    out: dict[str | None, dict[int, ObjectSpan]] = {f: dict(b) for f, b in loose.items()}
    for file, items in starts.items():
        items.sort(key=lambda item: item[0])
        bucket = out.setdefault(file, {})
        for i, (first, ref, source) in enumerate(items):
            last = items[i + 1][0] - 1 if i + 1 < len(items) else _BIG
            bucket[first] = ObjectSpan(file, first, max(first, last), ref, source)
    return out


def document_ref(document: LoadedDocument) -> ObjectRef | None:
    """How findings name the object a loaded document holds (kind, name, namespace)."""
    if document.kind is None:
        return None
    metadata = document.data.get("metadata")
    name = namespace = None
    if isinstance(metadata, dict):
        name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
        namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else None
    return ObjectRef(document.kind, name, namespace)


def _same_object(a: ObjectRef | None, b: ObjectRef | None) -> bool:
    if a is None or b is None or a.kind != b.kind or a.name != b.name:
        return False
    return a.namespace is None or b.namespace is None or a.namespace == b.namespace


def _parse_rules(text: str) -> tuple[str, ...]:
    return tuple(token.upper() for token in _SEPARATORS.split(text.strip()) if token)


def _comment_suppressions(file: str, text: str, objects: FileObjects) -> Iterable[Suppression]:
    lines = _LINE_BREAK.split(text)
    for number, column, body, alone in _directives(text, lines):
        rules_text, _, reason = body.partition("--")
        target = _next_content_line(lines, number) if alone else number
        yield Suppression(
            Kind.COMMENT,
            _parse_rules(rules_text),
            reason.strip(),
            file,
            Position(number, column),
            line=target,
            objects=objects,
        )


def _directives(text: str, lines: Sequence[str]) -> Iterator[tuple[int, int, str, bool]]:
    """(line, column, text after `ignore`, alone on its line) of every real suppression comment."""
    candidates = [(i, line) for i, line in enumerate(lines) if MARKER in line]
    if not candidates:
        return
    scalars = _ScalarSpans(text, until=candidates[-1][0])
    for i, line in candidates:
        for match in _DIRECTIVE.finditer(line):
            col = match.start()
            if col > 0 and line[col - 1] not in " \t":
                continue  # `a#b` is part of a plain scalar, not a comment
            if scalars.inside(i, col):
                continue
            yield i + 1, col + 1, match.group("body"), not line[:col].strip()
            break


def _next_content_line(lines: Sequence[str], number: int) -> int | None:
    """The 1-based line a comment alone on line `number` is about: the next one with content."""
    for index in range(number, len(lines)):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "...") or stripped.startswith(
                "--- "):
            continue
        return index + 1
    return None


class _ScalarSpans:
    """Where the YAML scanner saw scalars: a `#` inside one is text, not a comment.

    If the scanner stops at a syntax error, positions after it are not judged by
    spans (the `#`-after-blank test alone applies there). Scanning stops after the
    last line asked about (`until`, 0-based): a marker near the top of a large file
    costs little.
    """

    def __init__(self, text: str, until: int) -> None:
        import yaml

        parser_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        self.starts: list[tuple[int, int]] = []
        self.ends: list[tuple[int, int]] = []
        parser = parser_class(text)
        try:
            while parser.check_token():
                token = parser.get_token()
                if token.start_mark.line > until:
                    break
                if isinstance(token, yaml.ScalarToken):
                    start = (token.start_mark.line, token.start_mark.column)
                    if token.style in ("|", ">"):
                        start = (start[0] + 1, 0)  # a comment may follow the `|` header
                    self.starts.append(start)
                    self.ends.append((token.end_mark.line, token.end_mark.column))
        except yaml.YAMLError:
            pass
        finally:
            parser.dispose()

    def inside(self, line: int, column: int) -> bool:
        at = (line, column)
        index = bisect.bisect_right(self.starts, at) - 1
        return index >= 0 and at < self.ends[index]


def has_annotation(document: LoadedDocument) -> bool:
    """Whether the object carries a `dra-affinity.io/ignore` annotation."""
    return _annotation(document) is not None


def _annotation(document: LoadedDocument) -> object:
    metadata = document.data.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations.get(ANNOTATION) if isinstance(annotations, dict) else None


def _annotation_suppressions(
    document: LoadedDocument, spans: Mapping[str | None, Mapping[int, ObjectSpan]]
) -> Iterable[Suppression]:
    value = _annotation(document)
    if value is None:
        return
    source = document.source
    position = source.locate(("metadata", "annotations", ANNOTATION))
    root = source.positions.get(())
    span = spans.get(source.file, {}).get(root.line) if root is not None else None
    if span is None:
        span = ObjectSpan(source.file, None, None, document_ref(document))
    entries = [e for e in re.split(r"[;\n]", value) if e.strip()] if isinstance(value, str) else [""]
    for entry in entries or [""]:
        rules_text, _, reason = entry.partition(":")
        yield Suppression(Kind.ANNOTATION, _parse_rules(rules_text), reason.strip(), source.file,
                          position, span=span)


def _no_reason(suppression: Suppression) -> Finding:
    how = {
        Kind.COMMENT: "add it after `--`",
        Kind.ANNOTATION: "write `RULE: reason`",
        Kind.CONFIG: "add `reason:`",
    }[suppression.kind]
    rules = ", ".join(suppression.rules) or "no rule"
    return NO_REASON.finding(
        f"{suppression.kind.value} suppression of {rules} gives no reason: {how}",
        Location(file=suppression.file, position=suppression.position),
    )


# -- applying -----------------------------------------------------------------------------


class _PathMatcher:
    """Config path globs, relative to the config file's directory, gitignore-like.

    `*` and `?` stay within one path segment, `**` spans segments, a glob without `/`
    matches at any depth, and a glob naming a directory matches everything below it.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self._relative: dict[str | None, str | None] = {}
        self._compiled: dict[str, re.Pattern[str]] = {}

    def matches(self, globs: Sequence[str], file: str | None) -> bool:
        if not globs:
            return True
        relative = self.relative(file)
        return relative is not None and any(self._regex(g).match(relative) for g in globs)

    def relative(self, file: str | None) -> str | None:
        if file not in self._relative:
            self._relative[file] = self._relativize(file)
        return self._relative[file]

    def _relativize(self, file: str | None) -> str | None:
        if file is None:
            return None
        try:
            relative = os.path.relpath(os.path.abspath(file), self.root)
        except ValueError:
            return None
        if relative == ".." or relative.startswith(".." + os.sep):
            return None
        return relative.replace(os.sep, "/")

    def _regex(self, glob: str) -> re.Pattern[str]:
        if glob not in self._compiled:
            self._compiled[glob] = re.compile(glob_to_regex(glob))
        return self._compiled[glob]


def glob_to_regex(glob: str) -> str:
    """A gitignore-like glob as an anchored regular expression over `/`-separated paths."""
    pattern = glob.strip().removeprefix("./")
    if pattern.endswith("/"):
        pattern += "**"
    if "/" not in pattern.rstrip("/"):
        pattern = "**/" + pattern
    pattern = pattern.lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out) + "(?:/.*)?$"


def _object_matches(globs: Sequence[str], ref: ObjectRef | None) -> bool:
    if not globs:
        return True
    if ref is None or ref.name is None:
        return False
    names = [ref.name, f"{ref.kind}/{ref.name}"]
    if ref.namespace:
        names += [f"{ref.namespace}/{ref.name}", f"{ref.kind}/{ref.namespace}/{ref.name}"]
    return any(fnmatchcase(name, glob) for glob in globs for name in names)


def apply(
    findings: Iterable[Finding],
    collected: Collected,
    *,
    root: Path,
    ran: Callable[[str], bool],
    files: Iterable[str | None] = (),
) -> Audit:
    """Split findings into kept and suppressed; add SA001 and SA002 about the suppressions.

    `ran(rule_id)` tells whether a rule was checked in this run, so a suppression of
    a rule that did not run is not called unused; `files` are the run's inputs, so a
    config ignore whose paths matched none of them is not called unused either.
    """

    paths = _PathMatcher(root)
    suppressions = collected.suppressions
    used: set[tuple[int, str]] = set()
    kept: list[Finding] = []
    silenced: list[Suppressed] = []
    for finding in findings:
        hit = _first_cover(finding, suppressions, paths)
        if hit is None:
            kept.append(finding)
            continue
        used.add((hit, finding.rule))
        silenced.append(Suppressed(finding, suppressions[hit]))
    inputs = [f for f in dict.fromkeys(files) if f is not None]
    known = catalog()
    audit = list(collected.findings)
    for index, suppression in enumerate(suppressions):
        message = _unused(suppression, index, used, known, ran, paths, inputs)
        if message is not None:
            audit.append(
                UNUSED.finding(message, Location(file=suppression.file, position=suppression.position))
            )
    return Audit(tuple(kept + audit), tuple(silenced))


def _first_cover(finding: Finding, suppressions: Sequence[Suppression], paths: _PathMatcher) -> int | None:
    for index, suppression in enumerate(suppressions):
        if finding.rule in suppression.rules and any(
                suppression.covers(loc, paths) for loc in finding.locations):
            return index
    return None


def _unused(
    suppression: Suppression,
    index: int,
    used: set[tuple[int, str]],
    known: Mapping[str, object],
    ran: Callable[[str], bool],
    paths: _PathMatcher,
    inputs: Sequence[str],
) -> str | None:
    what = f"{suppression.kind.value} suppression"
    if not suppression.rules:
        return f"{what} names no rule id, so it suppresses nothing (`dra-affinity rules` lists them)"
    unknown = [r for r in suppression.rules if r not in known]
    if unknown:
        return f"{what} names {', '.join(unknown)}, which is not a rule id (`dra-affinity rules` lists them)"
    ignore = suppression.ignore
    if ignore is not None and ignore.paths and not any(paths.matches(ignore.paths, f) for f in inputs):
        return None  # its files were not part of this run
    idle = [r for r in suppression.rules if ran(r) and (index, r) not in used]
    if not idle:
        return None
    where = {Kind.COMMENT: "in the node it covers", Kind.ANNOTATION: "in this object",
             Kind.CONFIG: "in the files and objects it names"}[suppression.kind]
    return f"unused {what}: no {', '.join(idle)} finding {where}; remove it from the suppression"



def audit(
    findings: Iterable[Finding],
    documents: Sequence[LoadedDocument],
    config: Config,
    *,
    ran: Callable[[str], bool],
    disabled: frozenset[str] = frozenset(),
    texts: Mapping[str, str] | None = None,
) -> Audit:
    """Everything the config and the suppressions do to a run's findings, in order.

    Disabled rules are dropped (input findings included: the engine only skips the
    rules it runs), suppressions are applied and audited, then the config's severity
    overrides apply to what is left, SA001/SA002 included.
    """

    document_files = [d.source.file for d in documents]
    files = [f for f in (*document_files, *(loc.file for f in findings for loc in f.locations)) if f]
    return audit_written(findings, [written(documents, files, texts)], document_files, config, ran=ran,
                         disabled=disabled)


def audit_written(
    findings: Iterable[Finding],
    found: Sequence[Written],
    document_files: Sequence[str | None],
    config: Config,
    *,
    ran: Callable[[str], bool],
    disabled: frozenset[str] = frozenset(),
) -> Audit:
    """`audit`, from suppressions collected file by file (`written`) and the files that held
    documents: what `lint --jobs N` keeps of its input once every file is checked."""

    active = [f for f in findings if f.rule not in disabled]
    files = [*document_files, *(loc.file for f in active for loc in f.locations)]
    names = [f for f in files if f]
    collected = combine(found, names, config)
    result = apply(active, collected, root=config.root, ran=ran, files=files)
    kept = [
        replace(f, severity=config.severity[f.rule]) if f.rule in config.severity else f
        for f in result.findings if f.rule not in disabled
    ]
    return Audit(tuple(kept), result.suppressed)
