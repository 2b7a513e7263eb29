"""The long fuzz campaign (issue 14): generated expressions and AdmissionReviews, bounded.

    .venv/bin/python -m tests.fuzz.campaign --target expressions --cases 100000 --seconds 3600
    .venv/bin/python -m tests.fuzz.campaign --target reviews --cases 100000 --seconds 3600
    .venv/bin/python -m tests.fuzz.campaign --replay fuzz-findings/crash-0123456789ab.json

Each case runs in a child process (`runner`); crashes, hangs, tracebacks and broken
invariants are saved under `--out` (default `fuzz-findings/`) and counted. The run stops at
`--cases` or `--seconds`, whichever comes first, and prints its figures as one JSON line.
Hypothesis generates (no shrinking, no example database): the campaign explores, the
suite's bounded run (`test_fuzz`) and the regression tests pin what it found.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz.grammar import OBJECTS, admission_reviews, cel_expressions
from tests.fuzz.runner import Runner


class _Done(Exception):
    """Stops hypothesis's generation loop at the time limit."""


def _cases(target: str) -> st.SearchStrategy[dict[str, Any]]:
    if target == "expressions":
        return st.builds(lambda e, o: {"expr": e, "object": o}, cel_expressions(), OBJECTS)
    return st.builds(lambda r: {"review": r}, admission_reviews())


def campaign(target: str, cases: int, seconds: float, out: Path, seed: int | None = None
             ) -> dict[str, Any]:
    runner = Runner(out)
    counts: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    started = time.monotonic()

    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=seed is not None)
    @given(_cases(target))
    def one(case: dict[str, Any]) -> None:
        if time.monotonic() > deadline:
            raise _Done
        counts[runner.run(case).kind] += 1

    try:
        one()
    except _Done:
        pass
    finally:
        runner.close()
    return {"target": target, "cases": sum(counts.values()), "seconds": round(
        time.monotonic() - started, 1), **{k: counts.get(k, 0) for k in
                                           ("ok", "problem", "traceback", "crash", "hang")},
            "out": str(out)}


def replay(path: Path) -> dict[str, Any]:
    saved = json.loads(path.read_text())
    runner = Runner(path.parent / "replayed")
    try:
        outcome = runner.run(saved["case"])
    finally:
        runner.close()
    return {"replayed": str(path), "kind": outcome.kind, "detail": outcome.detail[:2000]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("expressions", "reviews"), default="expressions")
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--replay", type=Path)
    args = parser.parse_args()
    if args.replay is not None:
        print(json.dumps(replay(args.replay)))
        return
    print(json.dumps(campaign(args.target, args.cases, args.seconds, args.out)), flush=True)


if __name__ == "__main__":
    main()
