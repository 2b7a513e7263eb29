"""`dra-affinity test SUITE...`: expected extraction outcomes, checked on every change (CI)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ...policies.core.features import SHARING_AFFINITY, FeatureGateError, FeatureGates
from ...policies.core.findings import Finding, Location, Severity
from ...policies.core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    parse_kubernetes_version,
)
from ...policies.core.source import Position, Source
from ...policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from ...policies.scheduler.dryrun import Filters, dry_run
from ...policies.scheduler.extraction import ExtractionResult
from ..inputs import load_objects
from ..options import FormatCommand, report_options
from ..reporters import render_ci
from ..reporters.output import write_reports
from ..reporters.run import ExtraRule, RunResult, TestCase
from ..settings import Params, ReportSettings, config_for, report_settings, resolved
from ..suite import (
    Case,
    SimulationCase,
    SimulationStep,
    Suite,
    SuiteError,
    WorkloadCase,
    load_suite,
    unreadable_resources,
)

if TYPE_CHECKING:
    from ...policies.scheduler.simulation import SimulationReport, StepResult
    from ..reporters.run import RunResult


@dataclass(frozen=True)
class CaseResult:
    suite: str
    file: str
    case: Case | SimulationCase | WorkloadCase
    passed: bool
    failures: tuple[str, ...]


def _matches(result: ExtractionResult, case: Case) -> bool:

    filters = Filters(claim=case.claim, pool=case.pool, request=case.request)
    pool_ok = filters.pool_ok(result.pool)
    wanted_claim = case.claim if "/" in case.claim else f"default/{case.claim}"
    request_ok = case.request is None or case.request in {result.request, result.request.split("/")[0]}
    return result.claim in {case.claim, wanted_claim} and pool_ok and request_ok


def _check(result: ExtractionResult, expect: dict[str, Any]) -> list[str]:
    where = f"{result.claim} request {result.request!r} pool {result.pool.driver}/{result.pool.name}"
    problems = []
    if result.outcome.value != expect["outcome"]:
        detail = f" ({result.error.message})" if result.error else ""
        problems.append(f"{where}: outcome {result.outcome.value}, expected {expect['outcome']}{detail}")
    if "affinity" in expect and dict(result.affinity or {}) != expect["affinity"]:
        problems.append(f"{where}: affinity {dict(result.affinity or {})}, expected {expect['affinity']}")
    if "unsatisfied" in expect and list(result.unsatisfied) != expect["unsatisfied"]:
        problems.append(f"{where}: unsatisfied {list(result.unsatisfied)}, expected {expect['unsatisfied']}")
    kind = result.error.kind if result.error else None
    if "errorKind" in expect and kind != expect["errorKind"]:
        got = repr(kind) if kind is not None else f"none (outcome {result.outcome.value}, no error)"
        problems.append(f"{where}: error kind {got}, expected {expect['errorKind']!r}")
    message = result.error.message if result.error else ""
    if "errorContains" in expect and expect["errorContains"] not in message:
        problems.append(f"{where}: error message {message!r} lacks {expect['errorContains']!r}")
    return problems


@dataclass
class _Objects:
    slices: list[ResourceSlice]
    claims: list[ResourceClaim]
    classes: list[DeviceClass]
    problems: list[str]

    def add(self, docs: tuple[dict[str, Any], ...], file: str) -> _Objects:
        """A copy with inline objects added (the suite's, or one simulation case's)."""

        out = _Objects(list(self.slices), list(self.claims), list(self.classes), list(self.problems))
        for i, doc in enumerate(docs):
            parsed = parse(doc, Source(file=file, document=i))
            out.problems += [f.message for f in parsed.findings]
            if isinstance(parsed.obj, ResourceSlice):
                out.slices.append(parsed.obj)
            elif isinstance(parsed.obj, ResourceClaim):
                out.claims.append(parsed.obj)
            elif isinstance(parsed.obj, DeviceClass):
                out.classes.append(parsed.obj)
        return out


def _case_gates(case: SimulationCase | WorkloadCase, version: KubernetesVersion | None
                ) -> FeatureGates | str:
    """The case's gates for the suite's release, or why they cannot be set there."""
    try:
        return FeatureGates.for_release(version or DEFAULT_KUBERNETES_VERSION, case.gates)
    except FeatureGateError as exc:
        return f"featureGates: {exc}"


def _simulation_failures(case: SimulationCase, objects: _Objects, version: Any) -> list[str]:
    """Run one lock simulation and compare every step, device and metric with the case."""
    from ...policies.scheduler.locks import Mode
    from ...policies.scheduler.simulation import Action, SimulationReport, Step, simulate

    steps = [Step(Action.RELEASE if s.release else Action.ALLOCATE, s.claim) for s in case.steps]
    gates = _case_gates(case, version)
    if isinstance(gates, str):
        return [gates]
    report = simulate(objects.slices, objects.claims, steps, mode=Mode(case.mode),
                      feature_gate=gates.enabled(SHARING_AFFINITY), kubernetes_version=version,
                      pools=case.pools, classes=objects.classes)
    if not isinstance(report, SimulationReport):
        hint = f" (input problems: {'; '.join(objects.problems)})" if objects.problems else ""
        return [p.message + hint for p in report]
    failures = [f for n, (want, got) in enumerate(zip(case.steps, report.steps, strict=True), start=1)
                for f in _step_failures(n, want, got)]
    failures += [f for name, want in case.devices.items() for f in _device_failures(name, want, report)]
    metrics = report.metrics.as_dict()
    failures += [f"metric {metric}: {metrics.get(metric)}, expected {value}"
                 for metric, value in case.metrics.items() if metrics.get(metric) != value]
    return failures


def _workload_failures(case: WorkloadCase, objects: _Objects, version: Any) -> list[str]:
    """Replay the case's workload in each of its modes and check every expectation."""
    from ...policies.scheduler.locks import Mode
    from ...policies.scheduler.replay import ReplayReport, replay

    extra = load_objects([str(p) for p in case.workload.resources]) if case.workload.resources else None
    if extra is not None:
        unreadable = unreadable_resources(case.workload.path, extra.findings, extra.usage_errors,
                                          "the workload's resources")
        if unreadable is not None:
            raise unreadable
    slices = [*objects.slices, *(extra.slices if extra else [])]
    claims = [*objects.claims, *(extra.claims if extra else [])]
    classes = [*objects.classes, *(extra.classes if extra else [])]
    problems = [*objects.problems, *((f.message for f in extra.findings) if extra else ()),
                *(extra.usage_errors if extra else ())]
    reports: dict[Mode, ReplayReport] = {}
    gates = _case_gates(case, version)
    if isinstance(gates, str):
        return [gates]
    for mode in (Mode(m) for m in case.modes):
        result = replay(slices, claims, case.workload.workload, mode=mode,
                        feature_gate=gates.enabled(SHARING_AFFINITY),
                        kubernetes_version=version, pools=case.pools, classes=classes)
        if isinstance(result, list):
            hint = f" (input problems: {'; '.join(problems)})" if problems else ""
            return [f"{case.workload.where(p.path)}: {p.message}{hint}" for p in result]
        reports[mode] = result
    return [f for e in case.expect for f in e.failures(reports)]


def _step_failures(n: int, want: SimulationStep, got: StepResult) -> list[str]:
    from ...policies.scheduler.simulation import device_matches

    if want.release:
        return []
    where = f"step {n} ({got.step.claim})"
    placed_on = ", ".join(str(p.device) for p in got.placements)
    why = f"{', '.join(r.value for r in got.reasons)}: {got.failure.message}" if got.failure else ""
    if want.device is not None:
        hits = [p for p in got.placements if device_matches(p.device, want.device)]
        if not got.placed:
            return [f"{where}: unschedulable ({why}), expected device {want.device}"]
        if not hits:
            return [f"{where}: placed on {placed_on}, expected device {want.device}"]
        lock = dict(hits[0].lock) if hits[0].lock is not None else None
        if want.expects_lock and lock != want.lock:
            return [f"{where}: lock {lock}, expected {want.lock}"]
        return []
    expected = f" ({want.unschedulable})" if isinstance(want.unschedulable, str) else ""
    if got.placed:
        return [f"{where}: placed on {placed_on}, expected unschedulable{expected}"]
    if isinstance(want.unschedulable, str) and want.unschedulable not in [r.value for r in got.reasons]:
        return [f"{where}: unschedulable ({why}), expected reason {want.unschedulable!r}"]
    return []


def _device_failures(name: str, want: dict[str, Any], report: SimulationReport) -> list[str]:
    from ...policies.scheduler.simulation import device_matches

    found = [d for d in report.devices if device_matches(d.ref, name)]
    if len(found) != 1:
        return [f"device {name!r} names {len(found)} devices of the simulation, not one"]
    state = found[0].state
    failures = []
    if "state" in want and state.status.value != want["state"]:
        detail = f" ({state.reason})" if state.reason else ""
        failures.append(f"device {name}: state {state.status.value}{detail}, expected {want['state']}")
    lock = dict(state.lock) if state.lock is not None else None
    if "lock" in want and lock != want["lock"]:
        failures.append(f"device {name}: lock {lock}, expected {want['lock']}")
    holders = sorted({h.claim for h in state.holders})
    wanted = sorted(h if "/" in h else f"default/{h}" for h in want.get("holders", []))
    if "holders" in want and holders != wanted:
        failures.append(f"device {name}: holders {holders}, expected {wanted}")
    return failures


def run_suite(suite: Suite) -> list[CaseResult]:

    inputs = load_objects([str(p) for p in suite.resources]) if suite.resources else None
    if inputs is not None:
        unreadable = unreadable_resources(suite.path, inputs.findings, inputs.usage_errors)
        if unreadable is not None:
            raise unreadable
    base = _Objects(
        list(inputs.slices) if inputs else [], list(inputs.claims) if inputs else [],
        list(inputs.classes) if inputs else [],
        ([f.message for f in inputs.findings] + inputs.usage_errors) if inputs else [],
    ).add(suite.objects, str(suite.path))
    slices, claims, classes, problems = base.slices, base.claims, base.classes, base.problems
    version = parse_kubernetes_version(suite.kubernetes_version) if suite.kubernetes_version else None
    report = dry_run(slices, claims, classes, kubernetes_version=version) if any(
        isinstance(c, Case) for c in suite.cases) else None
    out = []
    for case in suite.cases:
        failures: list[str] = []
        if isinstance(case, SimulationCase):
            failures = _simulation_failures(case, base.add(case.objects, str(suite.path)), version)
            out.append(CaseResult(suite.name, str(suite.path), case, not failures, tuple(failures)))
            continue
        if isinstance(case, WorkloadCase):
            failures = _workload_failures(case, base, version)
            out.append(CaseResult(suite.name, str(suite.path), case, not failures, tuple(failures)))
            continue
        assert report is not None
        matched = [r for r in report.results if _matches(r, case)]
        if not matched:
            failures.append(
                f"no result for claim {case.claim!r}"
                + (f" request {case.request!r}" if case.request else "")
                + (f" pool {case.pool!r}" if case.pool else "")
                + ": is it in the suite's resources?"
                + (f" (input problems: {'; '.join(problems)})" if problems else "")
            )
        for result in matched:
            failures += _check(result, case.expect)
        out.append(CaseResult(suite.name, str(suite.path), case, not failures, tuple(failures)))
    return out


TEST_FORMATS = ("text", "json", "junit", "sarif", "github")
CASE_RULE = ExtraRule(
    id="test/case-failed", slug="case-failed", severity=Severity.ERROR,
    summary="a test suite case did not get its expected outcome",
    description="The suite states what the scheduler's extraction (or a lock simulation) must do for "
                "a claim; the current slices and claims do something else. Either the change broke "
                "the driver's contract or the expectation needs updating.",
)


def test_run(results: list[CaseResult]) -> RunResult:
    """The suites as the CI formats see them: a JUnit case per suite case, a result per failure."""

    cases = tuple(
        TestCase(suite=r.suite, name=r.case.name, classname=r.suite, file=r.file, line=r.case.line,
                 failures=r.failures)
        for r in results
    )
    findings = tuple(
        Finding(rule=CASE_RULE.id, severity=Severity.ERROR,
                message=f"{r.suite}: {r.case.name}: " + "; ".join(r.failures),
                locations=(Location(file=r.file,
                                    position=Position(r.case.line, 1) if r.case.line else None),))
        for r in results if not r.passed
    )
    passed = sum(r.passed for r in results)
    return RunResult(command="test", findings=findings, cases=cases, extra_rules=(CASE_RULE,),
                     summary=f"{passed} passed, {len(results) - passed} failed")


def _text(results: list[CaseResult]) -> str:
    """A line per case and the count; with -q, only the failing cases."""
    from ..terminal import current

    quiet = current().quiet
    lines = []
    for r in results:
        if quiet and r.passed:
            continue
        status = click.style("PASS", fg="green") if r.passed else click.style("FAIL", fg="red")
        lines.append(f"{status} {r.suite}: {r.case.name}")
        lines += [f"     {failure}" for failure in r.failures]
    passed = sum(r.passed for r in results)
    if not quiet:
        lines.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


def _json(results: list[CaseResult]) -> str:
    return json.dumps({
        "cases": [{"suite": r.suite, "file": r.file, "name": r.case.name, "line": r.case.line,
                   "passed": r.passed, "failures": list(r.failures)} for r in results],
        "summary": {"passed": sum(r.passed for r in results),
                    "failed": sum(not r.passed for r in results)},
    }, indent=2)


@dataclass(frozen=True, slots=True)
class SuiteRunSettings:
    """Everything one `test` run uses, resolved from flags and config before it starts."""

    suites: tuple[Path, ...]
    report: ReportSettings


def suite_run_settings(ctx: click.Context, params: Params) -> SuiteRunSettings:
    """Flags > config > defaults for `test`: the reports, and the suites when none is given.

    No SUITE and no `test: suites:` in the config is a usage error: a run of nothing must
    not pass (a pre-commit hook without `args`, a CI variable left unset)."""
    config = config_for(params)
    report = report_settings(ctx, params, config, command="test", choices=TEST_FORMATS, default="text")
    suites: tuple[Path, ...] = params["suites"] or tuple(Path(config.resolve(s)) for s in config.suites)
    if not suites:
        raise click.UsageError("give SUITE files, or list them under `test: suites:` in the config file "
                               "(docs/configuration.md)", ctx)
    return SuiteRunSettings(suites, report)


@click.command("test", cls=FormatCommand)
@click.argument("suites", nargs=-1, metavar="[SUITE]...", type=click.Path(path_type=Path))
@report_options(TEST_FORMATS, "text")
@resolved(suite_run_settings)
def test(settings: SuiteRunSettings) -> None:
    """Run test SUITES: each names slices, claims and the expected outcome per claim/request/pool,
    or (`allocate:` cases) the device each claim of a lock simulation must get, or (`workload:`
    cases) bounds on a workload replay's fragmentation report (e.g. `beta.stranded <= 5%`).
    Without SUITE, the suites listed under `test: suites:` in the config file run.

    Exit code 1 when a case fails, 2 when a suite file is unusable.
    """

    specs = settings.report.outputs
    results: list[CaseResult] = []
    for path in settings.suites:
        try:
            results += run_suite(load_suite(path))
        except SuiteError as exc:
            click.echo(f"dra-affinity test: {exc}", err=True)
            sys.exit(2)

    def render(name: str) -> str:
        if name == "json":
            return _json(results)
        if name == "text":
            return _text(results)

        return render_ci(name, test_run(results))

    failures = write_reports(specs, render)
    for message in failures:
        click.echo(f"dra-affinity test: {message}", err=True)
    if failures:
        sys.exit(2)
    sys.exit(0 if all(r.passed for r in results) else 1)
