"""Open a page in real headless Chromium (Debian's `chromium` package): its DOM, console and pixels.

No browser is downloaded at run time: `.ci/run` installs the distribution's package when it is
absent. Chromium prints every console message (errors, uncaught exceptions, CSP violations)
as an `INFO:CONSOLE` line with `--enable-logging=stderr`; the screenshot is decoded here
(PNG is zlib plus five row filters) so no imaging library is needed.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

BROWSERS = ("chromium", "chromium-browser")


INSTALL = "sudo apt-get install -y chromium"
"""The install line the README gives (Debian/Ubuntu); `.ci/run` runs it when Chromium is absent."""


def browser() -> str:
    """The Chromium binary; the test is skipped, naming the install line, when there is none."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"headless Chromium is needed for the HTML tests and is not installed: {INSTALL} "
                "(README.md, Quick start)")


@dataclass(frozen=True)
class Rendered:
    dom: str
    console: tuple[str, ...]
    png: bytes


def _flags(profile: Path) -> list[str]:
    return [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            "--hide-scrollbars"]


def render(page: Path, tmp: Path, size: tuple[int, int] = (1280, 1600)) -> Rendered:
    """The page's DOM after load, the console lines of both loads, and a screenshot."""
    url = page.resolve().as_uri()
    dom = subprocess.run([*_flags(tmp / "profile-dom"), "--dump-dom", url], capture_output=True,
                         text=True, timeout=120, check=True)
    shot = tmp / "screenshot.png"
    pic = subprocess.run([*_flags(tmp / "profile-shot"), f"--screenshot={shot}",
                          f"--window-size={size[0]},{size[1]}", url],
                         capture_output=True, text=True, timeout=120, check=True)
    console = tuple(line for line in (dom.stderr + pic.stderr).splitlines() if ":CONSOLE" in line)
    return Rendered(dom.stdout, console, shot.read_bytes())


_MEASURE = """
<script>
(() => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; };
  const out = {charts: [], legends: [], cards: []};
  for (const svg of document.querySelectorAll("svg.chart")) {
    const title = svg.querySelector("text.chart-title");
    out.charts.push({name: svg.dataset.chart, title: title ? title.textContent : null,
      titleBox: title ? box(title) : null, plot: box(svg.querySelector("rect.plot")),
      legend: [...svg.querySelectorAll("g.legend-item")].map((g) => ({text: g.textContent, box: box(g)})),
      series: [...svg.querySelectorAll("polyline.series")].map((p) => ({
        label: p.dataset.series, stroke: p.getAttribute("stroke"),
        dash: p.getAttribute("stroke-dasharray") || ""})),
      texts: [...svg.querySelectorAll("text")].map((t) => ({text: t.textContent, box: box(t)}))});
  }
  for (const legend of document.querySelectorAll("div.legend")) {
    out.legends.push([...legend.children].map((item) => ({
      text: item.textContent, other: item.dataset.other || null, box: box(item),
      swatch: item.querySelector(".swatch").style.background})));
  }
  for (const card of document.querySelectorAll(".device.card")) {
    out.cards.push({text: card.innerText, box: box(card), state: card.dataset.state,
      overflow: card.scrollWidth > card.clientWidth + 1 || card.scrollHeight > card.clientHeight + 1});
  }
  document.body.setAttribute("data-measured", JSON.stringify(out));
})();
</script>
"""
"""Run in a copy of the page (its CSP, which forbids scripts, taken out): where Chromium laid
out the charts' titles, plots, legends and texts, the legends' swatches, and the device cards."""


def measure(page: Path, tmp: Path, size: tuple[int, int] = (1280, 1600)) -> dict[str, Any]:
    """Bounding boxes of what a reader looks at, as Chromium lays the page out (`_MEASURE`)."""
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    probe = tmp / f"measured-{page.name}"
    probe.write_text(text.replace("</body>", _MEASURE + "</body>"))
    dom = subprocess.run([*_flags(tmp / "profile-measure"), f"--window-size={size[0]},{size[1]}",
                          "--dump-dom", probe.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    found = re.search(r'<body[^>]*\sdata-measured="([^"]*)"', dom)
    assert found, "the measuring script did not run"
    import html

    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two boxes share any area (touching edges do not count)."""
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data, header = 8, b"", None
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        chunk = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            data += chunk
        pos += 12 + length
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and interlace == 0 and colour in (2, 6), header
    channels = 4 if colour == 6 else 3
    raw = zlib.decompress(data)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + up) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[x] = (line[x] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def colours(png: bytes, step: int = 4) -> tuple[int, float]:
    """(distinct colours, share of non-white pixels) over a grid of sampled pixels."""
    width, height, rows = pixels(png)
    channels = len(rows[0]) // width
    seen: set[bytes] = set()
    inked = total = 0
    for y in range(0, height, step):
        row = rows[y]
        for x in range(0, width, step):
            px = row[x * channels:x * channels + 3]
            seen.add(px)
            total += 1
            inked += px != b"\xff\xff\xff"
    return len(seen), inked / total
