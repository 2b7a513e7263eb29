"""Benchmark: `dra-affinity lint` against a bare C-loader YAML parse of the same files.

Prints figures, asserts nothing. The baseline runs in the same process and run, so
the ratio is comparable across machines; the absolute numbers are not.

    python bench/lint_bench.py --slices 2000 [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_slices import generate


def _bare_load(files: list[Path]) -> int:
    count = 0
    for path in files:
        with path.open("rb") as handle:
            count += sum(1 for _ in yaml.load_all(handle, Loader=yaml.CSafeLoader))
    return count


def _lint_in_process(files: list[Path]) -> int:
    from dra_affinity.lint.commands.lint_cmd import run_lint
    from dra_affinity.policies.rules.engine import EngineOptions

    report, _ = run_lint(tuple(str(f) for f in files), EngineOptions())
    return report.summary.objects


def _best(func, files: list[Path], repeat: int) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    best = float("inf")
    result = 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = func(files)
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        files = generate(args.slices, Path(tmp), args.seed)
        size = sum(f.stat().st_size for f in files)
        bare, n_bare = _best(_bare_load, files, args.repeat)
        ours, n_ours = _best(_lint_in_process, files, args.repeat)
        script = Path(sys.executable).with_name("dra-affinity")
        start = time.perf_counter()
        proc = subprocess.run([str(script), "lint", tmp], capture_output=True)
        cli = time.perf_counter() - start

    print(f"python {platform.python_version()} on {platform.machine()}, "
          f"{args.slices} slices in {len(files)} files, {size / 1e6:.1f} MB")
    print(f"bare yaml.load_all (CSafeLoader): {bare * 1e3:8.1f} ms  {n_bare / bare:9.0f} slices/s")
    print(f"lint (in process, best of {args.repeat}): {ours * 1e3:8.1f} ms  {n_ours / ours:9.0f} slices/s")
    print(f"lint (console script, incl. start-up): {cli * 1e3:8.1f} ms  exit {proc.returncode}")
    print(f"ratio lint/bare: {ours / bare:.2f}x")


if __name__ == "__main__":
    main()
