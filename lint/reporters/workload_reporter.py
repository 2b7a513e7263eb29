"""The fragmentation report of `simulate --workload`: text side by side, JSON, and the HTML page.

One report per mode, all over the same arrivals; with two modes the last column is the
difference (second minus first, e.g. beta − alpha), so "what does beta buy us" is one column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...policies.scheduler.capacity import render
from ...policies.scheduler.locks import METRIC_NAMES
from ...policies.scheduler.replay import ReplayReport, Snapshot
from .html_page import (
    OTHER_COLOUR,
    Chart,
    Grid,
    Page,
    Series,
    Table,
    device_cells,
    grid_colours,
)

Row = tuple[str, Callable[[ReplayReport], float], str]
"""(label, value, format): one line of the side-by-side table."""

_ROWS: tuple[Row, ...] = (
    ("claims placed", lambda r: r.placed, "d"),
    ("placed on arrival", lambda r: r.waits.immediate, "d"),
    ("pending at end", lambda r: r.pending, "d"),
    ("pending, peak", lambda r: r.peak_pending, "d"),
    ("pending that raw capacity could hold, at end", lambda r: r.final.pending_fit, "d"),
    ("pending that raw capacity could hold, peak", lambda r: r.peak_pending_fit, "d"),
    ("time to place, mean", lambda r: r.waits.mean, ".2f"),
    ("time to place, p95", lambda r: r.waits.p95, ".2f"),
    ("time to place, max", lambda r: r.waits.max, ".2f"),
    ("locked devices, at end", lambda r: r.final.locked, "d"),
    ("locked devices, peak", lambda r: r.peak_locked, "d"),
    ("capacity in use %, at end", lambda r: r.final.in_use_percent, ".1f"),
    ("stranded capacity %, at end", lambda r: r.final.stranded_percent, ".1f"),
    ("stranded capacity %, peak", lambda r: r.peak_stranded_percent, ".1f"),
    *((name, (lambda n: lambda r: r.metrics.as_dict()[n])(name), "d") for name in METRIC_NAMES),
)


def _fmt(value: float, spec: str) -> str:
    return format(int(value), "d") if spec == "d" else format(value, spec)


def _diff(a: float, b: float, spec: str) -> str:
    delta = b - a
    text = _fmt(delta, spec)
    return text if delta < 0 else f"+{text}"


def render_text(reports: Sequence[ReplayReport], seed: int) -> str:
    first = reports[0]
    gate = "on" if first.feature_gate else "off"
    lines = [f"Workload {first.workload}: {first.arrivals} arrivals over {first.duration:.1f} time units "
             f"(seed {seed}), feature gate DRASharingAffinity {gate}", ""]
    headers = ["", *(r.mode.value for r in reports)]
    if len(reports) == 2:
        headers.append(f"{reports[1].mode.value} - {reports[0].mode.value}")
    rows = [headers]
    for label, value, spec in _ROWS:
        row = [label, *(_fmt(value(r), spec) for r in reports)]
        if len(reports) == 2:
            row.append(_diff(value(reports[0]), value(reports[1]), spec))
        rows.append(row)
    lines += _columns(rows)
    lines += ["", "Devices locked per value at end:"]
    values = _values(reports)
    table = [["VALUE", *(r.mode.value for r in reports)]]
    table += [[v, *(str(dict(r.final.by_value).get(v, 0)) for r in reports)] for v in values]
    lines += ["  " + line for line in _columns(table)] if values else ["  (none)"]
    for r in reports:
        if r.pending_reasons:
            why = ", ".join(f"{n} {reason}" for reason, n in r.pending_reasons)
            lines.append(f"{r.mode.value}: pending at end because of: {why}")
    for note in first.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _values(reports: Sequence[ReplayReport]) -> list[str]:
    counts: dict[str, int] = {}
    for r in reports:
        for value, n in r.final.by_value:
            counts[value] = max(counts.get(value, 0), n)
    return sorted(counts, key=lambda v: (-counts[v], v))


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(widths[i + 1]) for i, c in enumerate(row[1:])]
        out.append("  ".join(cells).rstrip())
    return out


def _snapshot_json(s: Snapshot) -> dict[str, Any]:
    return {
        "time": round(s.time, 6), "locked": s.locked, "clean": s.clean,
        "unreconstructable": s.unreconstructable, "pending": s.pending, "pendingFit": s.pending_fit,
        "strandedPercent": round(s.stranded_percent, 3), "inUsePercent": round(s.in_use_percent, 3),
        "capacity": [{"name": c.name, "total": render(c.total), "inUse": render(c.in_use),
                      "stranded": render(c.stranded)} for c in s.capacity],
        "lockedByValue": dict(s.by_value),
    }


def report_json(r: ReplayReport) -> dict[str, Any]:
    return {
        "mode": r.mode.value,
        "featureGate": r.feature_gate,
        "arrivals": r.arrivals,
        "duration": round(r.duration, 6),
        "placed": r.placed,
        "departed": r.departed,
        "pending": r.pending,
        "peak": {"pending": r.peak_pending, "locked": r.peak_locked,
                 "strandedPercent": round(r.peak_stranded_percent, 3), "pendingFit": r.peak_pending_fit},
        "timeToPlace": {"placed": r.waits.placed, "immediate": r.waits.immediate,
                        "mean": round(r.waits.mean, 6), "p50": round(r.waits.p50, 6),
                        "p95": round(r.waits.p95, 6), "max": round(r.waits.max, 6)},
        "end": _snapshot_json(r.final),
        "pendingReasons": dict(r.pending_reasons),
        "metrics": r.metrics.as_dict(),
        "extractions": r.extractions,
        "series": [_snapshot_json(s) for s in r.series],
        "notes": list(r.notes),
    }


def render_json(reports: Sequence[ReplayReport], seed: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"workload": reports[0].workload, "seed": seed,
                           "reports": [report_json(r) for r in reports]}
    if len(reports) == 2:
        a, b = reports
        doc["difference"] = {
            "modes": [b.mode.value, a.mode.value],
            **{label: round(value(b) - value(a), 6) for label, value, _ in _ROWS},
        }
    return doc


def render_html(reports: Sequence[ReplayReport], seed: int) -> str:
    first = reports[0]
    page = Page(f"Capacity plan: {first.workload}")
    modes = " vs ".join(r.mode.value for r in reports)
    page.paragraph(f"{first.arrivals} arrivals over {first.duration:.1f} time units (seed {seed}); "
                   f"{modes}; feature gate DRASharingAffinity {'on' if first.feature_gate else 'off'}.")
    page.heading("Summary")
    headers = ("", *(r.mode.value for r in reports)) + (
        (f"{reports[1].mode.value} - {reports[0].mode.value}",) if len(reports) == 2 else ())
    rows = []
    for label, value, spec in _ROWS:
        row = (label, *(_fmt(value(r), spec) for r in reports))
        if len(reports) == 2:
            row = (*row, _diff(value(reports[0]), value(reports[1]), spec))
        rows.append(row)
    page.table(Table(headers, tuple(rows), (False, *(True for _ in headers[1:]))))
    page.heading("Over time")
    for title, axis, pick in (
        ("Locked devices", "devices", lambda s: float(s.locked)),
        ("Stranded capacity", "% of capacity", lambda s: s.stranded_percent),
        ("Pending claims", "claims", lambda s: float(s.pending)),
    ):
        page.chart(Chart(title, axis, tuple(
            Series(r.mode.value, tuple((s.time, pick(s)) for s in r.series)) for r in reports)))
    page.heading("Devices at the end of the run")
    page.paragraph("One square per device, coloured by its lock value; hover for holders and capacity.")
    grids = [Grid(r.mode.value, device_cells((d.ref, d.state, d.capacity, d.consumed) for d in r.devices))
             for r in reports]
    page.grids(grids)
    values = _values(reports)
    if values:
        colours = grid_colours(grids)
        page.heading("Devices locked per value at end", 3)
        page.table(Table(("value", *(r.mode.value for r in reports)),
                         tuple((v, *(str(dict(r.final.by_value).get(v, 0)) for r in reports))
                               for v in values),
                         (False, *(True for _ in reports)),
                         swatches=tuple(colours.get(v, OTHER_COLOUR) for v in values)))
    return page.render()
