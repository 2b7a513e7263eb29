"""`dra-affinity lint`: the API server's checks and the scheduler's pool checks, before either.

Two layers: slice rules (SA…, one slice at a time, as the API server sees it) and
pool rules (SP3…, across every slice given, as the scheduler sees a pool).
`--pools-only` / `--no-pools` pick one. Input is files, directories, stdin, or a
live cluster (`--cluster`); the input helpers here are shared with `pools`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from lint.inputs import Input, cluster_target, input_options, load_input, model_objects, report_problems
from lint.options import kubernetes_version_option
from lint.report import Report, Summary
from lint.reporters import FORMATS, get_reporter
from lint.scalar_positions import resolve_inner_positions
from policies.engine import EngineOptions, check_pools, check_slice
from policies.findings import Finding, Severity
from policies.limits import KubernetesVersion

if TYPE_CHECKING:
    from lint.cluster import ClusterTarget

@dataclass(frozen=True, slots=True)
class Layers:
    """Which rule layers run: slice rules (SA1xx/SA2xx) and pool rules (SP3xx)."""

    slices: bool = True
    pools: bool = True


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


@click.command("lint")
@input_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format; json is the SPEC §7 contract.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="error",
              show_default=True, help="Lowest severity that makes the exit code 1.")
@click.option("--pools-only", is_flag=True, help="Run only the pool rules (SP301–SP306).")
@click.option("--no-pools", is_flag=True,
              help="Skip the pool rules: check each slice alone, as the API server does.")
@click.option("--complete-pools", is_flag=True,
              help="The input holds every slice of every pool (a full dump): incomplete pools "
                   "(SP303/SP304) are errors instead of warnings.")
@kubernetes_version_option
def lint(
    paths: tuple[str, ...],
    cluster: bool,
    kubeconfig: str | None,
    kube_context: str | None,
    chunk_size: int | None,
    fmt: str,
    fail_on: str,
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
    every slice involved.
    """
    if pools_only and no_pools:
        raise click.UsageError("--pools-only and --no-pools exclude each other")
    target = cluster_target(paths, cluster, kubeconfig, kube_context, chunk_size)
    layers = Layers(slices=not pools_only, pools=not no_pools)
    inputs = load_input(paths, target)
    report, inputs = lint_input(
        inputs,
        EngineOptions(kubernetes_version=kubernetes_version),
        layers=layers,
        complete_pools=complete_pools or target is not None,
    )
    report_problems("lint", inputs)
    if inputs.usage_errors and target is not None:
        sys.exit(2)  # nothing was read: no report to print
    click.echo(get_reporter(fmt)(report))
    if inputs.usage_errors:
        sys.exit(2)
    threshold = Severity.parse(fail_on)
    sys.exit(1 if any(f.severity >= threshold for f in report.findings) else 0)
