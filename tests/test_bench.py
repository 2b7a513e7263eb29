"""`python -m bench` runs end to end at tiny sizes, writes its JSON and diffs an earlier run.

Only that it works: figures are printed for people, never asserted on (house rule)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli import REPO


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bench", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=600)


def test_bench_runs_writes_json_and_compares(tmp_path: Path) -> None:
    first = tmp_path / "first.json"
    proc = _bench("--quick", "--only", "simulate", "dry-run", "--size", "30", "--json", str(first))
    assert proc.returncode == 0, proc.stderr
    assert "load average before" in proc.stdout
    doc = json.loads(first.read_text())
    rows = {r["key"]: r for r in doc["rows"]}
    assert set(rows) == {"simulate/--summary --format json/30", "dry-run/--summary --format json/30",
                         "dry-run/--format json/30"}
    assert all(r["code"] == 0 and r["rss_mb"] > 0 and r["per_unit_ms"] > 0 for r in rows.values())
    again = _bench("--quick", "--only", "simulate", "--size", "30", "--json", str(tmp_path / "b.json"),
                   "--compare", str(first))
    assert again.returncode == 0, again.stderr
    assert "old wall s" in again.stdout and "x)" in again.stdout


def test_bench_runs_the_workload_replay_and_keeps_its_own_figures(tmp_path: Path) -> None:
    out = tmp_path / "replay.json"
    proc = _bench("--quick", "--only", "replay", "--size", "200", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: r for r in json.loads(out.read_text())["rows"]}
    assert set(rows) == {"replay/workload replay (alpha)/200", "replay/workload replay (beta)/200"}
    for row in rows.values():
        assert row["code"] == 0 and row["unit"] == "arrivals"
        assert row["extra"]["placed"] == 200 and 0 < row["extra"]["replay_cpu"] <= row["cpu"]


def test_the_performance_page_shows_the_command_and_its_options_exist() -> None:
    page = (REPO / "docs" / "performance.md").read_text()
    usage = _bench("--help").stdout
    assert "python -m bench --quick" in page
    for option in ("--quick", "--only", "--size", "--json", "--compare"):
        assert option in page and option in usage
