"""The long fuzz campaign: generated expressions and AdmissionReviews, bounded.

    .venv/bin/python -m tests.fuzz.campaign --target expressions --cases 100000 --seconds 7200
    .venv/bin/python -m tests.fuzz.campaign --target reviews --cases 100000 --seconds 7200
    .venv/bin/python -m tests.fuzz.campaign --replay fuzz-findings/crash-0123456789ab.json

Cases come from `grammar` with a seeded `RandomSource` (case `i` of seed `s` is the same on
every run); each runs in a long-lived child process (`runner`), the reviews through one real
webhook. Crashes, hangs, tracebacks, 5xx, dropped connections and broken invariants are saved
under `--out` (default `fuzz-findings/`) and counted. The run stops at `--cases` or
`--seconds`, whichever comes first, and prints its figures as one JSON line (with
`--progress N`, a line every N cases too, on stderr).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fuzz.grammar import cases as generated
from tests.fuzz.runner import Runner

KINDS = ("ok", "problem", "traceback", "crash", "hang", "5xx", "dropped")


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the campaign's children are
    reaped only at the end: the figures printed at the end include them)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def campaign(target: str, cases: int, seconds: float, out: Path, seed: int = 0,
             progress: int = 0) -> dict[str, Any]:
    runner = Runner(out, webhook=target == "reviews")
    counts: Counter[str] = Counter()
    started = time.monotonic()
    deadline = started + seconds
    done = 0
    try:
        for case in generated(target, seed, cases):
            if time.monotonic() > deadline:
                break
            counts[runner.run(case).kind] += 1
            done += 1
            if progress and done % progress == 0:
                elapsed = time.monotonic() - started
                print(json.dumps({"cases": done, "seconds": round(elapsed, 1),
                                  "cases_per_s": round(done / elapsed, 1),
                                  **{k: counts[k] for k in KINDS if k != "ok"}}),
                      file=sys.stderr, flush=True)
    finally:
        runner.close()
    elapsed = time.monotonic() - started
    return {"target": target, "seed": seed, "cases": done, "seconds": round(elapsed, 1),
            "cases_per_s": round(done / elapsed, 1) if elapsed else 0.0,
            "cpu_seconds": round(_cpu(), 1), **{k: counts.get(k, 0) for k in KINDS},
            "children": runner.children, "out": str(out)}


def replay(path: Path) -> dict[str, Any]:
    saved = json.loads(path.read_text())
    runner = Runner(path.parent / "replayed", webhook="review" in saved["case"], confirm=False)
    try:
        outcome = runner.replay(saved)
    finally:
        runner.close()
    return {"replayed": str(path), "kind": outcome.kind, "detail": outcome.detail[:2000]}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--target", choices=("expressions", "reviews"), default="expressions")
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=7200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--progress", type=int, default=0, metavar="N")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--replay", type=Path)
    args = parser.parse_args()
    if args.replay is not None:
        print(json.dumps(replay(args.replay)))
        return
    print(json.dumps(campaign(args.target, args.cases, args.seconds, args.out, args.seed,
                              args.progress)), flush=True)


if __name__ == "__main__":
    main()
