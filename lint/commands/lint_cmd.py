"""`dra-affinity lint`: the API server's checks, before the API server."""

from __future__ import annotations

import sys

import click

from lint.options import kubernetes_version_option
from lint.report import Report, Summary
from lint.reporters import FORMATS, get_reporter
from lint.scalar_positions import resolve_inner_positions
from policies.engine import EngineOptions, check_slice
from policies.findings import Finding, Severity
from policies.limits import KubernetesVersion
from policies.model import ResourceSlice, parse


def run_lint(paths: tuple[str, ...], options: EngineOptions) -> tuple[Report, list[str]]:
    """Load, model and check everything in `paths`; usage errors are returned, not raised."""
    from lint.loader import load_paths

    loaded = load_paths(list(paths) or ["-"], stdin=sys.stdin)
    findings: list[Finding] = list(loaded.findings)
    objects = skipped = 0
    for document in loaded.documents:
        result = parse(document.data, document.source)
        findings.extend(result.findings)
        if not result.recognised:
            skipped += 1
            continue
        objects += 1
        if isinstance(result.obj, ResourceSlice):
            findings.extend(check_slice(result.obj, options=options))
    summary = Summary(files=loaded.files, objects=objects, skipped=skipped)
    return Report(tuple(resolve_inner_positions(findings)), summary), list(loaded.usage_errors)


@click.command("lint")
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="Output format; json is the SPEC §7 contract.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="error",
              show_default=True, help="Lowest severity that makes the exit code 1.")
@kubernetes_version_option
def lint(paths: tuple[str, ...], fmt: str, fail_on: str, kubernetes_version: KubernetesVersion) -> None:
    """Lint ResourceSlices in files, directories (recursively: *.yaml, *.yml, *.json) or stdin (-).

    Multi-document YAML, JSON and `kubectl get -o yaml` List dumps are read; objects of
    other kinds are skipped and counted. Every finding names file:line:column, the field
    path, the object and its pool.
    """
    report, usage_errors = run_lint(paths, EngineOptions(kubernetes_version=kubernetes_version))
    for message in usage_errors:
        click.echo(f"dra-affinity lint: {message}", err=True)
    click.echo(get_reporter(fmt)(report))
    if usage_errors:
        sys.exit(2)
    threshold = Severity.parse(fail_on)
    sys.exit(1 if any(f.severity >= threshold for f in report.findings) else 0)
