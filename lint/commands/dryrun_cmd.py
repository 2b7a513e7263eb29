"""`dra-affinity dry-run`: what the scheduler's extraction makes of real claims."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _string
from typing import TYPE_CHECKING, Any

import click

from ...policies.core import layers
from ...policies.core.cache import BoundedCache, text_weight
from ...policies.core.findings import Finding, Location, PoolRef, Severity
from ...policies.core.gc_pause import gc_paused
from ...policies.rules.base import Scope
from ...policies.rules.catalog import catalog
from ...policies.scheduler.diagnostics import describe
from ...policies.scheduler.dryrun import DryRun, Filters, new_dry_run
from ...policies.scheduler.extraction import ExtractionResult, Outcome
from ...sources.walk import WalkFilter
from ..inputs import (
    cluster_target,
    exclude_patterns,
    load_cluster_input,
    load_input,
    model_objects,
    report_problems,
)
from ..json_text import ELEMENT_NEWLINE, members_text
from ..options import (
    FormatCommand,
    ci_options,
    cluster_options,
    exclude_option,
    kubernetes_version_option,
    report_options,
    suppression_options,
)
from ..report import position_order
from ..reporters import render_ci
from ..reporters.json_reporter import finding_to_json, kubernetes_to_json, suppressed_to_json
from ..reporters.output import emit, to_stdout, write_reports
from ..reporters.run import ExtraRule, Notification, RunResult, TestCase
from ..settings import Params, ReportSettings, config_for, report_settings, resolved
from ..suppressions import audit
from ..values import json_value

if TYPE_CHECKING:
    from ...policies.model.resources import ResourceClaim
    from ...policies.scheduler.pools import Pool
    from ...sources.cluster import ClusterTarget
    from ...sources.walk import ExcludePatterns
    from ..config import Config
    from ..inputs import Input, Objects
    from ..reporters.run import RunResult
    from ..suppressions import Audit, Suppressed

FAILING = frozenset({Outcome.SLICE_ERROR, Outcome.CLAIM_INCONSISTENT, Outcome.SELECTOR_ERROR})
"""Authoring errors: a slice, a claim or a DeviceClass must change. `not-satisfied` and
`no-matching-device` are normal outcomes."""


def result_to_json(result: ExtractionResult) -> dict[str, Any]:
    """SPEC §7 (`results[]`), extended with the evaluations and the configs in scope."""
    return {**_result_head(result), **_result_tail(result)}


def _result_head(result: ExtractionResult) -> dict[str, Any]:
    """The members that name the claim request and pool (per result; `spliced_result_text` writes
    them by hand, and tests/lint/commands/test_dryrun.py
    (`test_result_text_is_the_json_modules_text_of_the_result`) compares the two)."""
    return {"claim": result.claim, "request": result.request,
            "pool": {"driver": result.pool.driver, "name": result.pool.name}}


def _result_tail(result: ExtractionResult) -> dict[str, Any]:
    """The members after the pool: what was decided, the same for every claim whose plan
    item it is (`PlanSharingDryRun` relabels one shared result per claim and pool)."""
    error = result.error
    return {
        "outcome": result.outcome.value,
        "affinity": dict(result.affinity) if result.affinity is not None else None,
        "unsatisfied": list(result.unsatisfied),
        "error": None if error is None else {
            "kind": error.kind, "extractor": error.extractor, "config": error.config,
            "message": error.message,
        },
        "configs": list(result.configs),
        "notes": list(result.notes),
        "evaluations": [
            {"extractor": e.extractor, "config": e.config, "value": json_value(e.value),
             "type": e.type or None,
             "runtimeCost": e.runtime_cost,
             "error": None if e.error_kind is None else {"kind": e.error_kind, "message": e.error}}
            for e in result.evaluations
        ],
    }


_TAILS: BoundedCache[tuple[object, ...], tuple[str, object, object, object]] = BoundedCache(
    "lint.dry-run.result-tails", 4096, lru=False, max_bytes=32 << 20,
    weigh=lambda key, entry: text_weight((entry[0],)))
"""The rendered text of `_result_tail`, by the tail's parts: the affinity, error and evaluations
by identity (a relabelled result shares its plan item's objects; the entry holds them, so an
id in a live key is never another object's), the rest by value. On a cluster whose pools publish the same
extractors, results share one extraction per affinity value, so distinct tails are few next to
results (docs/performance.md gives the counts); hits are
lock-free. Bounded in bytes too (the text, and about as much again for the objects it was
rendered from): a claim's evaluations can carry large values."""


RESULT_TEXT = layers.declare(
    "dry-run-result-text",
    "`dry-run --format json` writes a result per claim and pool, and the claims that read alike "
    "share what their plan decided: the members after the pool are rendered once per shared "
    "result (`_TAILS`) and spliced after the claim, request and pool",
)


def result_text(result: ExtractionResult, newline: str = ELEMENT_NEWLINE) -> str:
    """`result_to_json(result)` as `json.dumps(..., indent=2)` writes it where a line break is
    `newline` (an element of the report's `results`)."""
    # json.dumps never writes a raw line break inside a string: every one is indentation
    return json.dumps(result_to_json(result), indent=2).replace("\n", newline)


def result_writer() -> Callable[[ExtractionResult], str]:
    """What renders each result of a report: `result_text`, or with `RESULT_TEXT` on (asked once
    per report, not per result) `spliced_result_text`, which writes the same text."""
    return spliced_result_text if RESULT_TEXT.on else result_text


def spliced_result_text(result: ExtractionResult, newline: str = ELEMENT_NEWLINE) -> str:
    """`result_text`, the members after the pool rendered once per shared result (`_TAILS`)."""
    key = (newline, result.outcome, id(result.affinity), id(result.error), id(result.evaluations),
           result.unsatisfied, result.configs, result.notes)
    found = _TAILS.get(key)
    if found is None:
        found = (members_text(_result_tail(result).items(), newline),
                 result.affinity, result.error, result.evaluations)
        _TAILS.put(key, found)
    inner = newline + "  "
    pool = inner + "  "
    return (f'{{{inner}"claim": {_string(result.claim)},{inner}"request": {_string(result.request)},'
            f'{inner}"pool": {{{pool}"driver": {_string(result.pool.driver)},{pool}"name": '
            f'{_string(result.pool.name)}{inner}}},{inner}{found[0]}{newline}}}')


def _detail(result: ExtractionResult) -> str:
    if result.outcome is Outcome.OK and result.affinity is not None:
        return ", ".join(f"{k}={v}" for k, v in result.affinity.items())
    if result.outcome is Outcome.NOT_SATISFIED:
        return "no value for: " + ", ".join(result.unsatisfied)
    if result.error is not None:
        return result.error.message
    if result.outcome is Outcome.POOL_INCOMPLETE:
        return "; ".join(result.notes) or "pool incomplete"
    if result.outcome is Outcome.NOT_APPLICABLE:
        return "pool declares no sharingAffinity: any claim may share its devices"
    if result.outcome is Outcome.NO_MATCHING_DEVICE:
        return "; ".join(result.notes)
    return ""


def render_table(results: list[ExtractionResult]) -> str:
    rows = [("CLAIM", "REQUEST", "POOL", "OUTCOME", "DETAIL")]
    rows += [(r.claim, r.request, f"{r.pool.driver}/{r.pool.name}", r.outcome.value, _detail(r))
             for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4]
        for row in rows
    )


def explain(results: list[ExtractionResult]) -> str:
    """Every step for one claim, in words (the KEP's troubleshooting walk-through)."""

    lines: list[str] = []
    for r in results:
        lines.append(f"Claim {r.claim}, request {r.request!r}, pool {r.pool.driver}/{r.pool.name}:")
        if r.outcome is Outcome.NOT_APPLICABLE:
            lines.append("  1. The pool declares no sharingAffinity: no CEL runs, every device is viable.")
            continue
        if r.outcome is Outcome.POOL_INCOMPLETE:
            lines.append(f"  1. The pool is incomplete ({'; '.join(r.notes)}); the scheduler skips it.")
            continue
        if r.outcome is Outcome.SELECTOR_ERROR:
            lines.append(f"  1. Matching the pool's devices: {r.error.message if r.error else ''}.")
            lines.append("  => selector error: the scheduler aborts scheduling of the pod; fix the selector "
                         "(guard the attribute with has() or `in`)")
            continue
        if r.outcome is Outcome.NO_MATCHING_DEVICE:
            class_step, *exclusions = r.notes
            lines.append(f"  1. Devices of the pool: {class_step}.")
            for n, note in enumerate(exclusions, start=2):
                lines.append(f"  {n}. Of those, {note.removeprefix('request ')}.")
            lines.append("  => no device of the pool passes the request's selectors: the scheduler does "
                         "not consider it for this request (no extractor runs)")
            continue
        scope = ", ".join(f"config[{i}]" for i in r.configs) or "none"
        lines.append(f"  1. Opaque configs of driver {r.pool.driver} in scope for the request: {scope}.")
        if not r.evaluations and r.error is not None:
            lines.append(f"  2. Before any evaluation: {r.error.message}")
        for n, e in enumerate(r.evaluations, start=2):
            if e.error_kind:
                what = f"failed: {e.error_kind}: {e.error}"
            elif e.value == "":
                what = 'returned "" (declines this config)'
            else:
                what = f"returned {json.dumps(json_value(e.value))}"
            lines.append(f"  {n}. Extractor {e.extractor!r} on config[{e.config}] {what} "
                         f"(runtime cost {e.runtime_cost}).")
        verdict = {
            Outcome.OK: "every extractor is satisfied; affinity map "
                        + json.dumps(dict(r.affinity or {})),
            Outcome.NOT_SATISFIED: "not satisfied (strict gating) for keys "
                                   + ", ".join(r.unsatisfied),
            Outcome.CLAIM_INCONSISTENT: "the claim is self-inconsistent: "
                                        + (r.error.message if r.error else ""),
            Outcome.SLICE_ERROR: f"slice error ({r.error.kind if r.error else ''}): the scheduler "
                                 "aborts scheduling of the pod",
        }[r.outcome]
        lines.append(f"  => {verdict}")
        if r.outcome.diagnostic is not None:
            lines.append(f"     ({describe(r.outcome.diagnostic)})")
    return "\n".join(lines) if lines else "no results for that claim"


class OutcomeCounts:
    """How many (claim request, pool) results had each outcome, per pool and in total."""

    def __init__(self) -> None:
        self.total = 0
        self._by_pool: dict[PoolRef, dict[Outcome, int]] = {}
        self._tallied: dict[int, list[Any]] = {}
        """id(outcome sequence) -> [the sequence, how many claim requests had it]."""

    def tally(self, outcomes: Sequence[tuple[PoolRef, Outcome]]) -> None:
        """One claim request's (pool, outcome) sequence (`RequestResults.outcomes`, one object per
        claim request or shared by those that read alike: counted per distinct sequence, spread
        over the pools when read)."""
        self.total += len(outcomes)
        entry = self._tallied.get(id(outcomes))
        if entry is None:
            self._tallied[id(outcomes)] = [outcomes, 1]
        else:
            entry[1] += 1

    @property
    def by_pool(self) -> dict[PoolRef, dict[Outcome, int]]:
        for outcomes, n in self._tallied.values():
            for ref, outcome in outcomes:
                pool = self._by_pool.setdefault(ref, {})
                pool[outcome] = pool.get(outcome, 0) + n
        self._tallied.clear()
        return self._by_pool

    def outcomes(self) -> dict[Outcome, int]:
        out: dict[Outcome, int] = {}
        for pool in self.by_pool.values():
            for outcome, n in pool.items():
                out[outcome] = out.get(outcome, 0) + n
        return {o: out[o] for o in Outcome if o in out}

    def to_json(self) -> dict[str, Any]:
        return {"results": self.total, "outcomes": {o.value: n for o, n in self.outcomes().items()},
                "pools": [{"pool": {"driver": ref.driver, "name": ref.name},
                           "outcomes": {o.value: pool[o] for o in Outcome if o in pool}}
                          for ref, pool in sorted(self.by_pool.items())]}

    def render(self) -> str:
        rows = [("POOL", "RESULTS", "OUTCOMES")]
        for ref, pool in sorted(self.by_pool.items()):
            rows.append((f"{ref.driver}/{ref.name}", str(sum(pool.values())),
                         ", ".join(f"{o.value} {pool[o]}" for o in Outcome if o in pool)))
        totals = ", ".join(f"{o.value} {n}" for o, n in self.outcomes().items())
        rows.append(("total", str(self.total), totals))
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        return "\n".join(f"{r[0].ljust(widths[0])}  {r[1].rjust(widths[1])}  {r[2]}" for r in rows)


DRY_RUN_FORMATS = ("text", "json", "sarif", "junit", "github")
"""The formats of lint and test: `text` is the table (`table`, its former name, is accepted)."""


@dataclass(frozen=True, slots=True)
class DryRunSettings:
    """Everything one `dry-run` uses, resolved from flags and config before it starts."""

    paths: tuple[str, ...]
    cluster: ClusterTarget | None
    report: ReportSettings
    filters: Filters
    explain: bool
    summary: bool = False
    only_failing: bool = False
    excludes: tuple[ExcludePatterns, ...] = ()


def dry_run_settings(ctx: click.Context, params: Params) -> DryRunSettings:
    """Flags > config > defaults for `dry-run`."""
    target = cluster_target(params["paths"], params["cluster"], params["kubeconfig"],
                            params["kube_context"], params["chunk_size"])
    config = config_for(params)
    report = report_settings(ctx, params, config, command="dry-run", choices=DRY_RUN_FORMATS,
                             default="text", strict=True, version=True)
    explain_claim = params["explain_claim"]
    if explain_claim and params["claim"] and explain_claim != params["claim"]:
        raise click.UsageError("--explain names the claim to explain; --claim with another claim "
                               "contradicts it")
    filters = Filters(claim=explain_claim or params["claim"], pool=params["pool"],
                      request=params["request_name"])
    return DryRunSettings(params["paths"], target, report, filters, explain=bool(explain_claim),
                          summary=params["summary"], only_failing=params["only_failing"],
                          excludes=exclude_patterns(params["excludes"], config))


@click.command("dry-run", cls=FormatCommand)
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@exclude_option
@cluster_options
@report_options(DRY_RUN_FORMATS, "text")
@ci_options
@suppression_options
@click.option("--claim", metavar="NS/NAME",
              help="Only this claim (a bare name means namespace default).")
@click.option("--pool", metavar="POOL", help="Only this pool (driver/name, or name).")
@click.option("--request", "request_name", help="Only this request (or sub-request parent/sub).")
@click.option("--explain", "explain_claim", metavar="CLAIM",
              help="Print every step for one claim (namespace/name) in words.")
@click.option("--summary", is_flag=True,
              help="Outcome counts per pool and in total, and the results of non-ok outcomes only "
                   "(ok results are counted, not kept): for large inputs.")
@click.option("--only-failing", is_flag=True,
              help="Only the results whose outcome is not ok or not-applicable (ok results are not kept).")
@kubernetes_version_option
@resolved(dry_run_settings)
def dry_run(settings: DryRunSettings) -> None:
    """Run the pools' extractors against the claims' opaque configs, as the scheduler would.

    PATHS hold ResourceSlices, ResourceClaims / ResourceClaimTemplates and (optionally)
    DeviceClasses, in any files; objects are told apart by kind. --cluster reads the
    cluster's ResourceSlices, DeviceClasses and ResourceClaims instead. For every claim ×
    request × pool of the class's driver, prints the outcome (ok, not-satisfied,
    claim-inconsistent, slice-error, not-applicable, pool-incomplete, no-matching-device,
    selector-error), the affinity map or the error.

    Exit code 0 when no result fails; 1 when an authoring error (slice-error,
    claim-inconsistent, selector-error) or an input error (a request naming a DeviceClass
    not in the input, too) is found (with --strict, an input warning too); 2 on usage errors,
    unreadable input or a report that cannot be written, and when a
    --claim/--pool/--request/--explain filter matches nothing.
    """

    config, specs = settings.report.config, settings.report.outputs
    threshold, show = settings.report.threshold, settings.report.show_suppressed
    if settings.cluster is not None:
        loaded = load_cluster_input(settings.cluster)
        report_problems("dry-run", loaded)
        if loaded.usage_errors:
            sys.exit(2)  # the cluster could not be read: no report to print
        inputs = model_objects(loaded, trusted=True)
    else:
        loaded = load_input(settings.paths, walk=WalkFilter(excludes=settings.excludes))
        inputs = model_objects(loaded)
    for message in inputs.usage_errors:
        click.echo(f"dra-affinity dry-run: {message}", err=True)
    if inputs.usage_errors and not settings.paths:
        sys.exit(2)  # no PATH and nothing on stdin: nothing was read, no report to print
    kubernetes_version = settings.report.kubernetes_version
    dry = new_dry_run(inputs.slices, inputs.claims, inputs.classes, kubernetes_version=kubernetes_version,
                      filters=settings.filters)
    if not inputs.usage_errors and _report_unmatched(settings, inputs, dry.pools):
        sys.exit(2)
    counts = OutcomeCounts()
    drained = _drain(dry, counts, quiet=settings.summary or settings.only_failing)
    if _streams_json(settings):
        sys.exit(_stream_json(settings, loaded, inputs, drained, dry.findings, counts))
    with gc_paused():  # the drain only collects and counts: nothing is rendered in the pause
        results = list(drained)
    checked, findings = _audited(config, [*inputs.findings, *dry.findings], loaded)
    if settings.explain:
        emit("dry-run", explain(results), specs[0].output if len(specs) == 1 else None)
        failures: list[str] = []
    else:

        def render(name: str) -> str:
            if name == "json":

                data: dict[str, Any] = {"results": [result_to_json(r) for r in results],
                                        "findings": [finding_to_json(f) for f in findings]}
                if settings.summary:
                    data["summary"] = counts.to_json()
                if show:
                    data["suppressed"] = [suppressed_to_json(s) for s in checked.suppressed]
                data["kubernetes"] = kubernetes_to_json(kubernetes_version)
                return json.dumps(data, indent=2)
            if name == "text":
                table = render_table(results) if results else (
                    "no result other than ok" if counts.total else "no claim requests matched any pool")
                return f"{table}\n\n{counts.render()}" if settings.summary else table

            return render_ci(name, dry_run_result(results, findings, checked.suppressed, dry.pools,
                                                  inputs.claims, threshold=threshold, show_suppressed=show,
                                                  usage_errors=inputs.usage_errors))

        failures = write_reports(specs, render)
    for message in failures:
        click.echo(f"dra-affinity dry-run: {message}", err=True)
    if inputs.usage_errors or failures:
        sys.exit(2)
    no_results = not counts.total
    if settings.report.fail_if_no_resources and no_results:
        click.echo("dra-affinity dry-run: no claim request met a pool (--fail-if-no-resources)", err=True)
        sys.exit(2)
    failed = any(r.outcome in FAILING for r in results) or any(f.severity >= threshold for f in findings)
    sys.exit(1 if failed else 0)


def _rule_ids() -> list[str]:

    return list(catalog())


def _input_rule(rule_id: str) -> bool:
    """dry-run checks input only (SA0xx); a slice-rule suppression is `lint`'s business."""

    rule = catalog().get(rule_id)
    return rule is not None and rule.scope is Scope.INPUT


OUTCOME_RULES = {
    Outcome.SLICE_ERROR: ExtraRule(
        id="dry-run/slice-error", slug="slice-error", severity=Severity.ERROR,
        summary="an extractor fails on a claim's config: the scheduler aborts scheduling of the pod",
        description="The CEL evaluation failed (missing field, non-string result, cost exceeded) or the "
                    "pool is invalid; every pod whose claim reaches this pool is blocked. Fix the "
                    "extractor (guard the field) or the config."),
    Outcome.SELECTOR_ERROR: ExtraRule(
        id="dry-run/selector-error", slug="selector-error", severity=Severity.ERROR,
        summary="a DeviceClass or request selector fails on a device: the scheduler aborts the pod",
        description="The allocator evaluates the class's and the request's CEL selectors on every device; "
                    "an error (a missing attribute read without has(), a non-bool result, the cost limit) "
                    "aborts the pod instead of skipping the device. Guard the attribute (`has(...)`, "
                    "`\"x\" in device.attributes[...]`) or fix the selector."),
    Outcome.CLAIM_INCONSISTENT: ExtraRule(
        id="dry-run/claim-inconsistent", slug="claim-inconsistent", severity=Severity.ERROR,
        summary="the claim's configs give one key two different values for a request",
        description="Two opaque configs in scope for the request extract different values for the same "
                    "key; the scheduler cannot pick one, so the claim cannot be allocated."),
    Outcome.NO_MATCHING_DEVICE: ExtraRule(
        id="dry-run/no-matching-device", slug="no-matching-device", severity=Severity.INFO,
        summary="a pool of the class's driver has no device passing the request's own selectors",
        description="Devices of the pool pass the DeviceClass's selectors, but the request's selectors "
                    "exclude every one of them, so the scheduler never considers the pool for the "
                    "request and no extractor runs there. A note, not a failure: say which selector "
                    "excluded how many devices, in case the pool was meant to serve the request."),
}
"""The outcomes the CI formats (SARIF, GitHub, JUnit) carry as located results: the failing ones
as errors, `no-matching-device` as a note (it fails nothing, but a user expecting the pool to be
used needs to see it where the review happens)."""


def _report_unmatched(settings: DryRunSettings, inputs: Objects, pools: Mapping[PoolRef, Pool]) -> bool:
    """Say on stderr which --claim/--pool/--request/--explain filter matched nothing."""
    unmatched = settings.filters.unmatched(inputs.claims, pools)
    for name, message in unmatched:
        option = "--explain" if settings.explain and name == "claim" else f"--{name}"
        click.echo(f"dra-affinity dry-run: {option}: {message}", err=True)
    return bool(unmatched)


def _audited(config: Config, found: list[Finding], loaded: Input) -> tuple[Audit, list[Finding]]:
    """The run's findings after the config and suppressions, in position order, echoed to stderr."""
    from ..reporters.text_reporter import finding_line

    disabled = config.disabled_rules(_rule_ids())
    checked = audit(found, loaded.documents, config, texts=loaded.texts,
                    disabled=disabled, ran=lambda rule: _input_rule(rule) and rule not in disabled)
    findings = sorted(checked.findings, key=position_order)
    for finding in findings:
        click.echo(finding_line(finding), err=True)
    return checked, findings


def _drain(dry: DryRun, counts: OutcomeCounts, *, quiet: bool) -> Iterator[ExtractionResult]:
    """The run, as every view reads it: each claim request's outcomes counted into `counts`, its
    results handed on as they are decided (with `quiet`, only those whose outcome is not
    `QUIET`: `--summary` and `--only-failing` count the rest without keeping them)."""
    for request in dry.requests():
        counts.tally(request.outcomes)
        yield from request.results(quiet=quiet)


def _streams_json(settings: DryRunSettings) -> bool:
    """Every result as JSON and nothing else: written as it is decided (a 10,000-claim
    cluster gives ~390 MB of JSON, which must not be held as objects and text first)."""
    specs = settings.report.outputs
    return (len(specs) == 1 and specs[0].format == "json" and not settings.explain
            and not settings.summary and not settings.only_failing)


def _stream_json(settings: DryRunSettings, loaded: Input, inputs: Objects,
                 drained: Iterator[ExtractionResult], found: Sequence[Finding], counts: OutcomeCounts) -> int:
    """`dry-run --format json`, streamed: the document json.dumps would give, the results
    written one by one as `drained` gives them and the findings (`found`, complete once the
    results are) after them. Returns the exit code, decided as for the other formats."""
    from ..json_text import Rendered, write_members

    config, spec = settings.report.config, settings.report.outputs[0]
    failed = False
    findings: list[Finding] = []

    def results() -> Iterator[str]:
        nonlocal failed
        text = result_writer()
        for result in drained:
            failed = failed or result.outcome in FAILING
            yield text(result)

    def members() -> Iterator[tuple[str, Any]]:
        yield "results", Rendered(results())
        checked, audited = _audited(config, [*inputs.findings, *found], loaded)
        findings.extend(audited)
        yield "findings", [finding_to_json(f) for f in findings]
        if settings.report.show_suppressed:
            yield "suppressed", [suppressed_to_json(s) for s in checked.suppressed]
        yield "kubernetes", kubernetes_to_json(settings.report.kubernetes_version)

    try:
        if to_stdout(spec):
            write_members(members(), sys.stdout.write)
            sys.stdout.write("\n")
            sys.stdout.flush()
        else:
            assert spec.output is not None
            with open(spec.output, "w", encoding="utf-8") as out:
                write_members(members(), out.write)
                out.write("\n")
    except OSError as error:
        click.echo(f"dra-affinity dry-run: {spec.output}: cannot write the json report: "
                   f"{error.strerror or error}", err=True)
        return 2
    if inputs.usage_errors:
        return 2  # reported on stderr before the run
    if settings.report.fail_if_no_resources and not counts.total:
        click.echo("dra-affinity dry-run: no claim request met a pool (--fail-if-no-resources)", err=True)
        return 2
    threshold = settings.report.threshold
    return 1 if failed or any(f.severity >= threshold for f in findings) else 0


def dry_run_result(
    results: Sequence[ExtractionResult],
    findings: Sequence[Finding],
    suppressed: Sequence[Suppressed],
    pools: Mapping[PoolRef, Pool],
    claims: Sequence[ResourceClaim],
    *,
    threshold: Severity,
    show_suppressed: bool,
    usage_errors: Sequence[str] = (),
) -> RunResult:
    """The dry-run as the CI formats see it: failing outcomes as located results, a case per result."""
    from ..reporters.junit_reporter import object_cases

    by_name = {c.qualified_name: c for c in claims}
    outcome_findings = [_outcome_finding(r, by_name.get(r.claim), pools.get(r.pool))
                        for r in results if r.outcome in OUTCOME_RULES]
    failing = sum(r.outcome in FAILING for r in results)
    cases = [
        TestCase(
            suite="dry-run", classname=r.claim, name=f"request {r.request} on {r.pool.driver}/{r.pool.name}",
            file=(by_name[r.claim].source.file if r.claim in by_name else None),
            failures=((f"{r.outcome.value}: {_detail(r)}",) if r.outcome in FAILING else ()),
            output=((f"{r.outcome.value}: {_detail(r)}",) if r.outcome not in FAILING else ()),
        )
        for r in results
    ]
    cases += object_cases("dry-run input", (), findings, suppressed, threshold)
    everything = sorted([*findings, *outcome_findings], key=position_order)
    return RunResult(
        command="dry-run",
        findings=tuple(everything),
        cases=tuple(cases),
        suppressed=tuple(suppressed),
        show_suppressed=show_suppressed,
        extra_rules=tuple(OUTCOME_RULES.values()),
        notifications=tuple(Notification("error", m) for m in usage_errors),
        summary=f"{len(results)} results, {failing} failing "
                f"(slice-error, claim-inconsistent, selector-error), {len(findings)} input findings",
        threshold=threshold,
    )


def _outcome_finding(result: ExtractionResult, claim: ResourceClaim | None, pool: Pool | None) -> Finding:
    """An outcome the CI formats carry, located at the extractor (slice error) or the claim's config
    (its requests for a selector outcome), with the other."""

    error = result.error
    claim_loc: Location | None = None
    if claim is not None:
        path: tuple[str | int, ...] = (*claim.spec_path, "devices", "config")
        if result.outcome in (Outcome.SELECTOR_ERROR, Outcome.NO_MATCHING_DEVICE):
            path = (*claim.spec_path, "devices", "requests")
        elif error is not None and error.config is not None:
            path = (*path, error.config)
        claim_loc = Location.at(claim.source, path, claim.ref)
    slice_loc: Location | None = None
    name = error.extractor if error is not None else None
    if pool is not None and name is not None and name in pool.extractors:
        extractor, owner = pool.extractors[name]
        slice_loc = Location.at(owner.source, ("spec", "sharingAffinity", extractor.index, "expression"),
                                owner.ref)
    ordered = (slice_loc, claim_loc) if result.outcome is Outcome.SLICE_ERROR else (claim_loc, slice_loc)
    locations = tuple(loc for loc in ordered if loc is not None)
    return Finding(
        rule=OUTCOME_RULES[result.outcome].id,
        severity=OUTCOME_RULES[result.outcome].severity,
        message=f"claim {result.claim} request {result.request!r} on pool {result.pool.driver}/"
                f"{result.pool.name}: {result.outcome.value}: {_detail(result)}",
        locations=locations,
        pool=result.pool,
    )
