"""One self-contained HTML page: device grids coloured by lock value, and line charts over time.

Shared by every command with `--format html` (`simulate --workload`, `locks`). The page loads
nothing: no script, no stylesheet, no font, no image from anywhere — inline CSS and inline SVG
only, so it opens from a CI artifact, an air-gapped laptop or a mail attachment alike, and a
Content-Security-Policy of `default-src 'none'` holds. Hover text is the `title` attribute
(devices: holders, lock, capacity; chart points: the value), which every browser shows without
JavaScript. Lock values get well-separated colours (`palette`), the same value the same colour
in every grid of the page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dra_affinity.policies.scheduler.locks import DeviceRef, DeviceState, render_map

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STATE_COLOURS = {"clean": "#f4f4f4", "untracked": "#d9d9d9", "unreconstructable": "#202020"}
"""Devices without a lock value: their state's colour (locked devices get their value's)."""

SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}
th{background:#f0f0f0;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.grids{display:flex;flex-wrap:wrap;gap:18px}.grid-block{flex:1 1 520px}
.pool{display:inline-block;margin:0 10px 10px 0;vertical-align:top}
.pool-name{font-size:11px;color:#555;margin-bottom:2px}
.cells{display:grid;grid-template-columns:repeat(10,14px);gap:2px}
.device{width:14px;height:14px;border:1px solid #999;box-sizing:border-box}
.legend{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:12px;margin:6px 0}
.swatch{display:inline-block;width:12px;height:12px;border:1px solid #999;vertical-align:middle;
margin-right:4px}
.chart{margin:6px 0 18px}.note{color:#555;font-size:13px}
"""


def palette(values: Sequence[str]) -> dict[str, str]:
    """Well-separated colours for the lock values of one page, in sorted order.

    Hues step by the golden angle, so neighbours in the list never look alike (a hash of the
    value gave two greens to two of three subnets); the same value has the same colour in
    every grid of the page.
    """
    out = {}
    for n, value in enumerate(sorted(values)):
        hue = (n * 137.508) % 360
        lightness = (45, 60, 35)[n % 3]
        out[value] = f"hsl({hue:.0f},70%,{lightness}%)"
    return out


@dataclass(frozen=True, slots=True)
class Cell:
    """One device: its name, state, lock value (empty unless locked) and the hover text."""

    name: str
    state: str
    value: str = ""
    hover: str = ""

    def colour(self, colours: dict[str, str]) -> str:
        return colours[self.value] if self.value else STATE_COLOURS.get(self.state, "#ffffff")


@dataclass(frozen=True, slots=True)
class PoolGrid:
    name: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class Grid:
    """Every pool's devices at one moment (one grid per mode when comparing)."""

    title: str
    pools: tuple[PoolGrid, ...]


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    y_label: str
    series: tuple[Series, ...]
    x_label: str = "time"


@dataclass(frozen=True, slots=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()


@dataclass
class Page:
    title: str
    blocks: list[str] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str) -> None:
        self.blocks.append(f'<p class="note">{html.escape(text)}</p>')

    def table(self, table: Table) -> None:
        self.blocks.append(render_table(table))

    def grids(self, grids: Sequence[Grid]) -> None:
        self.blocks.append(render_grids(grids))

    def chart(self, chart: Chart) -> None:
        self.blocks.append(render_chart(chart))

    def render(self) -> str:
        body = "\n".join(self.blocks)
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(self.title)}</title><style>{_STYLE}</style></head>\n"
            f"<body><h1>{html.escape(self.title)}</h1>\n{body}\n</body></html>\n"
        )


def device_cells(devices: Iterable[tuple[DeviceRef, DeviceState, Mapping[str, str], Mapping[str, str]]]
                 ) -> tuple[PoolGrid, ...]:
    """(device, state, capacity, consumed) grouped by pool: coloured by lock value, with the
    device, its state, lock, consumption and holders on hover."""
    pools: dict[str, list[Cell]] = {}
    for ref, state, capacity, consumed in devices:
        value = render_map(state.lock) if state.lock else ""
        holders = sorted({h.claim for h in state.holders})
        shown = ", ".join(holders[:12]) + (f" and {len(holders) - 12} more" if len(holders) > 12 else "")
        used = ", ".join(f"{k} {v}/{capacity.get(k, '?')}" for k, v in consumed.items())
        lines = (str(ref), f"state: {state.status.value}", f"lock: {value}" if value else "", state.reason,
                 f"consumed: {used}" if used else "", f"holders: {shown}" if holders else "holders: none")
        hover = "\n".join(x for x in lines if x)
        cell = Cell(ref.device, state.status.value, value, hover)
        pools.setdefault(f"{ref.driver}/{ref.pool}", []).append(cell)
    return tuple(PoolGrid(name, tuple(cells)) for name, cells in pools.items())


def render_table(table: Table) -> str:
    numeric = table.numeric or tuple(False for _ in table.headers)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    rows = []
    for row in table.rows:
        cells = "".join(
            f'<td class="num">{html.escape(c)}</td>' if numeric[i] else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(row))
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_grids(grids: Sequence[Grid]) -> str:
    values = sorted({c.value for g in grids for p in g.pools for c in p.cells if c.value})
    states = sorted({c.state for g in grids for p in g.pools for c in p.cells if not c.value})
    colours = palette(values)
    legend = [f'<span><span class="swatch" style="background:{colours[v]}"></span>'
              f"{html.escape(v)}</span>" for v in values]
    legend += [f'<span><span class="swatch" style="background:{STATE_COLOURS.get(s, "#fff")}"></span>'
               f"{html.escape(s)}</span>" for s in states]
    out = [f'<div class="legend">{"".join(legend)}</div>', '<div class="grids">']
    for grid in grids:
        out.append(f'<div class="grid-block" data-grid="{html.escape(grid.title)}">'
                   f"<h3>{html.escape(grid.title)}</h3>")
        for pool in grid.pools:
            cells = "".join(
                f'<div class="device" data-state="{html.escape(c.state)}" '
                f'data-value="{html.escape(c.value)}" style="background:{c.colour(colours)}" '
                f'title="{html.escape(c.hover or c.name)}"></div>'
                for c in pool.cells)
            out.append(f'<div class="pool"><div class="pool-name">{html.escape(pool.name)}</div>'
                       f'<div class="cells">{cells}</div></div>')
        out.append("</div>")
    out.append("</div>")
    return "\n".join(out)


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.1f}"


def render_chart(chart: Chart, width: int = 720, height: int = 240) -> str:
    """An inline SVG line chart; every series on the same axes (so alpha and beta compare)."""
    left, right, top, bottom = 56, 16, 12, 40
    points = [p for s in chart.series for p in s.points]
    x_max = max((x for x, _ in points), default=1.0) or 1.0
    y_max = max((y for _, y in points), default=1.0) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + plot_w * x / x_max

    def sy(y: float) -> float:
        return top + plot_h * (1 - y / y_max)

    parts = [f'<svg class="chart" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" viewBox="0 0 {width} {height}" data-chart="{html.escape(chart.title)}">',
             f"<title>{html.escape(chart.title)}</title>",
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#bbb"/>']
    for y in _ticks(0.0, y_max):
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" '
                     'stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{_number(y)}</text>")
    for x in _ticks(0.0, x_max):
        parts.append(f'<text x="{sx(x):.1f}" y="{top + plot_h + 16}" font-size="11" '
                     f'text-anchor="middle">{_number(x)}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="12" text-anchor="middle">'
                 f"{html.escape(chart.x_label)}</text>")
    parts.append(f'<text x="12" y="{top + plot_h / 2}" font-size="12" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + plot_h / 2})">{html.escape(chart.y_label)}</text>')
    for i, series in enumerate(chart.series):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in series.points)
        parts.append(f'<polyline class="series" data-series="{html.escape(series.label)}" fill="none" '
                     f'stroke="{colour}" stroke-width="2" points="{path}">'
                     f"<title>{html.escape(series.label)}</title></polyline>")
        parts.append(f'<rect x="{left + 10 + 90 * i}" y="{top + 6}" width="10" height="10" fill="{colour}"/>'
                     f'<text x="{left + 24 + 90 * i}" y="{top + 15}" font-size="12">'
                     f"{html.escape(series.label)}</text>")
    parts.append("</svg>")
    return "".join(parts)
