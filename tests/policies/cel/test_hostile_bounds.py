"""No evaluation of a hostile extractor or selector exceeds its memory ceiling, hangs or crashes.

Each case (`hostile_corpus`: hand-picked worst cases and generated ones) is evaluated in a
long-lived child process, one at a time: the child's address space is capped (RLIMIT_AS) and
its peak resident memory reset before each case (`/proc/self/clear_refs`), so the test reads
each evaluation's own peak; a case that does not answer within the guard's timeout kills the
child and fails, naming the case. What is asserted is the outcome: a value or a classified
evaluation error, never the out-of-memory safety net, and a peak under 256 MiB. No time is
asserted (the CPU ceiling is the evaluator's own, and the figures are `bench/hostile_eval_bench.py`'s).

The long run of the generator is a documented command (docs/development.md):

    nice -n 10 .venv/bin/python -m tests.policies.cel.test_hostile_bounds --cases 2000
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from tests.cli import SCRIPT
from tests.policies.cel.hostile_corpus import HAND_PICKED, HostileCase, hostile_cases

MEMORY_CEILING_MIB = 256
GUARD_SECONDS = 120
"""The guard that kills a hung child: far above the 1 s ceiling, it only catches hangs."""

_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    from dra_affinity.policies.analysis.device import compile_selector, device_value, evaluate_selector
    from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
    from dra_affinity.policies.cel.compile import compile_expression
    from dra_affinity.policies.cel.eval.runtime import evaluate
    from dra_affinity.policies.model.resources import Device

    EXTRACTOR = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS)
    SELECTOR = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS, "dra-device")

    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) // 1024  # MiB
        return 0

    def run(case):
        if case["selector"]:
            selector = compile_selector(case["expression"], SELECTOR)
            if not selector.ok:
                return {"compiled": False, "error": selector.detail}
            attributes = {k: {"string": v} for k, v in case["obj"].items()}
            device = device_value(Device(0, "dev-0", False, attributes, {}), "dra.example.com")
            result = evaluate_selector(selector, device)
            return {"compiled": True, "error": result.error, "kind": "selector"}
        compiled = compile_expression(case["expression"], EXTRACTOR)
        if not compiled.ok:
            return {"compiled": False, "error": compiled.error_text}
        result = evaluate(compiled, {"object": case["obj"]})
        error = result.error
        return {"compiled": True, "error": error and error.message, "kind": error and error.kind,
                "cost": result.runtime_cost}

    run({"selector": False, "expression": "'warm'", "obj": {}})
    run({"selector": True, "expression": "true", "obj": {}})
    guard = (status("VmSize") + int(sys.argv[1])) << 20
    resource.setrlimit(resource.RLIMIT_AS, (guard, guard))
    for line in sys.stdin:
        case = json.loads(line)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = status("VmRSS")
        started = time.process_time()
        outcome = run(case)
        outcome["cpu_s"] = time.process_time() - started
        outcome["peak_mib"] = status("VmHWM") - before
        print(json.dumps(outcome), flush=True)
""")


class Evaluator:
    """The child process: one case in flight, answered as a JSON line."""

    def __init__(self) -> None:
        self.proc = self._start()

    @staticmethod
    def _start() -> subprocess.Popen[str]:
        # RLIMIT_AS: the child's address space at start plus 1 GiB, far above the 256 MiB
        # asserted, so an escape shows as the out-of-memory safety net, not as a dead child.
        return subprocess.Popen([sys.executable, "-c", _CHILD, "1024"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def evaluate(self, case: HostileCase) -> dict[str, object]:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(asdict(case)) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], GUARD_SECONDS)
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            stderr = proc.stderr.read() if proc.stderr is not None else ""
            self.proc = self._start()
            reason = "hung" if not ready else f"died ({proc.wait()})"
            raise AssertionError(f"{case.name}: the evaluation {reason}: {case.expression[:300]}"
                                 f"\n{stderr[-2000:]}")
        outcome: dict[str, object] = json.loads(line)
        return outcome

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=GUARD_SECONDS)


KINDS = {"cel evaluation failed", "cel evaluation cost exceeded", "missing field", "selector"}


def check_bounded(case: HostileCase, outcome: dict[str, object]) -> None:
    """A value or a classified error, never the out-of-memory net, within the memory ceiling."""
    error = outcome.get("error")
    assert "out of memory" not in str(error), (case.name, error)
    if outcome["compiled"] and error is not None:
        assert outcome["kind"] in KINDS, (case.name, outcome)
    peak = outcome["peak_mib"]
    assert isinstance(peak, int) and peak <= MEMORY_CEILING_MIB, (case.name, peak)


@pytest.fixture(scope="module")
def evaluator() -> Iterator[Evaluator]:
    child = Evaluator()
    yield child
    child.close()


# The hand-picked cases that must end in one of this project's bounds (not merely a value or
# cel-go's cost limit): what upstream would hang on or exhaust memory with.
STOPPED_BY_A_BOUND = {
    "shared-list-result", "shared-list-equality", "shared-map-equality", "shared-list-flatten",
    "shared-list-format", "shared-list-in", "shared-list-distinct", "shared-list-sets",
    "shared-map-transform", "mapped-references", "list-doubling", "replace-explosion",
    "replace-empty", "split-empty", "join-references", "format-references",
    "format-huge-precision", "quote-long", "find-all-empty", "quantity-exponent",
    "selector-shared-list", "selector-replace", "selector-join",
}


@pytest.mark.parametrize("case", HAND_PICKED, ids=[c.name for c in HAND_PICKED])
def test_hand_picked_case_is_bounded(evaluator: Evaluator, case: HostileCase) -> None:
    outcome = evaluator.evaluate(case)
    assert outcome["compiled"], (case.name, outcome["error"])
    check_bounded(case, outcome)
    if case.name in STOPPED_BY_A_BOUND:
        error = str(outcome["error"])
        assert ("evaluation stopped" in error or "quantity out of the range" in error
                or "is over 1000" in error), (case.name, error)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=hostile_cases())
def test_generated_case_is_bounded(evaluator: Evaluator, case: HostileCase) -> None:
    check_bounded(case, evaluator.evaluate(case))


# ------------------------------------------------------------------------------------------------
# End to end: the installed console script, under the same kind of guard
# ------------------------------------------------------------------------------------------------

E2E = [c for c in HAND_PICKED if not c.selector and c.name in {
    "shared-list-equality", "replace-explosion", "join-references", "find-all-empty",
    "range-sum"}]


def _command(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The console script with its address space capped (4 GiB: the interpreter and the CEL
    engine map far more than they use) and a timeout that only catches hangs."""
    def cap() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    env = {k: v for k, v in os.environ.items() if k not in {"GITHUB_ACTIONS", "GITHUB_WORKSPACE"}}
    proc = subprocess.run([str(SCRIPT), *args], input=stdin, capture_output=True, text=True,
                          timeout=GUARD_SECONDS, preexec_fn=cap, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("case", E2E, ids=[c.name for c in E2E])
def test_cel_check_ends_with_an_evaluation_error(case: HostileCase) -> None:
    proc = _command("cel", "check", "--stored", "--format", "json", case.expression,
                    "--object", json.dumps(case.obj))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["compiles"] is True
    assert doc["result"]["error"]["kind"] in ("cel evaluation failed",
                                              "cel evaluation cost exceeded")


def test_dry_run_ends_every_hostile_extractor_with_a_slice_error(tmp_path: Path) -> None:
    """One slice per case (the same claim reads each): every evaluation ends in an error the
    scheduler reports for the slice, or the estimate refuses the extractor first."""
    docs = []
    for i, case in enumerate(E2E):
        docs.append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"s{i}"},
            "spec": {"driver": "gpu.example.com", "nodeName": f"node-{i}",
                     "pool": {"name": f"p{i}", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d0"}],
                     "sharingAffinity": [{"name": "k", "expression": case.expression}]}})
    params = {k: v for c in E2E for k, v in c.obj.items()}
    claim = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": {"devices": {
            "requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}],
            "config": [{"requests": ["r"], "opaque": {"driver": "gpu.example.com",
                                                      "parameters": params}}]}}}
    (tmp_path / "slices.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                      "items": docs}))
    (tmp_path / "claim.json").write_text(json.dumps(claim))
    proc = _command("dry-run", "--format", "json", str(tmp_path / "slices.json"),
                    str(tmp_path / "claim.json"))
    assert proc.returncode in (0, 1), proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert results
    errors = [r for r in results if r.get("error")]
    kinds = {r["error"]["kind"] for r in errors}
    assert kinds <= {"cel evaluation failed", "cel evaluation cost exceeded"}, kinds
    assert all(r["outcome"] == "slice-error" for r in errors)
    text = json.dumps(results)
    assert "evaluation stopped" in text


# ------------------------------------------------------------------------------------------------
# The long run
# ------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description="Run generated hostile cases through the "
                                                 "evaluator, one child process, guarded.")
    parser.add_argument("--cases", type=int, default=2000)
    args = parser.parse_args()
    child = Evaluator()
    failures = 0
    cases = [*HAND_PICKED]

    @settings(max_examples=args.cases, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(hostile_cases())
    def collect(case: HostileCase) -> None:
        cases.append(case)

    collect()
    for n, case in enumerate(cases, 1):
        try:
            check_bounded(case, child.evaluate(case))
        except AssertionError as exc:
            failures += 1
            print(f"FAIL {case.name}: {exc}\n  {case.expression[:400]}", flush=True)
        if n % 200 == 0:
            print(f"{n} cases, {failures} failures", flush=True)
    child.close()
    print(f"{len(cases)} cases, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
