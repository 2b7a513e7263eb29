"""`python -m bench`: every benchmark, one table of figures and ratios, one JSON file.

Each benchmark runs the installed console script (or the existing benchmark scripts) in child
processes, so start-up, imports and memory are measured as users see them: wall time, CPU time
and peak RSS of each child (`os.wait4`). Sizes grow by 10x so the per-claim / per-file column
shows whether the growth is linear. The machine's load average is printed before and after:
figures from a busy machine are only comparable within one run. Nothing is asserted.

    python -m bench [--quick] [--only NAME ...] [--json OUT.json] [--compare OLD.json]

`--quick` runs the small sizes only (a few minutes on a shared 2-core machine); `--compare`
prints each figure next to the same figure of an earlier JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dra_affinity.policies.model.schema import RESOURCE_SLICE

from bench import gen_slices

BIN = Path(sys.executable).with_name("dra-affinity")
HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True, slots=True)
class Measure:
    """One child process: wall and CPU seconds, peak RSS, exit code, bytes written to stdout."""

    wall: float
    cpu: float
    rss_mb: float
    code: int
    out_bytes: int
    text: str = ""
    """What the child printed, when asked to keep it (a benchmark script's own figures)."""


@dataclass(slots=True)
class Row:
    """One line of the table."""

    bench: str
    case: str
    size: int
    unit: str
    """What `size` counts (claims, files, slices, runs)."""
    wall: float
    cpu: float
    rss_mb: float
    code: int
    extra: dict[str, float | str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.bench}/{self.case}/{self.size}"

    @property
    def per_unit_ms(self) -> float:
        return self.wall / self.size * 1e3 if self.size else 0.0


def measure(cmd: Sequence[str], *, cwd: Path | None = None, timeout: float = 900, keep: bool = False
            ) -> Measure:
    """Run `cmd`, stdout counted and dropped (`keep`: returned as text), stderr discarded; bounded
    by `timeout`."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.DEVNULL, cwd=cwd)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        size = out.seek(0, os.SEEK_END)
        text = ""
        if keep:
            out.seek(0)
            text = out.read().decode(errors="replace")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, size, text)


def _row(bench: str, case: str, size: int, unit: str, m: Measure, **extra: float | str) -> Row:
    return Row(bench, case, size, unit, m.wall, m.cpu, m.rss_mb, m.code,
               {"out_mb": round(m.out_bytes / 1e6, 2), **extra})


# -- benchmarks -------------------------------------------------------------------------------


def bench_cold(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """Start-up: `--version`, `lint --help`, one small file (the pre-commit case); median of runs."""
    runs = sizes[0]
    small = tmp / "one.yaml"
    small.write_text((REPO / "examples" / "single-subnet-nic.yaml").read_text())
    rows = []
    bare = [sys.executable, "-c", "import yaml"]
    cases = (("python -c 'import yaml'", bare), ("--version", [str(BIN), "--version"]),
             ("lint --help", [str(BIN), "lint", "--help"]), ("lint one file", [str(BIN), "lint", str(small)]))
    for case, cmd in cases:
        results = sorted((measure(cmd) for _ in range(runs)), key=lambda m: m.wall)
        rows.append(_row("cold", case, 1, f"run (median of {runs})", results[len(results) // 2]))
    return rows


def bench_lint(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """`lint` against the bare C-loader parse of the same files, with 1 and 2 workers when offered;
    yamllint and check-jsonschema (against the structural ResourceSlice schema lint checks) on
    the same files when they are on PATH (`lint_lead`: their wall time over `lint --jobs 1`'s).
    Neither is a dependency: `pip install yamllint check-jsonschema` to compare."""
    rows = []
    jobs = "--jobs" in subprocess.run([str(BIN), "lint", "--help"], capture_output=True, text=True).stdout
    for n in sizes:
        folder = tmp / f"slices-{n}"
        files = gen_slices.generate(n, folder, seed=1)
        bare = measure([sys.executable, str(HERE / "_bare_parse.py"), *map(str, files)], timeout=3600)
        rows.append(_row("lint", "bare yaml parse", n, "slices", bare))
        for workers in ((1, 2) if jobs else (0,)):
            cmd = [str(BIN), "lint", str(folder)] + (["--jobs", str(workers)] if workers else [])
            m = measure(cmd, timeout=3600)
            rows.append(_row("lint", f"lint --jobs {workers}" if workers else "lint", n, "slices", m,
                             vs_bare=round(bare.wall / m.wall, 2) if m.wall else 0.0,
                             vs_bare_cpu=round(bare.cpu / m.cpu, 2) if m.cpu else 0.0))
        schema = tmp / "resourceslice.schema.json"
        schema.write_text(json.dumps(RESOURCE_SLICE))
        others = (("yamllint -d relaxed", ["yamllint", "-d", "relaxed", str(folder)]),
                  ("check-jsonschema (one file per slice)",
                   ["check-jsonschema", "--schemafile", str(schema)]))
        for tool, cmd in others:
            if shutil.which(cmd[0]):
                if cmd[0] == "check-jsonschema":  # it reads one document per file
                    cmd += map(str, _one_per_file(files, tmp / f"single-{n}"))
                m = measure(cmd)
                lint_wall = next(r.wall for r in rows if r.size == n and r.case.startswith("lint"))
                rows.append(_row("lint", tool, n, "slices", m,
                                 lint_lead=round(m.wall / lint_wall, 2) if lint_wall else 0.0))
    return rows


def _one_per_file(files: Sequence[Path], folder: Path) -> list[Path]:
    """The same slices, one document per file (what check-jsonschema accepts)."""
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for path in files:
        for text in path.read_text().split("\n---\n"):
            single = folder / f"{len(out):05d}.yaml"
            single.write_text(text.removeprefix("---\n"))
            out.append(single)
    return out


def _cluster(tmp: Path, claims: int) -> list[str]:
    folder = tmp / f"cluster-{claims}"
    if not folder.exists():
        gen_slices.generate_cluster(claims, folder, seed=0)
    return [str(folder / name) for name in ("slices.yaml", "classes.yaml", "claims.yaml")]


def bench_simulate(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """`simulate --summary --format json` on the scheduler benchmark's cluster (1,000 devices, 50 pools)."""
    return [_row("simulate", "--summary --format json", n, "claims",
                 measure([str(BIN), "simulate", *_cluster(tmp, n), "--summary", "--format", "json"]))
            for n in sizes]


def bench_dryrun(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """`dry-run --summary --format json` on the same cluster (every claim x 50 pools), and
    `dry-run --format json` (every result streamed: ~39 KB of JSON per claim)."""
    return [_row("dry-run", " ".join(options), n, "claims",
                 measure([str(BIN), "dry-run", *_cluster(tmp, n), *options], timeout=3600))
            for n in sizes for options in (("--summary", "--format", "json"), ("--format", "json"))]


def bench_replay(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """The workload replay (what `simulate --workload` runs) on `bench/capacity_bench.py`'s
    cluster (1,000 shareable NICs in 50 pools, two extractors each): n arrivals of one template
    over 20 subnets x 4 pkeys, alpha and beta, each in its own process. `replay_cpu` is the
    replay's own CPU seconds as the script prints them; the row's `cpu s` adds start-up, imports
    and building the input."""
    rows = []
    for n in sizes:
        for mode in ("alpha", "beta"):
            m = measure([sys.executable, str(HERE / "capacity_bench.py"), "--one", str(n), mode], keep=True,
                        timeout=3600)
            figures = json.loads(m.text) if m.code == 0 and m.text.strip() else {}
            rows.append(_row("replay", f"workload replay ({mode})", n, "arrivals", m,
                             replay_cpu=figures.get("cpu", 0.0), placed=figures.get("placed", 0)))
    return rows


def bench_locks(sizes: Sequence[int], tmp: Path) -> list[Row]:
    """The cluster-scale figures over a cluster dump (bench/gen_cluster.py) of n allocated claims on
    n/10 devices in n/200 pools (100,000 claims: 10,000 devices, 500 pools): `locks` and `explain`
    (a pending and an allocated claim) on the dump as `kubectl get -o json` and `-o yaml` print it,
    and the exporter's time to apply one watch event (`bench/locks_bench.py --exporter-only`)."""
    rows = []
    for n in sizes:
        devices, pools = max(100, n // 10), max(10, n // 200)
        dumps = {"json": tmp / f"dump-{n}.json", "yaml": tmp / f"dump-{n}.yaml"}
        for path in dumps.values():  # in a child: a big dump in this process would count in every
            # child's peak RSS (a forked child's pages count until it execs)
            subprocess.run([sys.executable, str(HERE / "gen_cluster.py"), str(path), "--devices",
                            str(devices), "--pools", str(pools), "--claims", str(n), "--pending", "10",
                            "--seed", "1"], check=True, capture_output=True, timeout=1800)
        for fmt, path in dumps.items():
            cases = (("locks --format json", ["locks", str(path), "--format", "json"]),
                     ("explain pending --format json",
                      ["explain", "pending/pending-0000", str(path), "--format", "json"]),
                     ("explain allocated", ["explain", "ns-00/claim-000000", str(path)]))
            for case, argv in cases:
                rows.append(_row("locks", f"{case} ({fmt} dump)", n, "claims", measure([str(BIN), *argv])))
        rows.append(_exporter_row(n, devices, pools))
    return rows


def _exporter_row(claims: int, devices: int, pools: int, events: int = 1000) -> Row:
    """The exporter's per-event figures (wall and CPU ms per event; the target is a 5 ms mean)."""
    cmd = [sys.executable, str(HERE / "locks_bench.py"), "--exporter-only", "--devices", str(devices),
           "--pools", str(pools), "--claims", str(claims), "--events", str(events)]
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        text = out.read()
    code = os.waitstatus_to_exitcode(status)
    figures = json.loads(text) if code == 0 and text.strip() else {}
    extra: dict[str, float | str] = {
        "event_ms": round(figures.get("mean_ms", 0.0), 3),
        "event_cpu_ms": round(figures.get("cpu_mean_ms", 0.0), 3),
        "event_max_ms": round(figures.get("max_ms", 0.0), 1),
        "build_s": round(figures.get("build_s", 0.0), 2)}
    return Row("locks", f"exporter: {events} watch events", claims, "claims", wall,
               usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, extra)


def _script(name: str, *args: str) -> Callable[[Sequence[int], Path], list[Row]]:
    """An existing benchmark script, run as it is; its printed figures are kept in the JSON."""

    def run(sizes: Sequence[int], tmp: Path) -> list[Row]:
        proc_start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(HERE / name), *args], capture_output=True, text=True,
                              timeout=1800)
        wall = time.perf_counter() - proc_start
        row = Row(name.removesuffix("_bench.py"), " ".join(args) or "default", 1, "run", wall, 0.0, 0.0,
                  proc.returncode, {"output": proc.stdout.strip()})
        return [row]

    return run


@dataclass(frozen=True, slots=True)
class Bench:
    run: Callable[[Sequence[int], Path], list[Row]]
    quick: tuple[int, ...]
    full: tuple[int, ...]
    sized: bool = True
    """`--size` applies (input sizes); False for repetition counts and fixed scripts."""


BENCHES: dict[str, Bench] = {
    "cold": Bench(bench_cold, (5,), (15,), sized=False),
    "lint": Bench(bench_lint, (500,), (2000, 10000)),
    "simulate": Bench(bench_simulate, (1000, 10000), (1000, 10000, 100000)),
    "dry-run": Bench(bench_dryrun, (1000,), (1000, 10000, 100000)),
    "replay": Bench(bench_replay, (10000,), (10000, 100000)),
    "locks": Bench(bench_locks, (1000,), (1000, 10000, 100000)),
    "cel": Bench(_script("cel_bench.py", "--repeat", "3"), (1,), (1,), sized=False),
    "webhook": Bench(_script("webhook_bench.py", "--requests", "400", "--rounds", "3"), (1,), (1,),
                     sized=False),
}
"""Name -> benchmark, with its quick and full sizes."""


# -- report -----------------------------------------------------------------------------------


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _ratio(now: float, before: float) -> str:
    """An earlier figure and this run's over it ("-" when there is none)."""
    return f"{before:.2f} ({now / before:.2f}x)" if before else "-"


def render(rows: Sequence[Row], old: dict[str, dict[str, float]] | None = None) -> str:
    head = ["bench", "case", "size", "wall s", "cpu s", "wall ms/unit", "cpu ms/unit", "RSS MB", "exit",
            "notes"]
    if old is not None:
        head.insert(4, "old wall s")
        head.insert(6, "old cpu s")
    table = [head]
    for r in rows:
        notes = ", ".join(f"{k} {v}" for k, v in r.extra.items() if k != "output")
        cells = [r.bench, r.case, f"{r.size} {r.unit}", f"{r.wall:.2f}", f"{r.cpu:.2f}",
                 f"{r.per_unit_ms:.3f}", f"{r.cpu / r.size * 1e3 if r.size else 0.0:.3f}", f"{r.rss_mb:.0f}",
                 str(r.code), notes]
        if old is not None:
            before = old.get(r.key)
            cells.insert(4, _ratio(r.wall, before["wall"] if before else 0.0))
            cells.insert(6, _ratio(r.cpu, before["cpu"] if before else 0.0))
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in table]
    for r in rows:
        if "output" in r.extra:
            lines += ["", f"# {r.bench} ({r.case}):", str(r.extra["output"])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a few minutes)")
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHES), metavar="NAME",
                        help=f"run only these ({', '.join(BENCHES)})")
    parser.add_argument("--size", type=int, action="append",
                        help="override the input sizes of lint/simulate/dry-run/locks (repeatable)")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"), help="where to write")
    parser.add_argument("--compare", type=Path, metavar="OLD.json", help="an earlier run to diff against")
    args = parser.parse_args(argv)
    names = args.only or list(BENCHES)
    old = None
    if args.compare:
        old = {r["key"]: r for r in json.loads(args.compare.read_text())["rows"]}
    load_before = _load()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="dra-bench-") as tmp:
        for name in names:
            bench = BENCHES[name]
            sizes = bench.quick if args.quick else bench.full
            if args.size and bench.sized:
                sizes = tuple(args.size)
            rows += bench.run(sizes, Path(tmp))
    load_after = _load()
    kind = "quick" if args.quick else "full"
    header = (f"# python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
              f"load average before {load_before}, after {load_after}; {kind} run")
    print(header)
    print(render(rows, old))
    doc = {"header": header, "quick": args.quick, "load": {"before": load_before, "after": load_after},
           "rows": [{**asdict(r), "key": r.key, "per_unit_ms": r.per_unit_ms} for r in rows]}
    args.json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"# written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
