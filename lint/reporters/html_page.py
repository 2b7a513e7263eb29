"""One self-contained HTML page: device grids coloured by lock value, and line charts over time.

Shared by every command with `--format html` (`simulate --workload`, `locks`). The page loads
nothing: no script, no stylesheet, no font, no image from anywhere — inline CSS and inline SVG
only, so it opens from a CI artifact, an air-gapped laptop or a mail attachment alike, and a
Content-Security-Policy of `default-src 'none'` holds.

Made to be read by a person, colour-blind or not, on screen or printed:

* lock values are coloured from the Okabe-Ito palette (`palette`), whose seven colours stay
  apart under every common colour-vision deficiency; a page with more values gives the seven
  values that hold the most devices a colour each and draws the rest as one hatched "other"
  (hues generated beyond seven become near-identical, which is worse than saying "other");
  the same value has the same colour in every grid of the page;
* a chart carries its title and its legend above the plot area, never on the data, and its
  series differ by dash pattern as well as colour;
* a grid can show every device as a card with its state, lock, holders and consumption written
  out (`locks`); the compact squares (a capacity plan's two runs side by side) keep those
  details in the hover text, with a table of values beside them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ...policies.scheduler.locks import DeviceRef, DeviceState, render_map

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STATE_COLOURS = {"clean": "#f4f4f4", "untracked": "#d9d9d9", "unreconstructable": "#202020"}
"""Devices without a lock value: their state's colour (locked devices get their value's)."""

OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
"""Okabe & Ito's colour-universal palette, its black left out (the unreconstructable state's)."""

OTHER_COLOUR = "repeating-linear-gradient(45deg,#9a9a9a 0 2px,#ffffff 2px 4px)"
"""Lock values beyond the palette, drawn alike: a hatch no palette colour or state resembles."""

SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
SERIES_DASHES = ("", "6 4", "2 3", "8 3 2 3")

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
.chart{display:block;margin:6px 0 18px}.note{color:#555;font-size:13px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(230px,1fr));gap:8px;margin:4px 0 14px}
.device.card{width:auto;height:auto;border:1px solid #bbb;border-radius:4px;padding:6px 8px 6px 14px;
position:relative;font-size:12px;overflow-wrap:anywhere;background:#fff}
.card .bar{position:absolute;left:0;top:0;bottom:0;width:8px;border-radius:4px 0 0 4px}
.card .name{font-weight:600;font-size:13px}.card .line{color:#333;margin-top:2px}
.pool-head{font-size:14px;margin:14px 0 4px}.pool-head .note{font-weight:normal}
"""


def palette(counts: Mapping[str, int]) -> dict[str, str]:
    """A colour for each of the lock values that hold the most devices (`counts`: value ->
    devices), as many as `OKABE_ITO` has; values left out are drawn as `OTHER_COLOUR`.

    Ties go to the value that sorts first, so a page is coloured the same on every run.
    """
    ranked = sorted(counts, key=lambda v: (-counts[v], v))
    return dict(zip(ranked, OKABE_ITO, strict=False))


@dataclass(frozen=True, slots=True)
class Cell:
    """One device: its name, state, lock value (empty unless locked) and the hover text."""

    name: str
    state: str
    value: str = ""
    hover: str = ""
    details: tuple[str, ...] = ()
    """What a card writes under the device's name (state and lock, holders, consumption)."""

    def colour(self, colours: Mapping[str, str]) -> str:
        if self.value:
            return colours.get(self.value, OTHER_COLOUR)
        return STATE_COLOURS.get(self.state, "#ffffff")


@dataclass(frozen=True, slots=True)
class PoolGrid:
    name: str
    cells: tuple[Cell, ...]
    note: str = ""
    """Said beside the pool's name on cards (its node)."""


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
    swatches: tuple[str, ...] = ()
    """A colour per row, drawn before its first cell (a lock value's colour in the grids)."""


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

    def grids(self, grids: Sequence[Grid], *, cards: bool = False) -> None:
        self.blocks.append(render_grids(grids, cards=cards))

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


def device_cells(devices: Iterable[tuple[DeviceRef, DeviceState, Mapping[str, str], Mapping[str, str]]],
                 nodes: Mapping[str, str] | None = None) -> tuple[PoolGrid, ...]:
    """(device, state, capacity, consumed) grouped by pool: coloured by lock value, with the
    device, its state, lock, consumption and holders as details (and on hover); `nodes` names
    each pool's node ("driver/pool" -> node) for the cards' pool headings."""
    pools: dict[str, list[Cell]] = {}
    for ref, state, capacity, consumed in devices:
        value = render_map(state.lock) if state.lock else ""
        holders = sorted({h.claim for h in state.holders})
        shown = ", ".join(holders[:12]) + (f" and {len(holders) - 12} more" if len(holders) > 12 else "")
        used = ", ".join(f"{k} {v}/{capacity.get(k, '?')}" for k, v in consumed.items())
        details = tuple(x for x in (
            f"{state.status.value}: {value}" if value else state.status.value, state.reason,
            f"holders: {shown}" if holders else "holders: none", f"consumed: {used}" if used else "") if x)
        hover = "\n".join((str(ref), f"state: {state.status.value}", *(
            (f"lock: {value}",) if value else ()), *details[1:]))
        cell = Cell(ref.device, state.status.value, value, hover, details)
        pools.setdefault(f"{ref.driver}/{ref.pool}", []).append(cell)
    return tuple(PoolGrid(name, tuple(cells), f"node {nodes[name]}" if nodes and nodes.get(name) else "")
                 for name, cells in pools.items())


def render_table(table: Table) -> str:
    numeric = table.numeric or tuple(False for _ in table.headers)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    rows = []
    for n, row in enumerate(table.rows):
        swatch = _swatch(table.swatches[n]) if n < len(table.swatches) else ""
        cells = "".join(
            f'<td class="num">{html.escape(c)}</td>' if numeric[i]
            else f"<td>{swatch if i == 0 else ''}{html.escape(c)}</td>"
            for i, c in enumerate(row))
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _swatch(colour: str) -> str:
    return f'<span class="swatch" style="background:{colour}"></span>'


def grid_colours(grids: Sequence[Grid]) -> dict[str, str]:
    """The page's colour for each lock value of `grids` that gets one (see `palette`)."""
    counts: dict[str, int] = {}
    for cell in (c for g in grids for p in g.pools for c in p.cells if c.value):
        counts[cell.value] = counts.get(cell.value, 0) + 1
    return palette(counts)


def render_grids(grids: Sequence[Grid], *, cards: bool = False) -> str:
    """A legend, then each grid: pools of device squares, or of cards with the details written."""
    values = sorted({c.value for g in grids for p in g.pools for c in p.cells if c.value})
    states = sorted({c.state for g in grids for p in g.pools for c in p.cells if not c.value})
    colours = grid_colours(grids)
    legend = [f"<span>{_swatch(colours[v])}{html.escape(v)}</span>" for v in values if v in colours]
    others = [v for v in values if v not in colours]
    if others:
        legend.append(f'<span data-other="{len(others)}">{_swatch(OTHER_COLOUR)}other: {len(others)} '
                      f"more values{'' if cards else ' (the table below names each)'}</span>")
    legend += [f"<span>{_swatch(STATE_COLOURS.get(s, '#fff'))}{html.escape(s)}</span>" for s in states]
    out = [f'<div class="legend">{"".join(legend)}</div>', '<div class="grids">']
    for grid in grids:
        out.append(f'<div class="grid-block" data-grid="{html.escape(grid.title)}">'
                   + ("" if cards else f"<h3>{html.escape(grid.title)}</h3>"))
        for pool in grid.pools:
            out.append(_pool_cards(pool, colours) if cards else _pool_squares(pool, colours))
        out.append("</div>")
    out.append("</div>")
    return "\n".join(out)


def _pool_squares(pool: PoolGrid, colours: Mapping[str, str]) -> str:
    cells = "".join(
        f'<div class="device" data-state="{html.escape(c.state)}" '
        f'data-value="{html.escape(c.value)}" style="background:{c.colour(colours)}" '
        f'title="{html.escape(c.hover or c.name)}"></div>'
        for c in pool.cells)
    return (f'<div class="pool"><div class="pool-name">{html.escape(pool.name)}</div>'
            f'<div class="cells">{cells}</div></div>')


def _pool_cards(pool: PoolGrid, colours: Mapping[str, str]) -> str:
    note = f' <span class="note">{html.escape(pool.note)}</span>' if pool.note else ""
    cards = "".join(
        f'<div class="device card" data-state="{html.escape(c.state)}" data-value="{html.escape(c.value)}" '
        f'title="{html.escape(c.hover or c.name)}"><span class="bar" style="background:{c.colour(colours)}">'
        f'</span><div class="name">{html.escape(c.name)}</div>'
        + "".join(f'<div class="line">{html.escape(line)}</div>' for line in c.details) + "</div>"
        for c in pool.cells)
    return (f'<div class="pool-block"><div class="pool-head">{html.escape(pool.name)}{note}</div>'
            f'<div class="cards">{cards}</div></div>')


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count)]


def _number(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.1f}"


def render_chart(chart: Chart, width: int = 720, height: int = 270) -> str:
    """An inline SVG line chart; every series on the same axes (so alpha and beta compare).

    The title and the legend sit in a band above the plot area, so neither covers a line
    however high it runs.
    """
    left, right, top, bottom = 56, 16, 50, 40
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
             f'<text class="chart-title" x="{left}" y="18" font-size="14" font-weight="600">'
             f"{html.escape(chart.title)}</text>",
             f'<rect class="plot" x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" '
             'stroke="#bbb"/>']
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
    legend_x = float(left)
    for i, series in enumerate(chart.series):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        dash = SERIES_DASHES[i % len(SERIES_DASHES)]
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in series.points)
        parts.append(f'<polyline class="series" data-series="{html.escape(series.label)}" fill="none" '
                     f'stroke="{colour}" stroke-width="2"{dashed} points="{path}">'
                     f"<title>{html.escape(series.label)}</title></polyline>")
        label = html.escape(series.label)
        parts.append(f'<g class="legend-item"><line x1="{legend_x:.0f}" x2="{legend_x + 22:.0f}" '
                     f'y1="36" y2="36" stroke="{colour}" stroke-width="3"{dashed}/>'
                     f'<text x="{legend_x + 28:.0f}" y="40" font-size="12">{label}</text></g>')
        legend_x += 28 + 7.5 * len(series.label) + 18
    parts.append("</svg>")
    return "".join(parts)
