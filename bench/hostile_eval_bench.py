"""Benchmark: CPU and peak memory of one evaluation of each hostile extractor and selector.

Each case of `tests/policies/cel/hostile_corpus.py` (hand-picked worst cases: values shared
through nested bindings, calls whose result outgrows their price, huge strings parsed, long
regular-expression input, lists near the cost limit) is evaluated once in a child process whose
peak resident memory is reset before each case, and the CPU seconds (`time.process_time`), the
peak memory above the child's resident size before the case, the runtime cost and the outcome
are printed. Then legitimate expressions whose runtime cost runs from 100,000 to 1,000,000 show
where the 1 s CPU ceiling stops what the scheduler would evaluate. Nothing is asserted.

    python bench/hostile_eval_bench.py [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.policies.cel.hostile_corpus import HAND_PICKED, HostileCase
from tests.policies.cel.test_hostile_bounds import Evaluator

# Ordinary work at growing runtime cost: a map over a range (about 15 per element), and a
# test calling a function on every element (about 5 per element: one engine call each, the
# slowest work per unit of cost).
LEGITIMATE = tuple(
    HostileCase(f"legit-map-{n // 1000}k", f"string(lists.range({n}).map(x, x * 2).size())")
    for n in (20_000, 40_000, 60_000)
) + tuple(
    HostileCase(f"legit-all-{n // 1000}k",
                f"string(lists.range({n}).all(x, string(x) != ''))")
    for n in (40_000, 80_000, 120_000, 160_000, 190_000)
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these cases")
    args = parser.parse_args()
    cases = [c for c in (*HAND_PICKED, *LEGITIMATE) if not args.only or c.name in args.only]
    child = Evaluator()
    print(f"{'case':<24} {'cpu s':>6} {'peak MiB':>8} {'cost':>10}  outcome")
    worst_cpu = worst_peak = 0.0
    for case in cases:
        outcome = child.evaluate(case)
        cpu, peak = float(outcome["cpu_s"]), float(outcome["peak_mib"])  # type: ignore[arg-type]
        worst_cpu, worst_peak = max(worst_cpu, cpu), max(worst_peak, peak)
        error = outcome.get("error")
        text = "value" if error is None else str(error)[:90]
        cost = outcome.get("cost", "")
        print(f"{case.name:<24} {cpu:>6.3f} {peak:>8.0f} {cost!s:>10}  {text}", flush=True)
    child.close()
    print(f"worst: {worst_cpu:.3f} s of CPU, {worst_peak:.0f} MiB above the resident size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
