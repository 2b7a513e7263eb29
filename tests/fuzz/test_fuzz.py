"""The bounded fuzz run of the suite, the harness's own tests, and the grammar's coverage.

The long run is `python -m tests.fuzz.campaign` (its docstring; docs/threat-model.md); its
figures go in the issue's note. Here every evaluating case still runs in a child process, so a
SIGSEGV fails the test with the saved case instead of killing pytest. What does not evaluate
(`lint`'s pipeline) is also a hypothesis property test in this process, so a failure shrinks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.fuzz import grammar
from tests.fuzz.campaign import campaign
from tests.fuzz.runner import Runner

CORPUS = Path(__file__).with_name("corpus")


@pytest.mark.parametrize(("target", "cases"), [("expressions", 400), ("reviews", 150)])
def test_bounded_campaign_finds_nothing(tmp_path: Path, target: str, cases: int) -> None:
    figures = campaign(target, cases, seconds=600, out=tmp_path, seed=1)
    found = {p.name: json.loads(p.read_text())["detail"][:500] for p in tmp_path.glob("*.json")}
    assert found == {}, found
    assert figures["cases"] == cases
    assert figures["ok"] == cases
    assert figures["children"] == 1  # one long-lived child answered every case


def test_a_segfaulting_case_is_caught_saved_confirmed_and_replayed(tmp_path: Path) -> None:
    """The child's self-test hook kills it with SIGSEGV, as the engine crashers found by fuzzing did: the
    runner reports a crash, saves that exact case with the cases before it, confirms it in a
    fresh child, and the next case gets a new child."""
    from tests.fuzz.campaign import replay

    runner = Runner(tmp_path)
    try:
        assert runner.run({"expr": "1 + 1"}).kind == "ok"
        outcome = runner.run({"selftest": "segv"})
        assert outcome.kind == "crash"
        assert outcome.detail == "exit -11"
        assert runner.run({"expr": "2"}).kind == "ok"
    finally:
        runner.close()
    (saved_path,) = tmp_path.glob("crash-*.json")
    saved = json.loads(saved_path.read_text())
    assert saved["case"] == {"selftest": "segv"}
    assert saved["preceding"] == [{"expr": "1 + 1"}]
    assert saved["reproduced"] == "alone"
    assert runner.children == 3  # the first, the one confirming the crash, the one after it
    assert replay(saved_path) == {"replayed": str(saved_path), "kind": "crash",
                                  "detail": "exit -11"}


def test_a_case_that_never_answers_is_a_hang(tmp_path: Path) -> None:
    runner = Runner(tmp_path, case_timeout=2.0, confirm=False)
    try:
        outcome = runner.run({"selftest": "hang"})
        assert (outcome.kind, outcome.detail) == ("hang", "no answer in 2.0s")
        assert runner.run({"expr": "'a'"}).kind == "ok"
    finally:
        runner.close()
    (saved_path,) = tmp_path.glob("hang-*.json")
    assert json.loads(saved_path.read_text())["case"] == {"selftest": "hang"}


def test_a_python_exception_is_a_traceback_not_a_crash(tmp_path: Path) -> None:
    runner = Runner(tmp_path)
    try:
        outcome = runner.run({"expr": 12})  # not a string: compile_expression raises
        assert outcome.kind == "traceback"
        assert "Traceback" in outcome.detail
        assert runner.children == 1
    finally:
        runner.close()


def test_every_saved_finding_now_passes(tmp_path: Path) -> None:
    """Cases the campaign saved (`corpus/`, copied from `fuzz-findings/`) are regression tests:
    slices whose `sharingAffinity` was `false` or whose name was a map, which the webhook's
    trusted parse let through while `lint` reported SA000, and a 500 on a float generation.
    They go through the real webhook again, as the campaign sent them."""
    saved = {p.name: json.loads(p.read_text()) for p in sorted(CORPUS.glob("*.json"))}
    assert saved
    runner = Runner(tmp_path, webhook=True)
    try:
        outcomes = {name: runner.replay(s, fresh=False) for name, s in saved.items()}
    finally:
        runner.close()
    assert {name: o.detail for name, o in outcomes.items() if o.kind != "ok"} == {}


def test_the_grammar_calls_every_kubernetes_library_function() -> None:
    """Every function the Kubernetes libraries declare (`policies/cel/k8s_library`) appears
    in a template of the grammar, so a library added later is fuzzed or this fails."""
    from dra_affinity.policies.cel.k8s_library import LIBRARIES

    declared = {d.function for lib in LIBRARIES for d in lib.declarations}
    templates = " ".join(t for t, _ in grammar._CALLS)
    missing = sorted(f for f in declared
                     if not re.search(r"(?<![A-Za-z_])" + re.escape(f) + r"\(", templates))
    assert missing == []


def test_generated_cases_are_reproducible_from_their_seed() -> None:
    first = list(grammar.cases("reviews", 7, 20))
    assert first == list(grammar.cases("reviews", 7, 20))
    assert first != list(grammar.cases("reviews", 8, 20))


def test_the_examples_are_mutated() -> None:
    assert len(grammar.example_expressions()) >= 5
    mutated = {grammar.mutated_example(grammar.RandomSource(i)) for i in range(200)}
    assert mutated - set(grammar.example_expressions())  # some changed
    assert mutated & set(grammar.example_expressions())  # some kept whole


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(grammar.strategy(grammar.resource_slice))
def test_lint_reports_every_generated_slice_and_reaches_the_next(doc: dict[str, object]) -> None:
    """In-process (lint does not evaluate): the loader and the linter never raise on a
    generated slice, report or lint it, and still lint the sentinel slice after it."""
    from tests.fuzz.child import lint_verdict

    _, _, problems = lint_verdict(doc, None)
    assert problems == []


def test_the_threat_model_s_long_run_commands_run(tmp_path: Path) -> None:
    """docs/threat-model.md shows the long campaign; each command runs (here cut to 3 cases)."""
    import subprocess
    import sys

    from tests.cli import REPO

    page = (REPO / "docs" / "threat-model.md").read_text()
    commands = [line.strip() for line in page.splitlines()
                if line.strip().startswith(("nice -n 19 .venv/bin/python -m tests.fuzz.campaign",
                                            ".venv/bin/python -m tests.fuzz.campaign"))]
    assert len(commands) == 2
    for command in commands:
        tail = command.split("-m tests.fuzz.campaign", 1)[1]
        args = re.sub(r"--cases \d+", "--cases 3", tail).split()
        proc = subprocess.run([sys.executable, "-m", "tests.fuzz.campaign", *args, "--out",
                               str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        figures = json.loads(proc.stdout.strip().splitlines()[-1])
        assert figures["cases"] == 3 and figures["ok"] == 3


@pytest.mark.parametrize("target", ["expressions", "reviews"])
def test_the_coverage_guided_driver_runs(tmp_path: Path, target: str) -> None:
    """`coverage_guided` (atheris, in the test extra) drives the grammar with
    libFuzzer's bytes: a short run ends cleanly and writes no crash; `--show` turns any
    input into a case of the target."""
    import subprocess
    import sys

    from tests.cli import REPO

    proc = subprocess.run([sys.executable, "-m", "tests.fuzz.coverage_guided", "--target", target,
                           "--", "-runs=60", f"-artifact_prefix={tmp_path}/"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 60 runs" in proc.stderr
    assert list(tmp_path.iterdir()) == []
    sample = tmp_path / "input"
    sample.write_bytes(bytes(range(256)))
    shown = subprocess.run([sys.executable, "-m", "tests.fuzz.coverage_guided", "--target", target,
                            "--show", str(sample)], capture_output=True, text=True, cwd=REPO,
                           timeout=120, check=True)
    case = json.loads(shown.stdout)["case"]
    assert set(case) == ({"expr", "object"} if target == "expressions" else {"review", "claim"})
