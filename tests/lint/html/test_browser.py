"""`--format html` pages rendered by a real headless Chromium: elements, console, layout, pixels.

The page is made by the installed console script from the repository's worked example (the
NIC pools with 20 subnets, alpha vs beta), then opened from disk with no network.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.lint.reporters.html_page import OKABE_ITO, OTHER_COLOUR, palette

from tests.cli import REPO, run
from tests.lint.html.browser import INSTALL, browser, colours, measure, overlap, render
from tests.lint.html.browser import colours as colours_of


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def having(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.rstrip("_")) == v
                                                              for k, v in attrs.items())]


def _page(tmp_path: Path) -> Path:
    out = tmp_path / "plan.html"
    result = run("simulate", "--workload", "examples/capacity/nic-20-subnets.yaml",
                 "examples/capacity/nic-pool.yaml", "--compare", "--format", "html", "-o", str(out))
    assert result.code == 0, result.err  # a report, written: alpha leaving a pod pending fails nothing
    return out


def test_the_capacity_report_renders_in_chromium(tmp_path: Path) -> None:
    page = _page(tmp_path)
    shown = render(page, tmp_path)
    assert shown.console == (), shown.console
    dom = _Elements()
    dom.feed(shown.dom)
    # one device square per NIC per mode, coloured, with its holders on hover
    devices = [a for t, a in dom.tags if t == "div" and a.get("class") == "device"]
    assert len(devices) == 2 * 24
    locked = [a for a in devices if a.get("data-value")]
    assert locked and all("holders:" in a["title"] for a in devices)
    assert {a["style"].removeprefix("background:") for a in locked} <= {*OKABE_ITO, OTHER_COLOUR}
    assert {a["data-grid"] for a in dom.having("div", class_="grid-block")} == {"alpha", "beta"}
    # three charts over time, alpha and beta on the same axes
    charts = [a["data-chart"] for t, a in dom.tags if t == "svg" and "data-chart" in a]
    assert charts == ["Locked devices", "Stranded capacity", "Pending claims"]
    series = [a["data-series"] for t, a in dom.tags if t == "polyline"]
    assert series == ["alpha", "beta"] * 3
    assert len(dom.having("table")) == 2
    # the screenshot shows the page, not a blank or an error page
    distinct, inked = colours(shown.png)
    assert distinct > 20 and inked > 0.02, (distinct, inked)


def test_the_page_loads_nothing_from_anywhere(tmp_path: Path) -> None:
    text = _page(tmp_path).read_text()
    assert "<script" not in text and "src=" not in text and "href=" not in text
    assert "@import" not in text and "url(" not in text and "@font-face" not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text


def test_the_checks_catch_a_broken_page(tmp_path: Path) -> None:
    """The console and pixel checks are not vacuous: a failing script and a blank page show."""
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    shown = render(broken, tmp_path)
    assert any("undefinedFunction" in line for line in shown.console), shown.console
    distinct, inked = colours(shown.png)
    assert distinct <= 2 and inked < 0.01


def test_the_locks_page_renders_in_chromium(tmp_path: Path) -> None:
    """`locks --format html` uses the same renderer: one square per device, coloured by lock value."""
    result = run("locks", "examples/cluster/dump.yaml", "--format", "html")
    assert result.code == 0, result.err
    page = tmp_path / "locks.html"
    page.write_text(result.out)
    shown = render(page, tmp_path, size=(1100, 900))
    assert shown.console == (), shown.console
    dom = _Elements()
    dom.feed(shown.dom)
    devices = [a for t, a in dom.tags if t == "div" and a.get("class") == "device card"]
    assert sorted((a["data-state"], a["data-value"]) for a in devices) == [
        ("locked", "subnet=subnet-a"), ("locked", "subnet=subnet-c"), ("locked", "subnet=subnet-c"),
        ("unreconstructable", "")]
    legacy = next(a for a in devices if a["data-state"] == "unreconstructable")
    assert "holders: team-b/legacy" in legacy["title"] and "no value extracted for subnet" in legacy["title"]
    bars = [a["style"] for t, a in dom.tags if t == "span" and a.get("class") == "bar"]
    assert len(bars) == 4 and len(set(bars)) == 3  # two lock values and the unreconstructable state
    assert len(dom.having("table")) == 2
    distinct, inked = colours_of(shown.png)
    assert distinct > 10 and inked > 0.02, (distinct, inked)


def test_without_chromium_the_tests_skip_naming_the_readmes_install_line(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no browser on PATH
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium") as skipped:
        browser()
    assert "README.md" in str(skipped.value)
    package = INSTALL.split()[-1]
    quick_start = (REPO / "README.md").read_text().split("\n## ", 2)[1]
    assert f"sudo apt-get install -y git {package}" in quick_start.replace("\n", " ")
    assert f"apt-get install -y -q {package}" in (REPO / ".ci" / "run").read_text()


def _chart_checks(chart: dict[str, Any]) -> None:
    """A chart a person can read: its title written, a legend entry per series, neither on the
    plot area, no two texts on each other, series told apart by colour and by dash."""
    assert chart["title"] == chart["name"], chart["title"]
    assert chart["titleBox"]["y"] + chart["titleBox"]["h"] <= chart["plot"]["y"]
    assert [item["text"] for item in chart["legend"]] == [s["label"] for s in chart["series"]]
    for item in chart["legend"]:
        assert not overlap(item["box"], chart["plot"]), (chart["name"], item)
        assert not overlap(item["box"], chart["titleBox"]), (chart["name"], item)
    texts = chart["texts"]
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not overlap(a["box"], b["box"]), (chart["name"], a, b)
    assert len({s["stroke"] for s in chart["series"]}) == len(chart["series"])
    assert len({s["dash"] for s in chart["series"]}) == len(chart["series"])


def test_the_capacity_reports_charts_and_legend_are_laid_out_for_reading(tmp_path: Path) -> None:
    page = _page(tmp_path)
    measured = measure(page, tmp_path)
    names = [c["name"] for c in measured["charts"]]
    assert names == ["Locked devices", "Stranded capacity", "Pending claims"]
    for chart in measured["charts"]:
        _chart_checks(chart)
    # the device grids' legend: the seven values holding the most devices in seven distinct
    # colour-blind-safe colours, the other values as one entry that says how many, then states
    (legend,) = measured["legends"]
    values = [item for item in legend if item["text"].startswith("subnet=")]
    (other,) = [item for item in legend if item["other"]]
    assert len(values) == len(OKABE_ITO) and len({v["swatch"] for v in values}) == len(OKABE_ITO)
    assert int(other["other"]) == 18 - len(OKABE_ITO)  # 18 values hold a device at the end
    assert "repeating-linear-gradient" in other["swatch"]
    for i, a in enumerate(legend):
        for b in legend[i + 1:]:
            assert not overlap(a["box"], b["box"]), (a, b)


def test_the_locks_page_shows_each_device_with_its_details_and_totals_once(tmp_path: Path) -> None:
    for extra, untracked in (((), False), (("--all",), True)):
        result = run("locks", "examples/cluster/dump.yaml", "--format", "html", *extra)
        assert result.code == 0, result.err
        page = tmp_path / f"locks{'-all' if untracked else ''}.html"
        page.write_text(result.out)
        measured = measure(page, tmp_path, size=(1100, 900))
        cards = measured["cards"]
        assert len(cards) == (5 if untracked else 4)
        assert not [c for c in cards if c["overflow"]], cards
        for i, a in enumerate(cards):
            assert a["text"].splitlines()[0] in {"eth0", "eth1", "gpu-0"}
            assert "holders: " in a["text"]
            for b in cards[i + 1:]:
                assert not overlap(a["box"], b["box"]), (a, b)
        legacy = next(c for c in cards if c["state"] == "unreconstructable")["text"]
        assert "no value extracted for subnet" in legacy and "holders: team-b/legacy" in legacy
        # totals once: one row per state, each KEP gauge beside its state; untracked devices
        # counted only when the page shows them
        totals = result.out.split("<h2>Totals</h2>", 1)[1].split("</table>", 1)[0]
        rows = re.findall(r"<tr><td>([a-z]+)</td><td class=\"num\">(\d+)</td><td>([a-z_]*)</td></tr>", totals)
        assert rows == [("clean", "0", ""), ("locked", "3", "sharing_affinity_locked_devices"),
                        ("unreconstructable", "1", "sharing_affinity_unreconstructable_devices"),
                        *([("untracked", "1", "")] if untracked else [])], totals
        assert result.out.count("sharing_affinity_locked_devices") == 1
        assert ("--all adds them" in result.out) is not untracked
        assert sum(c["state"] == "untracked" for c in cards) == (1 if untracked else 0)


def test_the_layout_checks_catch_a_legend_on_the_data(tmp_path: Path) -> None:
    """`overlap` and `measure` are not vacuous: a legend drawn inside the plot area is caught."""
    page = tmp_path / "legend-on-plot.html"
    page.write_text(
        '<!DOCTYPE html><html><body><svg class="chart" data-chart="c" width="300" height="200">'
        '<text class="chart-title" x="10" y="18">c</text><rect class="plot" x="10" y="40" width="280" '
        'height="150"/><g class="legend-item"><text x="20" y="60">alpha</text></g>'
        '<polyline class="series" data-series="alpha" stroke="#000" points="10,40 290,190"/></svg>'
        "</body></html>")
    (chart,) = measure(page, tmp_path)["charts"]
    assert overlap(chart["legend"][0]["box"], chart["plot"])


def test_the_palette_keeps_seven_distinct_colours_and_groups_the_rest() -> None:
    counts = {f"subnet={n:02d}": 30 - n for n in range(25)}
    colours = palette(counts)
    assert list(colours) == [f"subnet={n:02d}" for n in range(len(OKABE_ITO))]  # the most devices
    assert sorted(colours.values()) == sorted(OKABE_ITO)
    assert palette({"b": 1, "a": 1}) == {"a": OKABE_ITO[0], "b": OKABE_ITO[1]}  # ties: by name
