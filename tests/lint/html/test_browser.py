"""`--format html` pages rendered by a real headless Chromium: elements, console, pixels.

The page is made by the installed console script from the repository's worked example (the
NIC pools with 20 subnets, alpha vs beta), then opened from disk with no network.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from tests.cli import run
from tests.lint.html.browser import colours, render
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
    assert all(a["style"].startswith("background:hsl(") for a in locked)
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
    devices = [a for t, a in dom.tags if t == "div" and a.get("class") == "device"]
    assert sorted((a["data-state"], a["data-value"]) for a in devices) == [
        ("locked", "subnet=subnet-a"), ("locked", "subnet=subnet-c"), ("locked", "subnet=subnet-c"),
        ("unreconstructable", "")]
    legacy = next(a for a in devices if a["data-state"] == "unreconstructable")
    assert "holders: team-b/legacy" in legacy["title"] and "no value extracted for subnet" in legacy["title"]
    colours = {a["data-value"]: a["style"] for a in devices if a["data-value"]}
    assert len(set(colours.values())) == 2
    assert len(dom.having("table")) == 2
    distinct, inked = colours_of(shown.png)
    assert distinct > 10 and inked > 0.02, (distinct, inked)
