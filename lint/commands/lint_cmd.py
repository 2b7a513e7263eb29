"""`dra-affinity lint`: the API server's checks and the scheduler's pool checks, before either.

Two layers: slice rules (SA…, one slice at a time, as the API server sees it) and
pool rules (SP3…, across every slice given, as the scheduler sees a pool).
`--pools-only` / `--no-pools` pick one. Input is files, directories, stdin, or a
live cluster (`--cluster`); the input helpers here are shared with `pools`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ...policies.core.findings import Finding, Severity
from ...policies.rules.base import Scope
from ...policies.rules.catalog import catalog
from ...policies.rules.engine import EngineOptions
from ...sources.walk import ExcludePatterns, WalkFilter
from ..file_lint import (
    FileLinted,
    Linted,
    LintJob,
    default_jobs,
    lint_loaded,
    lint_plan,
    merge,
    pool_siblings,
)
from ..inputs import (
    NO_PATH_EMPTY,
    Input,
    cluster_target,
    exclude_patterns,
    input_options,
    load_input,
    report_problems,
    stdin_is_terminal,
    warn_empty,
)
from ..options import (
    FormatCommand,
    ci_options,
    complete_pools_option,
    kubernetes_version_option,
    report_options,
    rule_selection_options,
    suppression_options,
)
from ..report import Report, Summary
from ..reporters import LINT_FORMATS, render_ci
from ..reporters.output import write_reports
from ..reporters.text_reporter import render as render_text
from ..reporters.text_reporter import summary_line
from ..settings import Params, ReportSettings, config_for, report_settings, resolved
from ..suppressions import audit_written

if TYPE_CHECKING:
    from ...sources.cluster import ClusterTarget
    from ...sources.loader import FileTask, Plan
    from ..config import OutputSpec
    from ..reporters.run import RunResult
    from ..suppressions import Audit

@dataclass(frozen=True, slots=True)
class Layers:
    """Which rule layers run: slice rules (SA1xx/SA2xx) and pool rules (SP3xx)."""

    slices: bool = True
    pools: bool = True

    def ran(self, rule_id: str, disabled: frozenset[str]) -> bool:
        """Whether `rule_id` was checked in a run with these layers (SA000 always is)."""

        rule = catalog().get(rule_id)
        if rule is None or rule_id in disabled:
            return False
        return {Scope.INPUT: True, Scope.SLICE: self.slices, Scope.POOL: self.pools}[rule.scope]


@dataclass(frozen=True, slots=True)
class LintSettings:
    """Everything one `lint` run uses, resolved from flags and config before it starts."""

    paths: tuple[str, ...]
    cluster: ClusterTarget | None
    report: ReportSettings
    options: EngineOptions
    layers: Layers = Layers()
    complete_pools: bool = False
    excludes: tuple[ExcludePatterns, ...] = ()
    """What directory walks leave out besides hidden and git-ignored entries (`--exclude`, `exclude:`)."""
    jobs: int = 1
    """Worker processes checking files (`--jobs`; the report is the same with any number)."""
    pools_from: tuple[str, ...] = ()
    """Directories the rest of each given file's pools is read from (`--pools-from`)."""


def lint_settings(ctx: click.Context, params: Params) -> LintSettings:
    """Flags > config > defaults for `lint`; usage and config errors are raised here, in the
    order users have always met them."""

    if params["pools_only"] and params["no_pools"]:
        raise click.UsageError("--pools-only and --no-pools exclude each other")
    paths = params["paths"]
    if params["pools_from"] and (params["no_pools"] or params["cluster"] or not paths):
        raise click.UsageError("--pools-from reads the rest of the pools of the FILES given: it needs "
                               "FILES, and neither --no-pools nor --cluster")
    target = cluster_target(paths, params["cluster"], params["kubeconfig"], params["kube_context"],
                            params["chunk_size"])
    enable, disable = params["enable"], params["disable"]
    known = list(catalog())
    for pattern in (*enable, *disable):
        if not any(r.startswith(pattern.upper()) for r in known):
            raise click.UsageError(f"{pattern!r} is neither a rule id nor the prefix of one "
                                   "(`dra-affinity rules` lists them)")
    config = config_for(params).with_rules(enable, disable)
    report = report_settings(ctx, params, config, command="lint", choices=LINT_FORMATS, default="text",
                             fail_on=True, strict=True, version=True)
    options = EngineOptions(kubernetes_version=report.kubernetes_version,
                            disabled_rules=config.disabled_rules(known))
    return LintSettings(paths, target, report, options,
                        Layers(slices=not params["pools_only"], pools=not params["no_pools"]),
                        complete_pools=params["complete_pools"] or target is not None,
                        excludes=exclude_patterns(params["excludes"], config),
                        jobs=params["jobs"] or default_jobs(), pools_from=params["pools_from"])


def run_lint(
    paths: tuple[str, ...],
    options: EngineOptions,
    *,
    layers: Layers = Layers(),
    complete_pools: bool = False,
    cluster: ClusterTarget | None = None,
) -> tuple[Report, list[str]]:
    """Load, model and check everything in `paths` (or the cluster), without suppressions
    (benchmarks, other callers); usage errors are returned."""
    linted = lint_input(paths, cluster, LintJob(options, layers.slices, layers.pools),
                        complete_pools=complete_pools or cluster is not None)
    return Report(tuple(linted.findings), linted.summary), linted.usage_errors


def check_input(
    inputs: Input, options: EngineOptions, *, layers: Layers = Layers(), complete_pools: bool = False
) -> tuple[list[Finding], Summary]:
    """Check loaded input (one batch, as `lint` checks one file): input errors always, then the
    selected layers; positions inside expressions are mapped to the file from the text kept."""
    from ...sources.loader import LoadResult

    job = LintJob(options, layers.slices, layers.pools)
    loaded = LoadResult(documents=inputs.documents, findings=inputs.findings, files=inputs.files,
                        texts=inputs.texts)
    linted = merge([lint_loaded(loaded, job)], job, complete_pools=complete_pools,
                   not_walked=inputs.not_walked)
    return linted.findings, linted.summary


def lint_input(
    paths: tuple[str, ...],
    cluster: ClusterTarget | None,
    job: LintJob,
    *,
    complete_pools: bool,
    walk: WalkFilter | None = None,
    jobs: int = 1,
    pools_from: Sequence[str] = (),
) -> Linted:
    """Files file by file (in `jobs` workers), or the cluster's slices as one batch; notes and
    usage errors included. Only what the report and the audit need is kept of any file.
    With `pools_from`, the pools of the files given are completed from those directories
    (`file_lint.pool_siblings`)."""
    from ...sources.loader import plan_paths

    if cluster is not None or stdin_is_terminal(paths):
        inputs = load_input(paths, cluster, walk)
        linted = merge([lint_loaded(inputs, job, trusted=cluster is not None)], job,
                       complete_pools=complete_pools)
        linted.notes = list(inputs.notes)
        return linted
    from ..terminal import Progress, verbose

    plan = plan_paths(list(paths) or ["-"], stdin=sys.stdin, walk=walk)
    yielded: dict[str, int] = {}
    verbose(f"{len(plan.tasks)} file(s) to check in {jobs} process(es)")
    with Progress(len(plan.tasks), "Checking files") as progress:

        def checked() -> Iterator[FileLinted]:
            for one in lint_plan(plan, job, jobs, progress.tick if progress.enabled else None,
                                 yielded):
                progress.advance(one.files)  # a walk's report counts no file
                yield one

        results: Iterable[FileLinted] = checked()
        if pools_from:
            given = list(results)
            results = [*given, *pool_siblings(given, _other_files(plan, pools_from, walk), job, jobs)]
        linted = merge(results, job, complete_pools=complete_pools, not_walked=plan.not_walked)
    if not paths and not linted.document_files and not linted.findings and not linted.usage_errors:
        linted.usage_errors.append(NO_PATH_EMPTY)
    if paths:
        unusable = {m.partition(": ")[0] for m in linted.usage_errors}
        linted.empty_inputs = warn_empty({a: yielded.get(a, 0) for a in plan.arguments
                                          if a not in unusable and a not in plan.repeated})
    return linted


def _other_files(given: Plan, directories: Sequence[str], walk: WalkFilter | None) -> list[FileTask]:
    """The files a walk of `directories` finds (skipping what `walk` skips), minus the given ones."""
    from ...sources.loader import plan_paths

    def identity(path: str) -> tuple[int, int] | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    read = {identity(t.path) for t in given.tasks if t.path is not None}
    plan = plan_paths(list(directories), walk=WalkFilter(excludes=walk.excludes if walk else ()))
    return [t for t in plan.tasks if t.path is not None and identity(t.path) not in read]


@click.command("lint", cls=FormatCommand)
@input_options
@report_options(LINT_FORMATS, "text")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="error",
              show_default=True, help="Lowest severity that makes the exit code 1.")
@ci_options
@suppression_options
@rule_selection_options
@click.option("--pools-only", is_flag=True, help="Run only the pool rules (SP301–SP306).")
@click.option("--no-pools", is_flag=True,
              help="Skip the pool rules: check each slice alone, as the API server does.")
@complete_pools_option
@click.option("--pools-from", "pools_from", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False),
              help="Read the rest of each pool the FILES hold from DIR (walked as a directory "
                   "argument is); only those pools are checked, and nothing else found there is "
                   "reported. For pre-commit's pool hook, which is given the staged files.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="Check files in N worker processes (default: the cores available to this "
                   "process); the report is the same with any N.")
@kubernetes_version_option
@resolved(lint_settings)
def lint(settings: LintSettings) -> None:
    """Lint ResourceSlices in files, directories (recursively: *.yaml, *.yml, *.json), stdin (-)
    or a live cluster (--cluster).

    Multi-document YAML, JSON and `kubectl get -o yaml` List dumps are read; objects of
    other kinds are skipped and counted. Slice rules check each slice alone; pool rules
    check each pool (driver, pool name) across everything given. Every finding names
    file:line:column, the field path, the object and its pool; a pool finding names
    every slice involved. Findings can be suppressed, with a reason, by a
    `# dra-affinity: ignore RULE -- reason` comment, a `dra-affinity.io/ignore`
    annotation or the config file's `ignore:` list.

    Exit code 0 when no finding is at or above --fail-on; 1 when one is; 2 on usage errors,
    an unreadable path or config, a report that cannot be written, or (with
    --fail-if-no-resources) no ResourceSlice in the input.
    """

    run = settings.report
    ci = any(spec.format not in ("text", "json") for spec in run.outputs)
    job = LintJob(settings.options, settings.layers.slices, settings.layers.pools, cases=ci)
    linted = lint_input(settings.paths, settings.cluster, job, complete_pools=settings.complete_pools,
                        walk=WalkFilter(excludes=settings.excludes), jobs=settings.jobs,
                        pools_from=settings.pools_from)
    report_problems("lint", Input(usage_errors=linted.usage_errors, notes=linted.notes))
    if linted.usage_errors and (settings.cluster is not None or not settings.paths):
        sys.exit(2)  # nothing was read (the cluster, or stdin with no PATH): no report to print
    disabled = settings.options.disabled_rules
    checked = audit_written(linted.findings, linted.suppressions, linted.document_files, run.config,
                            disabled=disabled, ran=lambda rule: settings.layers.ran(rule, disabled))
    report = Report(checked.findings, linted.summary)
    failures = write_lint_reports(run.outputs, report, checked, linted, threshold=run.threshold,
                                  show_suppressed=run.show_suppressed)
    for message in failures:
        click.echo(f"dra-affinity lint: {message}", err=True)
    if linted.usage_errors or failures:
        sys.exit(2)
    if run.fail_if_no_resources and not linted.resource_slices:
        click.echo("dra-affinity lint: no ResourceSlice in the input (--fail-if-no-resources)", err=True)
        sys.exit(2)
    if run.fail_if_no_resources and linted.empty_inputs:
        click.echo(f"dra-affinity lint: {', '.join(linted.empty_inputs)}: nothing read "
                   "(--fail-if-no-resources)", err=True)
        sys.exit(2)
    sys.exit(1 if any(f.severity >= run.threshold for f in report.findings) else 0)


def write_lint_reports(
    specs: Sequence[OutputSpec],
    report: Report,
    checked: Audit,
    inputs: Linted,
    *,
    threshold: Severity,
    show_suppressed: bool,
) -> list[str]:
    """Render each requested format once and write it; return what could not be written."""

    run: list[RunResult] = []

    def render(name: str) -> str:
        if name == "text":
            return render_text(report, checked.suppressed, show_suppressed)
        if name == "json":
            from ..reporters.json_reporter import render as render_json

            return render_json(report, checked.suppressed, show_suppressed)
        if not run:
            run.append(lint_run(report, checked, inputs, threshold=threshold,
                                show_suppressed=show_suppressed))
        return render_ci(name, run[0])

    return write_reports(specs, render)


def lint_run(
    report: Report, checked: Audit, inputs: Linted, *, threshold: Severity, show_suppressed: bool
) -> RunResult:
    """The lint run as the CI formats see it: one JUnit case per slice, findings, notes."""
    from ..reporters.junit_reporter import object_cases
    from ..reporters.run import Notification, RunResult

    findings = report.sorted()
    return RunResult(
        command="lint",
        findings=findings,
        cases=object_cases("dra-affinity lint", inputs.slice_cases, findings, checked.suppressed,
                           threshold),
        suppressed=checked.suppressed,
        show_suppressed=show_suppressed,
        notifications=(*(Notification("error", m) for m in inputs.usage_errors),
                       *(Notification("warning", m) for m in inputs.notes)),
        summary=summary_line(report, checked.suppressed),
        threshold=threshold,
    )
