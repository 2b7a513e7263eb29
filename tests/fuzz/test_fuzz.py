"""The bounded fuzz run of the suite: the campaign's targets, a few hundred cases each.

The long run is `python -m tests.fuzz.campaign` (its docstring); its figures go in the
issue's note. Here every case still runs in a child process, so a SIGSEGV fails the test
with the saved case instead of killing pytest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fuzz.campaign import campaign


@pytest.mark.parametrize(("target", "cases"), [("expressions", 250), ("reviews", 120)])
def test_bounded_campaign_finds_nothing(tmp_path: Path, target: str, cases: int) -> None:
    figures = campaign(target, cases, seconds=240, out=tmp_path, seed=1)
    found = {p.name: json.loads(p.read_text())["detail"][:500] for p in tmp_path.glob("*.json")}
    assert figures["cases"] > 0
    assert found == {}, found
    assert figures["ok"] == figures["cases"]


CORPUS = Path(__file__).with_name("corpus")


def test_every_saved_finding_now_passes(tmp_path: Path) -> None:
    """Cases the campaign saved (`corpus/`, copied from `fuzz-findings/`) are regression tests:
    here, slices whose `sharingAffinity` was `false` or whose name was a map, which the
    webhook's trusted parse let through while `lint` reported SA000."""
    from tests.fuzz.runner import Runner

    runner = Runner(tmp_path)
    try:
        outcomes = {p.name: runner.run(json.loads(p.read_text())["case"])
                    for p in sorted(CORPUS.glob("*.json"))}
    finally:
        runner.close()
    assert outcomes
    assert {name: o.detail for name, o in outcomes.items() if o.kind != "ok"} == {}


def test_the_threat_model_s_long_run_commands_run(tmp_path: Path) -> None:
    """docs/threat-model.md shows the long campaign; each command runs (here cut to 3 cases)."""
    import re
    import subprocess
    import sys

    from tests.cli import REPO

    page = (REPO / "docs" / "threat-model.md").read_text()
    commands = [line.strip() for line in page.splitlines()
                if line.strip().startswith(".venv/bin/python -m tests.fuzz.campaign")]
    assert len(commands) == 2
    for command in commands:
        args = command.split()[3:]  # after `.venv/bin/python -m tests.fuzz.campaign`
        args = re.sub(r"--cases \d+", "--cases 3", " ".join(args)).split()
        proc = subprocess.run([sys.executable, "-m", "tests.fuzz.campaign", *args, "--out",
                               str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        assert figures["cases"] == 3 and figures["ok"] == 3
