"""`dra-affinity pools`: what the scheduler will make of each pool, before it does.

For every pool (driver, pool name) in the input: its slices and where they are,
the generation in force, completeness, the union of extractor keys and the slice
declaring each, the total estimated cost against the pool budget, the devices and
how many can be shared — plus the pool findings (SP301–SP306) about it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from ...policies.cel.cost.estimate import MAX_UINT64
from ...policies.core.findings import Finding, Severity
from ...policies.core.limits import KubernetesVersion
from ...policies.model.resources import ResourceSlice, parse
from ...policies.rules.engine import EngineOptions, check_pool
from ...policies.scheduler.pool_report import PoolReport, SliceSummary, pool_report
from ...policies.scheduler.pools import build_pools
from ..inputs import cluster_target, input_options, load_input, report_problems, walk_filter
from ..options import (
    complete_pools_option,
    config_option,
    format_option,
    kubernetes_version_option,
    load_settings,
)
from ..report import position_order
from ..reporters.json_reporter import finding_to_json
from ..reporters.output import emit
from ..reporters.text_reporter import finding_line

REPORT_FORMATS = ("text", "json")


def _cost(cost: int) -> str:

    return "unbounded" if cost >= MAX_UINT64 else str(cost)


def _where(s: SliceSummary) -> str:
    file = s.file or "<input>"
    return f"{file}:{s.position.line}:{s.position.column}" if s.position else file


def _slice_json(s: SliceSummary) -> dict[str, Any]:
    return {
        "name": s.name,
        "file": s.file,
        "line": s.position.line if s.position else None,
        "column": s.position.column if s.position else None,
        "generation": s.generation,
        "resourceSliceCount": s.resource_slice_count,
        "role": s.role,
        "keys": list(s.keys),
        "cost": s.cost,
        "devices": s.devices,
        "shareableDevices": s.shareable_devices,
    }


def report_to_json(report: PoolReport) -> dict[str, Any]:
    """One pool as JSON: add fields, never rename them (CI parses this)."""
    return {
        "driver": report.ref.driver,
        "name": report.ref.name,
        "generation": report.generation,
        "complete": report.complete,
        "present": report.present,
        "expected": report.expected,
        "incompleteReason": report.incomplete_reason or None,
        "keys": [{"key": key, "slice": name} for key, name in report.keys],
        "duplicateKeys": list(report.duplicate_keys),
        "totalCost": report.total_cost,
        "costBudget": report.cost_budget,
        "devices": report.devices,
        "shareableDevices": report.shareable_devices,
        "slices": [_slice_json(s) for s in report.slices],
        "superseded": [_slice_json(s) for s in report.superseded],
        "findings": [finding_to_json(f) for f in report.findings],
    }


def render_json(reports: Sequence[PoolReport], files: int, problems: Sequence[Finding] = ()) -> str:
    """The pools, and the input findings (SA000…) of objects left out of them."""
    summary = {
        "pools": len(reports),
        "complete": sum(r.complete for r in reports),
        "incomplete": sum(not r.complete for r in reports),
        "files": files,
        "inputErrors": len(problems),
    }
    return json.dumps({"pools": [report_to_json(r) for r in reports], "summary": summary,
                       "findings": [finding_to_json(f) for f in problems]}, indent=2)


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _findings_cell(report: PoolReport) -> str:
    if not report.findings:
        return "-"
    return ",".join(f"{f.rule}({f.severity.label})" for f in report.findings)


def render_table(reports: Sequence[PoolReport]) -> str:
    if not reports:
        return "no ResourceSlices in the input"
    pools = [("POOL", "GEN", "SLICES", "COMPLETE", "KEYS", "COST", "DEVICES", "SHAREABLE", "FINDINGS")]
    for r in reports:
        expected = "?" if r.expected is None else str(r.expected)
        pools.append((
            f"{r.ref.driver}/{r.ref.name}",
            str(r.generation),
            f"{r.present}/{expected}",
            "yes" if r.complete else "no",
            ",".join(k for k, _ in r.keys) or "-",
            f"{_cost(r.total_cost)}/{r.cost_budget}",
            str(r.devices),
            str(r.shareable_devices),
            _findings_cell(r),
        ))
    slices = [("POOL", "SLICE", "GEN", "ROLE", "KEYS", "COST", "DEVICES", "LOCATION")]
    for r in reports:
        for s, state in [(s, "") for s in r.slices] + [(s, "superseded ") for s in r.superseded]:
            slices.append((
                f"{r.ref.driver}/{r.ref.name}",
                s.name or "<unnamed>",
                str(s.generation),
                state + s.role,
                ",".join(s.keys) or "-",
                _cost(s.cost),
                f"{s.devices} ({s.shareable_devices} shareable)" if s.devices else "-",
                _where(s),
            ))
    return "\n".join([*_table(pools), "", *_table(slices)])


@click.command("pools")
@input_options
@format_option(REPORT_FORMATS, extra=" (text: a table for people, json for scripts)")
@config_option
@complete_pools_option
@kubernetes_version_option
def pools(
    paths: tuple[str, ...],
    excludes: tuple[str, ...],
    cluster: bool,
    kubeconfig: str | None,
    kube_context: str | None,
    chunk_size: int | None,
    fmt: str,
    output: str | None,
    config_path: str | None,
    complete_pools: bool,
    kubernetes_version: KubernetesVersion,
) -> None:
    """Report every pool (driver, pool name) in PATHs, stdin (-) or a cluster (--cluster).

    Per pool: generation, completeness (slices present of resourceSliceCount), extractor
    keys and the slice declaring each, total estimated cost against the pool budget,
    devices and how many allow multiple allocations, its slices with their files, and
    the pool findings (SP301–SP306). Objects that cannot be read (SA000: a YAML syntax
    error, a missing required field) are reported as `lint` reports them and left out of
    the pools. With --cluster, every ResourceSlice of the cluster is read.

    Exit code 0 when the report is written, whatever the pool findings; 1 when an input
    object cannot be read (SA000); 2 when the input cannot be read or a usage error.
    """
    target = cluster_target(paths, cluster, kubeconfig, kube_context, chunk_size)
    inputs = load_input(paths, target, walk_filter(excludes, load_settings(config_path)))
    report_problems("pools", inputs)
    if inputs.usage_errors:
        sys.exit(2)
    options = EngineOptions(kubernetes_version=kubernetes_version)
    slices: list[ResourceSlice] = []
    problems = [f for f in inputs.findings if f.severity is Severity.ERROR]
    for document in inputs.documents:
        result = parse(document.data, document.source, trusted=target is not None)
        problems.extend(result.findings)
        if isinstance(result.obj, ResourceSlice):
            slices.append(result.obj)
    complete = complete_pools or target is not None
    reports = [
        pool_report(pool, options.limits, check_pool(pool, options, complete_pools=complete))
        for pool in build_pools(slices, options.limits).values()
    ]
    problems.sort(key=position_order)
    if fmt == "json":
        emit("pools", render_json(reports, inputs.files, problems), output)
    else:
        # unreadable objects as lint reports them: each is left out of the pools above
        emit("pools", "\n\n".join([render_table(reports), *(["\n".join(finding_line(p) for p in problems)]
                                                         if problems else [])]), output)
    sys.exit(1 if problems else 0)
