"""`dra-affinity dry-run`: what the scheduler's extraction makes of real claims."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from lint.options import kubernetes_version_option
from policies.extraction import ExtractionResult, Outcome
from policies.limits import KubernetesVersion

FAILING = frozenset({Outcome.SLICE_ERROR, Outcome.CLAIM_INCONSISTENT})
"""Authoring errors: a slice or a claim must change. `not-satisfied` is a normal outcome."""


def result_to_json(result: ExtractionResult) -> dict[str, Any]:
    """SPEC §7 (`results[]`), extended with the evaluations and the configs in scope."""
    error = result.error
    return {
        "claim": result.claim,
        "request": result.request,
        "pool": {"driver": result.pool.driver, "name": result.pool.name},
        "outcome": result.outcome.value,
        "affinity": dict(result.affinity) if result.affinity is not None else None,
        "unsatisfied": list(result.unsatisfied),
        "error": None if error is None else {
            "kind": error.kind, "extractor": error.extractor, "config": error.config,
            "message": error.message,
        },
        "configs": list(result.configs),
        "evaluations": [
            {"extractor": e.extractor, "config": e.config, "value": e.value, "type": e.type or None,
             "runtimeCost": e.runtime_cost,
             "error": None if e.error_kind is None else {"kind": e.error_kind, "message": e.error}}
            for e in result.evaluations
        ],
    }


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
    from policies.diagnostics import describe

    lines: list[str] = []
    for r in results:
        lines.append(f"Claim {r.claim}, request {r.request!r}, pool {r.pool.driver}/{r.pool.name}:")
        if r.outcome is Outcome.NOT_APPLICABLE:
            lines.append("  1. The pool declares no sharingAffinity: no CEL runs, every device is viable.")
            continue
        if r.outcome is Outcome.POOL_INCOMPLETE:
            lines.append(f"  1. The pool is incomplete ({'; '.join(r.notes)}); the scheduler skips it.")
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
                what = f"returned {json.dumps(e.value)}"
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


@click.command("dry-run")
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--claim", help="Only this claim (namespace/name; a bare name means namespace default).")
@click.option("--pool", help="Only this pool (driver/name, or name).")
@click.option("--request", "request_name", help="Only this request (or sub-request parent/sub).")
@click.option("--explain", "explain_claim", metavar="CLAIM",
              help="Print every step for one claim (namespace/name) in words.")
@kubernetes_version_option
def dry_run(paths: tuple[str, ...], fmt: str, claim: str | None, pool: str | None,
            request_name: str | None, explain_claim: str | None,
            kubernetes_version: KubernetesVersion) -> None:
    """Run the pools' extractors against the claims' opaque configs, as the scheduler would.

    PATHS hold ResourceSlices, ResourceClaims / ResourceClaimTemplates and (optionally)
    DeviceClasses, in any files; objects are told apart by kind. For every claim ×
    request × candidate pool, prints the outcome (ok, not-satisfied, claim-inconsistent,
    slice-error, not-applicable, pool-incomplete), the affinity map or the error.
    Exit code 1 when a slice or claim authoring error (slice-error, claim-inconsistent)
    or an input error is found.
    """
    from lint.inputs import load_objects
    from policies.dryrun import Filters
    from policies.dryrun import dry_run as run
    from policies.findings import Severity

    inputs = load_objects(paths)
    for message in inputs.usage_errors:
        click.echo(f"dra-affinity dry-run: {message}", err=True)
    filters = Filters(claim=explain_claim or claim, pool=pool, request=request_name)
    report = run(inputs.slices, inputs.claims, inputs.classes,
                 kubernetes_version=kubernetes_version, filters=filters)
    findings = [*inputs.findings, *report.findings]
    for finding in findings:
        loc = finding.primary
        where = f"{loc.file}:{loc.position.line}:{loc.position.column}" if loc.position else (loc.file or "")
        click.echo(f"{where}: {finding.severity.label} {finding.rule} {finding.message}", err=True)
    results = list(report.results)
    if explain_claim:
        click.echo(explain(results))
    elif fmt == "json":
        from lint.reporters.json_reporter import finding_to_json

        click.echo(json.dumps({"results": [result_to_json(r) for r in results],
                               "findings": [finding_to_json(f) for f in findings]}, indent=2))
    else:
        click.echo(render_table(results) if results else "no claim requests matched any pool")
    if inputs.usage_errors:
        sys.exit(2)
    failed = any(r.outcome in FAILING for r in results) or any(
        f.severity is Severity.ERROR for f in findings)
    sys.exit(1 if failed else 0)
