"""Benchmark of `locks`, `explain` and the exporter's event application at cluster scale.

The cluster-scale targets of docs/performance.md, on a generated cluster
(bench/gen_cluster.py: 10,000 devices in 500 pools, 100,000 allocated claims): `locks` and
`explain` each answer in <= 10 s with <= 1 GiB RSS, and the exporter applies one watch event
in <= 5 ms on average. Each command runs as the installed console script in its own process
(wall time and peak RSS from `wait4`); the exporter's figure is measured in-process on a
`LockExporter` built from the same objects, applying a mix of claim allocations, releases and
slice generation changes. Prints figures, never asserts on them.

Run: `python bench/locks_bench.py [--devices N] [--pools N] [--claims N] [--events N] [--live]`.
`--live` adds `locks --cluster` and `explain --cluster` read through the `kubernetes` client
from the test suite's API server stand-in serving the same objects (bench/serve_cluster.py, in
its own process: its CPU is not the command's).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_cluster import claim, driver_of, generate, pool_slices

SCRIPT = Path(sys.executable).with_name("dra-affinity")


def _timed(*args: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MiB, exit code) of one console-script run."""
    started = time.perf_counter()
    proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


@dataclass(frozen=True, slots=True)
class EventFigures:
    """The exporter's initial reconstruction and `events` watch events applied to it."""

    build_s: float
    events: int
    mean_ms: float
    """Wall time per event (what `dra_affinity_exporter_event_apply_seconds` observes)."""
    cpu_mean_ms: float
    """CPU time per event (user + system of the process): the steadier figure on a busy machine."""
    max_ms: float


def _exporter_events(doc: dict[str, Any], events: int, pools: int, per_pool: int) -> EventFigures:
    """Build an exporter from `doc` as `LockExporter.start` does, then time `events` watch events."""
    from dra_affinity.exporter.lock_exporter import LockExporter, settle
    from dra_affinity.policies.core.gc_pause import gc_paused

    exporter = LockExporter(api_factory=lambda plural: None)  # type: ignore[arg-type, return-value]
    plural = {"ResourceSlice": "resourceslices", "DeviceClass": "deviceclasses",
              "ResourceClaim": "resourceclaims"}
    by_kind: dict[str, list[dict[str, Any]]] = {name: [] for name in plural.values()}
    for n, item in enumerate(doc["items"]):
        item.setdefault("metadata", {})["resourceVersion"] = str(n + 1)
        by_kind[plural[item["kind"]]].append(item)
    started = time.perf_counter()
    with gc_paused():  # as LockExporter.start does around its initial lists
        for name in ("resourceslices", "deviceclasses", "resourceclaims"):
            exporter._replace(name, by_kind[name])
    settle()
    built = time.perf_counter() - started
    timings: list[float] = []
    cpu = 0.0
    for n in range(events):
        p, d = n % pools, (n * 7) % per_pool
        driver, node = driver_of(p), f"node-{p:04d}"
        if n % 10 == 9:  # a slice changes generation (its pool is gathered again)
            obj, kind, name = pool_slices(p, per_pool, generation=2 + n)[1], "MODIFIED", "resourceslices"
        elif n % 2 == 0:  # a new claim allocated to a device
            obj = claim(f"bench-{n}", "bench", driver, {"subnet": "subnet-1", "tenant": "team-1"},
                        (node, f"nic-{d:03d}"))
            kind, name = "ADDED", "resourceclaims"
        else:  # the previous one released
            obj = claim(f"bench-{n - 1}", "bench", driver, {"subnet": "subnet-1", "tenant": "team-1"}, None)
            kind, name = "MODIFIED", "resourceclaims"
        started, cpu_started = time.perf_counter(), time.process_time()
        exporter.apply(name, kind, obj)
        timings.append(time.perf_counter() - started)
        cpu += time.process_time() - cpu_started
    return EventFigures(built, events, 1000 * sum(timings) / len(timings), 1000 * cpu / events,
                        1000 * max(timings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=500)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=1_000)
    parser.add_argument("--live", action="store_true",
                        help="also read the cluster live (--cluster) from the API server stand-in")
    parser.add_argument("--exporter-only", action="store_true",
                        help="only the exporter's event figures, as one JSON object (what `python -m "
                             "bench --only locks` reads)")
    args = parser.parse_args()
    per_pool = max(args.devices // args.pools, 1)
    if args.exporter_only:
        figures = _exporter_events(generate(args.devices, args.pools, args.claims), args.events,
                                   args.pools, per_pool)
        print(json.dumps(asdict(figures)))
        return
    load = os.getloadavg()
    print(f"cluster: {args.devices} devices, {args.pools} pools, {args.claims} allocated claims; "
          f"load average {load[0]:.1f} on {os.cpu_count()} cores")
    doc = generate(args.devices, args.pools, args.claims)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.json"
        path.write_text(json.dumps(doc))
        size = path.stat().st_size / 2**20
        started = time.perf_counter()
        json.loads(path.read_text())
        floor = time.perf_counter() - started
        print(f"dump: {size:.0f} MiB of JSON; bare json.loads {floor:.2f} s")
        rows = [("locks --format json", ["locks", str(path), "--format", "json"]),
                ("locks --format prometheus", ["locks", str(path), "--format", "prometheus"]),
                ("explain (pending claim)",
                 ["explain", "pending/pending-0000", str(path), "--format", "json"]),
                ("explain (allocated claim)", ["explain", "ns-00/claim-000000", str(path)])]
        print(f"{'command':32} {'wall s':>8} {'cpu s':>7} {'x json.loads':>12} {'us/claim':>9} "
              f"{'peak RSS MiB':>13} {'exit':>5}   target <= 10 s, <= 1024 MiB")
        server = None
        if args.live:
            kubeconfig = Path(tmp) / "kubeconfig"
            server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("serve_cluster.py")),
                                       str(path), str(kubeconfig)], stdout=subprocess.PIPE, text=True)
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            live = ["--cluster", "--kubeconfig", str(kubeconfig)]
            rows += [("locks --cluster --format json", ["locks", *live, "--format", "json"]),
                     ("explain --cluster (pending)",
                      ["explain", "pending/pending-0000", *live, "--format", "json"])]
        for label, argv in rows:
            wall, cpu, rss, code = _timed(*argv)
            print(f"{label:32} {wall:8.2f} {cpu:7.2f} {wall / floor:12.1f} "
                  f"{1e6 * wall / max(args.claims, 1):9.0f} {rss:13.0f} {code:5d}")
        if server is not None:
            server.kill()
            server.wait()
    f = _exporter_events(doc, args.events, args.pools, per_pool)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"exporter: initial reconstruction {f.build_s:.2f} s; {f.events} watch events: mean "
          f"{f.mean_ms:.3f} ms wall, {f.cpu_mean_ms:.3f} ms CPU, max {f.max_ms:.1f} ms per event "
          f"(target mean <= 5 ms); bench process peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
