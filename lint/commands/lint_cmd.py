"""`dra-affinity lint`: the API server's checks and the scheduler's pool checks, before either.

Two layers: slice rules (SA…, one slice at a time, as the API server sees it) and
pool rules (SP3…, across every slice given, as the scheduler sees a pool).
`--pools-only` / `--no-pools` pick one. Input is files, directories, stdin, or a
live cluster (`--cluster`); the input helpers here are shared with `pools`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click
from dra_affinity.lint.inputs import (
    Input,
    cluster_target,
    input_options,
    load_input,
    model_objects,
    report_problems,
)
from dra_affinity.lint.options import (
    FormatCommand,
    ci_options,
    given,
    kubernetes_version_option,
    load_settings,
    output_specs,
    pick,
    report_options,
    rule_selection_options,
    suppression_options,
)
from dra_affinity.lint.report import Report, Summary
from dra_affinity.lint.reporters import LINT_FORMATS
from dra_affinity.lint.scalar_positions import resolve_inner_positions
from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.core.limits import KubernetesVersion
from dra_affinity.policies.rules.engine import EngineOptions, check_pools, check_slice

if TYPE_CHECKING:
    from dra_affinity.lint.cluster import ClusterTarget
    from dra_affinity.lint.config import Config, OutputSpec
    from dra_affinity.lint.reporters.run import RunResult
    from dra_affinity.lint.suppressions import Audit

@dataclass(frozen=True, slots=True)
class Layers:
    """Which rule layers run: slice rules (SA1xx/SA2xx) and pool rules (SP3xx)."""

    slices: bool = True
    pools: bool = True

    def ran(self, rule_id: str, disabled: frozenset[str]) -> bool:
        """Whether `rule_id` was checked in a run with these layers (SA000 always is)."""
        from dra_affinity.policies.rules.base import Scope
        from dra_affinity.policies.rules.catalog import catalog

        rule = catalog().get(rule_id)
        if rule is None or rule_id in disabled:
            return False
        return {Scope.INPUT: True, Scope.SLICE: self.slices, Scope.POOL: self.pools}[rule.scope]


def run_lint(
    paths: tuple[str, ...],
    options: EngineOptions,
    *,
    layers: Layers = Layers(),
    complete_pools: bool = False,
    cluster: ClusterTarget | None = None,
) -> tuple[Report, list[str]]:
    """Load, model and check everything in `paths` (or the cluster); usage errors are returned."""
    report, inputs = lint_input(load_input(paths, cluster), options, layers=layers,
                                complete_pools=complete_pools or cluster is not None)
    return report, inputs.usage_errors


def lint_input(
    inputs: Input, options: EngineOptions, *, layers: Layers = Layers(), complete_pools: bool = False
) -> tuple[Report, Input]:
    """Check loaded input: input errors always, then the selected layers."""
    objects = model_objects(inputs)
    findings: list[Finding] = list(objects.findings)
    if layers.slices:
        for slice_ in objects.slices:
            findings.extend(check_slice(slice_, options=options))
    if layers.pools:
        findings.extend(check_pools(objects.slices, options, complete_pools=complete_pools))
    summary = Summary(files=objects.files, objects=objects.objects, skipped=objects.skipped)
    return Report(tuple(resolve_inner_positions(findings)), summary), inputs


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
@click.option("--complete-pools", is_flag=True,
              help="The input holds every slice of every pool (a full dump): incomplete pools "
                   "(SP303/SP304) are errors instead of warnings.")
@kubernetes_version_option
@click.pass_context
def lint(
    ctx: click.Context,
    paths: tuple[str, ...],
    cluster: bool,
    kubeconfig: str | None,
    kube_context: str | None,
    chunk_size: int | None,
    fmt: tuple[str, ...],
    output: tuple[str, ...],
    config_path: str | None,
    fail_on: str,
    strict: bool,
    fail_if_no_resources: bool,
    show_suppressed: bool,
    enable: tuple[str, ...],
    disable: tuple[str, ...],
    pools_only: bool,
    no_pools: bool,
    complete_pools: bool,
    kubernetes_version: KubernetesVersion,
) -> None:
    """Lint ResourceSlices in files, directories (recursively: *.yaml, *.yml, *.json), stdin (-)
    or a live cluster (--cluster).

    Multi-document YAML, JSON and `kubectl get -o yaml` List dumps are read; objects of
    other kinds are skipped and counted. Slice rules check each slice alone; pool rules
    check each pool (driver, pool name) across everything given. Every finding names
    file:line:column, the field path, the object and its pool; a pool finding names
    every slice involved. Findings can be suppressed, with a reason, by a
    `# dra-affinity: ignore RULE -- reason` comment, a `dra-affinity.io/ignore`
    annotation or the config file's `ignore:` list.
    """
    from dra_affinity.lint.suppressions import audit, load_keeping_stdin
    from dra_affinity.policies.rules.catalog import catalog

    if pools_only and no_pools:
        raise click.UsageError("--pools-only and --no-pools exclude each other")
    target = cluster_target(paths, cluster, kubeconfig, kube_context, chunk_size)
    known = list(catalog())
    for pattern in (*enable, *disable):
        if not any(r.startswith(pattern.upper()) for r in known):
            raise click.UsageError(f"{pattern!r} is neither a rule id nor the prefix of one "
                                   "(`dra-affinity rules` lists them)")
    config = load_settings(config_path).with_rules(enable, disable)
    settings = config.for_command("lint")
    specs = output_specs(ctx, fmt, output, settings.formats, config, choices=LINT_FORMATS, default="text")
    threshold = Severity.parse(pick(ctx, "fail_on", fail_on, settings.fail_on))
    if pick(ctx, "strict", strict, settings.strict):
        threshold = min(threshold, Severity.WARNING)
    version = _version(ctx, kubernetes_version, config)
    disabled = config.disabled_rules(known)
    layers = Layers(slices=not pools_only, pools=not no_pools)

    inputs, texts = load_keeping_stdin(paths, target)
    report, inputs = lint_input(
        inputs,
        EngineOptions(kubernetes_version=version, disabled_rules=disabled),
        layers=layers,
        complete_pools=complete_pools or target is not None,
    )
    report_problems("lint", inputs)
    if inputs.usage_errors and target is not None:
        sys.exit(2)  # nothing was read: no report to print
    findings = _resolve_in_texts(report.findings, texts)
    checked = audit(findings, inputs.documents, config, texts=texts, disabled=disabled,
                    ran=lambda rule: layers.ran(rule, disabled))
    report = Report(checked.findings, report.summary)
    show = pick(ctx, "show_suppressed", show_suppressed, settings.show_suppressed)
    failures = write_lint_reports(specs, report, checked, inputs, threshold=threshold, show_suppressed=show)
    for message in failures:
        click.echo(f"dra-affinity lint: {message}", err=True)
    if inputs.usage_errors or failures:
        sys.exit(2)
    if pick(ctx, "fail_if_no_resources", fail_if_no_resources, settings.fail_if_no_resources) and not any(
            d.kind == "ResourceSlice" for d in inputs.documents):
        click.echo("dra-affinity lint: no ResourceSlice in the input (--fail-if-no-resources)", err=True)
        sys.exit(2)
    sys.exit(1 if any(f.severity >= threshold for f in report.findings) else 0)


def _resolve_in_texts(findings: Sequence[Finding], texts: Mapping[str, str]) -> list[Finding]:
    """Map in-expression positions for input read from stdin, whose text only we kept."""
    import dataclasses

    from dra_affinity.lint.scalar_positions import locate_in_scalar

    if not texts:
        return list(findings)
    lines = {name: text.splitlines() for name, text in texts.items()}
    out: list[Finding] = []
    for finding in findings:
        loc = finding.primary
        source = lines.get(loc.file) if loc.file is not None else None
        if source is None or loc.inner is None or loc.value is None:
            out.append(finding)
            continue
        mapped = locate_in_scalar(source, loc.value, loc.inner)
        moved = dataclasses.replace(loc, position=mapped or loc.position)
        out.append(dataclasses.replace(finding, locations=(moved, *finding.locations[1:])))
    return out


def _version(ctx: click.Context, flag: KubernetesVersion, config: Config) -> KubernetesVersion:
    """--kubernetes-version if given, else the config's, else the default (validated on load)."""
    from dra_affinity.policies.core.limits import parse_kubernetes_version

    if given(ctx, "kubernetes_version") or config.kubernetes_version is None:
        return flag
    return parse_kubernetes_version(config.kubernetes_version)


def write_lint_reports(
    specs: Sequence[OutputSpec],
    report: Report,
    checked: Audit,
    inputs: Input,
    *,
    threshold: Severity,
    show_suppressed: bool,
) -> list[str]:
    """Render each requested format once and write it; return what could not be written."""
    from dra_affinity.lint.reporters import render_ci
    from dra_affinity.lint.reporters.json_reporter import render as render_json
    from dra_affinity.lint.reporters.output import write_reports
    from dra_affinity.lint.reporters.text_reporter import render as render_text

    run: list[RunResult] = []

    def render(name: str) -> str:
        if name == "text":
            return render_text(report, checked.suppressed, show_suppressed)
        if name == "json":
            return render_json(report, checked.suppressed, show_suppressed)
        if not run:
            run.append(lint_run(report, checked, inputs, threshold=threshold,
                                show_suppressed=show_suppressed))
        return render_ci(name, run[0])

    return write_reports(specs, render)


def lint_run(
    report: Report, checked: Audit, inputs: Input, *, threshold: Severity, show_suppressed: bool
) -> RunResult:
    """The lint run as the CI formats see it: one JUnit case per slice, findings, notes."""
    from dra_affinity.lint.reporters.junit_reporter import object_cases
    from dra_affinity.lint.reporters.run import Notification, RunResult
    from dra_affinity.lint.reporters.text_reporter import summary_line
    from dra_affinity.lint.suppressions import document_ref

    findings = report.sorted()
    slices = [
        (d.source.file, document_ref(d), p.line if (p := d.source.positions.get(())) else None)
        for d in inputs.documents if d.kind == "ResourceSlice"
    ]
    return RunResult(
        command="lint",
        findings=findings,
        cases=object_cases("dra-affinity lint", slices, findings, checked.suppressed, threshold),
        suppressed=checked.suppressed,
        show_suppressed=show_suppressed,
        notifications=(*(Notification("error", m) for m in inputs.usage_errors),
                       *(Notification("warning", m) for m in inputs.notes)),
        summary=summary_line(report, checked.suppressed),
        threshold=threshold,
    )
