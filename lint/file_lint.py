"""`lint` file by file: what `lint --jobs N` runs in worker processes (and `--jobs 1` here).

Why: keeping every slice's documents, positions and text until the end of a run makes memory
grow with the whole input (figures in docs/performance.md). Here a file is loaded, modelled, its slices
are checked and its suppressions collected; then only what a later step needs leaves it:
the findings, each slice's pool entry (what the pool rules read), its slices' JUnit view and
its suppressions. The documents die with the file. Every file goes through `lint_file`
whatever the number of workers, and the parent merges the results in input order, so the
report is the same with any `--jobs`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..policies.core.findings import Finding, ObjectRef
from ..policies.core.source import FieldPath, Position, Source
from ..policies.model.resources import Device, ResourceSlice
from ..policies.rules.engine import check_slice
from .inputs import Objects, model_document
from .suppressions import ANNOTATION, MARKER, document_ref, has_annotation

if TYPE_CHECKING:
    from ..policies.rules.engine import EngineOptions
    from ..sources.loader import FileTask, LoadedDocument, LoadResult, Plan
    from ..sources.walk import SkipReason
    from .report import Summary
    from .suppressions import Written

POOL_PATHS: tuple[FieldPath, ...] = (
    ("spec", "pool", "resourceSliceCount"), ("spec", "pool", "generation"), ("spec", "sharingAffinity"),
    ("spec", "devices"),
)
"""Where pool rules point in a slice (SP302-SP306), besides each extractor's `name` (SP301):
`pool_entry` keeps the positions of these paths and of their ancestors, so `Source.locate`
answers exactly as on the whole document for them."""


@dataclass(slots=True)
class FileLinted:
    """What one file (or stdin) leaves behind once checked; picklable, small."""

    input_findings: list[Finding] = field(default_factory=list)
    """SA000 from reading and parsing, in the loader's order."""
    usage_errors: list[str] = field(default_factory=list)
    model_findings: list[Finding] = field(default_factory=list)
    slice_findings: list[Finding] = field(default_factory=list)
    pool_slices: list[ResourceSlice] = field(default_factory=list)
    slice_cases: list[tuple[str | None, ObjectRef | None, int | None]] = field(default_factory=list)
    """Each ResourceSlice document: file, object, first line (JUnit's one case per slice), when
    the run writes a CI format (`LintJob.cases`)."""
    resource_slices: int = 0
    document_files: list[str | None] = field(default_factory=list)
    suppressions: Written | None = None
    files: int = 0
    objects: int = 0
    skipped: int = 0


@dataclass(frozen=True, slots=True)
class LintJob:
    """What every file of a run is checked with (sent once to each worker)."""

    options: EngineOptions
    slices: bool = True
    pools: bool = True
    cases: bool = True
    """Keep each slice's JUnit case (its first line: a JSON list item's costs composing its file)."""


def default_jobs() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    counted = getattr(os, "process_cpu_count", None)
    if counted is not None:
        return max(1, counted() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def lint_file(task: FileTask, job: LintJob, on_document: Callable[[], None] | None = None) -> FileLinted:
    """Load, model and check one planned file, each document as soon as it is built; collect
    its suppressions.

    A document outlives its check only in a file whose text could hold a suppression (a
    comment marker, the annotation's name): their spans need every object of the file. If an
    annotation turns up anyway (written with escapes), the file is checked again keeping all.
    """
    from ..sources.loader import load_task

    checker = _Checker(job, keep=False)
    sink = checker.add
    if on_document is not None:  # progress of a run in this process: one tick per object

        def sink(document: LoadedDocument, text: str = "") -> None:
            checker.add(document, text)
            on_document()

    loaded = load_task(task, sink)
    if checker.missed_annotation:
        return lint_loaded(load_task(task), job)
    return checker.finish(loaded)


def lint_loaded(loaded: LoadResult, job: LintJob, *, trusted: bool = False) -> FileLinted:
    """Model and check what was loaded from one file (or stdin), or one cluster read
    (`trusted`: the API server stored the objects, so field names are its to judge)."""
    checker = _Checker(job, keep=True, trusted=trusted)
    for document in loaded.documents:
        checker.add(document)
    return checker.finish(loaded)


class _Checker:
    """One file's checks, document by document (see `lint_file`)."""

    def __init__(self, job: LintJob, *, keep: bool, trusted: bool = False) -> None:
        self.job = job
        self.keep = keep
        self.trusted = trusted
        self.out = FileLinted()
        self.modelled = Objects()
        """The model's findings and counts; its objects are dropped after each document."""
        self.found: list[Finding] = []
        self.kept: list[LoadedDocument] = []
        self.files: dict[str | None, None] = {}
        self.keep_file: dict[str | None, bool] = {}
        self.missed_annotation = False

    def add(self, document: LoadedDocument, text: str = "") -> None:
        out, job, modelled = self.out, self.job, self.modelled
        model_document(modelled, document, trusted=self.trusted)
        for slice_ in modelled.slices:
            if job.slices:
                self.found += check_slice(slice_, options=job.options)
            if job.pools:
                out.pool_slices.append(pool_entry(slice_))
        modelled.slices.clear()
        modelled.claims.clear()
        modelled.classes.clear()
        if document.kind == "ResourceSlice":
            out.resource_slices += 1
            if job.cases:
                root = document.source.positions.get(())
                out.slice_cases.append((document.source.file, document_ref(document),
                                        root.line if root else None))
        file = document.source.file
        self.files.setdefault(file, None)
        if self.keep:
            self.kept.append(document)
            return
        if file not in self.keep_file:
            self.keep_file[file] = MARKER in text or ANNOTATION in text
        if self.keep_file[file]:
            self.kept.append(document)
        elif has_annotation(document):
            self.missed_annotation = True

    def finish(self, loaded: LoadResult) -> FileLinted:
        from ..sources.scalar_positions import resolve_inner_positions
        from .suppressions import written

        out = self.out
        out.input_findings = list(loaded.findings)
        out.usage_errors = list(loaded.usage_errors)
        out.files = loaded.files
        out.objects, out.skipped = self.modelled.objects, self.modelled.skipped
        out.model_findings = resolve_inner_positions(self.modelled.findings, loaded.texts)
        out.slice_findings = resolve_inner_positions(self.found, loaded.texts)
        out.document_files = list(self.files)
        names = [*out.document_files, *(loc.file for f in out.input_findings for loc in f.locations)]
        out.suppressions = written(self.kept, [n for n in names if n], loaded.texts)
        return out


_POOL_PREFIXES = {path[:end]: None for path in POOL_PATHS for end in range(len(path) + 1)}
"""`POOL_PATHS` and every prefix of them (the root included), built once, not per slice."""


def pool_entry(slice_: ResourceSlice) -> ResourceSlice:
    """The slice as the pool rules read it: no raw document, devices without attributes or
    capacity, positions only where pool findings point (`POOL_PATHS` and their prefixes, and
    each extractor's name)."""
    devices = tuple(Device(d.index, d.name, d.allow_multiple_allocations) for d in slice_.devices)
    source = slice_.source
    paths = dict(_POOL_PREFIXES)
    for e in slice_.sharing_affinity:
        name = ("spec", "sharingAffinity", e.index, "name")
        paths.update((name[:end], None) for end in range(len(name) + 1))
    return dataclasses.replace(slice_, raw={}, devices=devices, source=Source(
        file=source.file, document=source.document,
        positions=_pool_positions(source.positions, paths),
        key_positions=_pool_positions(source.key_positions, paths)))


def _sharing_devices(slice_: ResourceSlice, shared: dict[tuple[int, str, bool], Device]) -> ResourceSlice:
    """A pool entry whose devices are the run's one instance of each (index, name, sharing):
    slices of one generator name their devices alike, and 10,000 slices x 50 devices of their
    own were most of the pool index."""
    devices = tuple(shared.setdefault((d.index, d.name, d.allow_multiple_allocations), d)
                    for d in slice_.devices)
    return dataclasses.replace(slice_, devices=devices)


def _pool_positions(positions: Mapping[FieldPath, Position], paths: Iterable[FieldPath]
                    ) -> dict[FieldPath, Position]:
    return {path: at for path in paths if (at := positions.get(path)) is not None}


def lint_tasks(tasks: Sequence[FileTask], job: LintJob, jobs: int,
               on_document: Callable[[], None] | None = None) -> Iterator[FileLinted]:
    """Each task's result, in task order: here with one job, else in `jobs` worker processes
    (`on_document` is called for each object checked here, never from a worker).

    Workers are forked (they start with this process's imports: no second start-up) and take
    one file at a time, so a large file does not hold back a batch of small ones.
    """
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield lint_file(task, job, on_document)
        return
    import itertools
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        yield from pool.map(lint_file, tasks, itertools.repeat(job), chunksize=1)


def lint_plan(plan: Plan, job: LintJob, jobs: int,
              on_document: Callable[[], None] | None = None,
              yielded: dict[str, int] | None = None) -> Iterator[FileLinted]:
    """Every planned file checked, with what the walk reported before it, in input order;
    `yielded` counts, per argument, the objects and input findings its files gave."""
    tasks = plan.tasks
    for task, linted in zip(tasks, lint_tasks(tasks, job, jobs, on_document), strict=True):
        if task.before is not None:
            yield _walk_reports(task.before)
        if yielded is not None:
            yielded[task.argument] = yielded.get(task.argument, 0) + linted.objects \
                + len(linted.input_findings) + len(linted.usage_errors)
        yield linted
    yield _walk_reports(plan.after)


def pool_siblings(given: Sequence[FileLinted], tasks: Sequence[FileTask], job: LintJob,
                  jobs: int) -> list[FileLinted]:
    """The other slices of every pool that `given` holds, read from `tasks` (a walk of the
    repository, the given files left out): pool entries, and the suppressions of the files
    that hold them, nothing else.

    Why: a pre-commit hook is given the staged files only (after its `files:`/`exclude:`),
    but a pool's rules need every slice of it. The rest of the repository is read for those
    slices alone, so a file there that is no input at all (a Helm template the hook's
    `exclude:` left out) is neither reported nor counted, and a pool no given file touches is
    not checked.
    """
    touched = {s.pool for r in given for s in r.pool_slices}
    if not touched or not job.pools:
        return []
    entries_only = dataclasses.replace(job, slices=False, cases=False)
    found = []
    for linted in lint_tasks(tasks, entries_only, jobs):
        entries = [s for s in linted.pool_slices if s.pool in touched]
        if entries:
            found.append(FileLinted(pool_slices=entries, document_files=linted.document_files,
                                    suppressions=linted.suppressions))
    return found


def _walk_reports(loaded: LoadResult) -> FileLinted:
    return FileLinted(input_findings=list(loaded.findings), usage_errors=list(loaded.usage_errors),
                      files=loaded.files)


@dataclass(slots=True)
class Linted:
    """A whole run, merged from its files in input order: what the report and audit need."""

    findings: list[Finding]
    """Input errors, then model findings, then slice findings, then pool findings."""
    summary: Summary
    usage_errors: list[str]
    slice_cases: list[tuple[str | None, ObjectRef | None, int | None]]
    document_files: list[str | None]
    suppressions: list[Written]
    notes: list[str] = field(default_factory=list)
    resource_slices: int = 0
    empty_inputs: list[str] = field(default_factory=list)
    """Arguments that read as nothing (`inputs.warn_empty`)."""


def merge(results: Iterable[FileLinted], job: LintJob, *, complete_pools: bool,
          not_walked: dict[SkipReason, int] | None = None) -> Linted:
    """The run's findings (the pool rules run here, over every file's pool entries) and counts."""
    from ..policies.rules.engine import check_pools
    from .report import Summary

    inputs: list[Finding] = []
    model: list[Finding] = []
    slices: list[Finding] = []
    pool_slices: list[ResourceSlice] = []
    usage: list[str] = []
    cases: list[tuple[str | None, ObjectRef | None, int | None]] = []
    document_files: list[str | None] = []
    suppressions: list[Written] = []
    files = objects = skipped = resource_slices = 0
    shared: dict[tuple[int, str, bool], Device] = {}
    for r in results:
        inputs += r.input_findings
        model += r.model_findings
        slices += r.slice_findings
        pool_slices += (_sharing_devices(s, shared) for s in r.pool_slices)
        usage += r.usage_errors
        cases += r.slice_cases
        document_files += r.document_files
        if r.suppressions is not None:
            suppressions.append(r.suppressions)
        files, objects, skipped = files + r.files, objects + r.objects, skipped + r.skipped
        resource_slices += r.resource_slices
    pools = check_pools(pool_slices, job.options, complete_pools=complete_pools) if job.pools else []
    summary = Summary(files=files, objects=objects, skipped=skipped, not_walked=dict(not_walked or {}))
    return Linted([*inputs, *model, *slices, *pools], summary, usage, cases, document_files, suppressions,
                  resource_slices=resource_slices)
