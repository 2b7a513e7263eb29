"""The differential campaign: generated extractors through the project's CEL and the real cel-go.

    nice -n 10 .venv/bin/python -m tests.policies.cel.oracle_campaign --count 100000 \
        --out oracle-findings/
    .venv/bin/python -m tests.policies.cel.oracle_campaign \
        --record-corpus tests/policies/cel/oracle_corpus.jsonl

Cases come from `oracle_cases` (case `i` of seed `s` is the same on every run). Each is answered
by cel-go (`../shared/oracle/celoracle`, under a memory limit) and by the project in a
long-lived worker process (`--worker`: the same module reading cases on stdin), so a case the
project cannot finish in `--timeout` seconds is counted as `hang` instead of stopping the run.
The dimensions compared are `oracle_compare.DIMENSIONS`. When the two disagree on the value,
error or cost, cel-go is asked again (`_REASKS`): iterating a JSON object follows Go's random map
order, so a case whose upstream answer changes between runs is counted as `nondeterministic`
and not compared. Cases the project's engine cannot compile (`engineLimited`) are counted
apart. The figures are printed as one JSON line: per dimension, cases compared and agreeing;
`agreeExceptCost` counts the cases that agree on everything but the runtime cost; every
disagreement is written to `--out/disagreements.jsonl` (with both answers) for study.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from tests.policies.cel import oracle
from tests.policies.cel.oracle_cases import cases, object_json
from tests.policies.cel.oracle_compare import DIMENSIONS, Disagreement, compare

_DETERMINISM_DIMENSIONS = frozenset({"value", "error", "cost", "outcome"})
_REASKS = 8
_WARM_UP = 300.0
"""How often cel-go is asked again before a disagreement counts: Go starts iterating a small
map at a random entry, so an object of k keys repeats its order with probability 1/k per ask
(eight asks leave 1 in 256 of two-key objects undetected)."""


def worker() -> None:
    """Answer cases (`{"expr", "object"}` lines) with `project_answer`, one line each."""
    from tests.policies.cel.oracle_compare import project_answer

    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = project_answer(request["expr"], object_json(request["object"]))
        except Exception:  # a bug to report, not a reason to stop the campaign
            answer = {"traceback": traceback.format_exc()}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def project_worker(timeout: float) -> oracle.LineProcess:
    return oracle.LineProcess([sys.executable, "-m", "tests.policies.cel.oracle_campaign",
                               "--worker"], timeout=timeout)


def judge(case: dict[str, Any], upstream: oracle.LineProcess,
          ours: oracle.LineProcess) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None,
                                             list[Disagreement]]:
    """(status, upstream answer, our answer, disagreements) of one case; status is `compared`,
    `oracle-failed`, `oracle-panic`, `hang`, `traceback`, `engine-limited` or
    `nondeterministic`."""
    request = {"expr": case["expr"], "object": case["object"]}
    answer = upstream.ask(request)
    if answer is None:
        return "oracle-failed", None, None, []
    if not answer.get("evaluated") and str(answer.get("evalError", "")).startswith("PANIC"):
        # cel-go itself panicked (the harness recovers): no verdict to compare with.
        return "oracle-panic", answer, None, []
    mine = ours.ask(request)
    if mine is None:
        return "hang", answer, None, []
    if "traceback" in mine:
        return "traceback", answer, mine, []
    if "engineLimited" in mine:
        return "engine-limited", answer, mine, []
    found = compare(answer, mine)
    if _reordered_iteration(case["expr"], found):
        return "nondeterministic", answer, mine, []
    if any(d.dimension in _DETERMINISM_DIMENSIONS for d in found):
        for _ in range(_REASKS):
            again = upstream.ask(request)
            if again != answer:
                return "nondeterministic", answer, mine, []
    return "compared", answer, mine, found


_ITERATING = (".map(", ".filter(", ".transformList(", ".transformMap(", ".transformMapEntry(")


def _reordered_iteration(expr: str, found: list[Disagreement]) -> bool:
    """Whether the only difference is the order of a list built by iterating: Go's order over
    a small JSON object can repeat on every ask and still not be the object's (or ours)."""
    if not found or any(d.dimension not in ("value", "outcome") for d in found) \
            or not any(token in expr for token in _ITERATING):
        return False
    for d in found:
        if d.dimension != "value":
            continue
        (up_type, up_value), (our_type, our_value) = d.upstream, d.ours
        if up_type != "list" or our_type != "list" or up_value[0] != "l" or our_value[0] != "l":
            return False
        if sorted(map(repr, up_value[1])) != sorted(map(repr, our_value[1])):
            return False
    return True


def campaign(count: int, seed: int, out: Path | None, timeout: float,
             progress: int = 0) -> dict[str, Any]:
    """Run `count` cases; the figures (module docstring)."""
    upstream = oracle.celoracle()
    ours = project_worker(timeout)
    statuses: Counter[str] = Counter()
    compared: Counter[str] = Counter()
    disagreed: Counter[str] = Counter()
    all_agree = 0
    agree_but_cost = 0
    sink = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        sink = (out / "disagreements.jsonl").open("w")
    try:
        # The worker imports and plans its first program before it answers: not a hang.
        ours.ask({"expr": "'a'", "object": {}}, timeout=_WARM_UP)
        for i, case in enumerate(cases(seed, count)):
            status, answer, mine, found = judge(case, upstream, ours)
            statuses[status] += 1
            if status == "compared" and answer is not None and mine is not None:
                for dimension in _compared_dimensions(answer, mine):
                    compared[dimension] += 1
                for d in found:
                    disagreed[d.dimension] += 1
                all_agree += not found
                agree_but_cost += all(d.dimension == "cost" for d in found)
            if sink is not None and (found or status in ("hang", "traceback")):
                sink.write(json.dumps({"index": i, "seed": seed, "status": status, **case,
                                       "dimensions": [d.dimension for d in found],
                                       "upstream": answer, "ours": mine}, default=str) + "\n")
            if progress and (i + 1) % progress == 0:
                print(json.dumps({"done": i + 1, "allAgree": all_agree}), file=sys.stderr)
    finally:
        upstream.close()
        ours.close()
        if sink is not None:
            sink.close()
    total = statuses["compared"]
    return {
        "cases": count, "seed": seed, "statuses": dict(statuses),
        "agreeAllDimensions": _rate(all_agree, total),
        "agreeExceptCost": _rate(agree_but_cost, total),
        "dimensions": {d: {"compared": compared[d], "agree": compared[d] - disagreed[d],
                           "rate": _rate(compared[d] - disagreed[d], compared[d])}
                       for d in DIMENSIONS},
        "oracleRestarts": upstream.restarts, "projectRestarts": ours.restarts,
    }


def _compared_dimensions(upstream: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """The dimensions `compare` looked at for this pair (mirrors its early returns)."""
    dims = ["verdict"]
    if "compileError" in upstream or "compileError" in ours:
        return dims
    dims += ["type", "estimate"]
    if "programError" in upstream or "programError" in ours:
        return dims
    dims.append("outcome")
    dims.append("value" if "evalError" not in upstream and "evalError" not in ours else "error")
    if upstream.get("evaluated") and ours.get("evaluated"):
        dims.append("cost")
    return dims


def record_corpus(path: Path) -> int:
    """Ask cel-go again for every case of a corpus file (JSON lines of `name`, `expr`,
    `object`) and write its answers into the cases' `upstream` field."""
    upstream = oracle.celoracle()
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    try:
        for case in cases:
            answer = upstream.ask({"expr": case["expr"], "object": case["object"]})
            if answer is None:
                print(f"{case['name']}: cel-go gave no answer", file=sys.stderr)
                return 1
            case["upstream"] = answer
    finally:
        upstream.close()
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    return 0


def _rate(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 3) if whole else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("oracle-findings"))
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds a case may take in the project's worker")
    parser.add_argument("--progress", type=int, default=0)
    parser.add_argument("--record-corpus", type=Path, metavar="JSONL",
                        help="record cel-go's answers into a regression corpus and stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    reason = oracle.unavailable()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    if args.record_corpus is not None:
        return record_corpus(args.record_corpus)
    print(json.dumps(campaign(args.count, args.seed, args.out, args.timeout, args.progress)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
