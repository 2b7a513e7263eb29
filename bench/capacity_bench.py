"""Capacity-planning replay at cluster scale: `simulate --workload` for 1k, 10k and 100k arrivals.

The capacity-planning cluster: 1,000 devices in 50 pools (20 NICs each, `pods: 16` consumable
capacity), every pool with two extractors (subnet and pkey); claims of one template vary over
20 subnets (Zipf) × 4 pkeys, arrive at rate 1 and stay an exponential time (mean 8,000, so the
cluster runs about half full at steady state). Each (size, mode) runs in its own process so the
peak RSS printed is that run's; `cpu s` is the process's CPU time, which a loaded machine
inflates less than the wall time. Prints figures; asserts nothing about time.

Run: `python bench/capacity_bench.py [--sizes 1000,10000,100000] [--modes alpha,beta]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

POOLS = 50
DEVICES_PER_POOL = 20
SUBNETS = 20
PKEYS = 4
LIFETIME_MEAN = 8000.0
_EXTRACTORS = (
    ("subnet", 'object.?kind.orValue("") == "NICConfig" ? object.?subnetID.orValue("") : ""'),
    ("pkey", 'object.?kind.orValue("") == "NICConfig" ? object.?pkey.orValue("") : ""'),
)


def cluster() -> list[dict[str, Any]]:
    """The slices (one metadata and one device slice per pool) and the claim template."""
    docs: list[dict[str, Any]] = []
    for n in range(POOLS):
        pool = {"name": f"node-{n:02d}", "generation": 1, "resourceSliceCount": 2}
        common = {"driver": "nic.example.com", "nodeName": f"node-{n:02d}", "pool": pool}
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"node-{n:02d}-meta"},
                     "spec": {**common, "sharingAffinity": [{"name": k, "expression": e}
                                                            for k, e in _EXTRACTORS]}})
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"node-{n:02d}-nics"},
                     "spec": {**common, "devices": [
                         {"name": f"nic{i}", "allowMultipleAllocations": True,
                          "capacity": {"nic.example.com/pods": {"value": "16",
                                                                "requestPolicy": {"default": "1"}}}}
                         for i in range(DEVICES_PER_POOL)]}})
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                 "metadata": {"name": "nic-pod", "namespace": "ml"},
                 "spec": {"spec": {"devices": {
                     "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}],
                     "config": [{"requests": ["nic"], "opaque": {"driver": "nic.example.com", "parameters": {
                         "kind": "NICConfig", "subnetID": "subnet-01", "pkey": "pkey-1"}}}]}}}})
    return docs


def _one(size: int, mode: str) -> dict[str, Any]:
    from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
    from dra_affinity.policies.scheduler.locks import Mode
    from dra_affinity.policies.scheduler.replay import replay
    from dra_affinity.policies.scheduler.workload import (
        Lifetime,
        LifetimeKind,
        TemplateSpec,
        Vary,
        Workload,
        zipf_weights,
    )

    objects = [parse(d).obj for d in cluster()]
    slices = [o for o in objects if isinstance(o, ResourceSlice)]
    claims = [o for o in objects if isinstance(o, ResourceClaim)]
    subnets = [f"subnet-{k:02d}" for k in range(1, SUBNETS + 1)]
    workload = Workload("bench", 1, size, 1.0, (TemplateSpec(
        "ml/nic-pod", 1.0, Lifetime(LifetimeKind.EXPONENTIAL, LIFETIME_MEAN),
        (Vary(("subnetID",), tuple(zip(subnets, zipf_weights(SUBNETS, 1.0), strict=True))),
         Vary(("pkey",), tuple((f"pkey-{k}", 1.0) for k in range(1, PKEYS + 1))))),))
    started, cpu = time.perf_counter(), time.process_time()
    report = replay(slices, claims, workload, mode=Mode(mode))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert not isinstance(report, list), report
    return {"size": size, "mode": mode, "seconds": round(elapsed, 3), "cpu": round(cpu, 3),
            "rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "placed": report.placed, "pending": report.pending, "departed": report.departed,
            "stranded_peak_pct": round(report.peak_stranded_percent, 2),
            "locked_peak": report.peak_locked, "extractions": report.extractions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--modes", default="alpha,beta")
    parser.add_argument("--one", nargs=2, metavar=("SIZE", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(int(args.one[0]), args.one[1])))
        return
    print(f"capacity replay: {POOLS} pools x {DEVICES_PER_POOL} devices, 2 extractors, "
          f"{SUBNETS} subnets x {PKEYS} pkeys, load average {os.getloadavg()[0]:.1f}")
    print(f"{'arrivals':>9} {'mode':>5} {'seconds':>8} {'cpu s':>6} {'us/arrival':>10} {'RSS MiB':>8} "
          f"{'placed':>7} {'pending':>7} {'departed':>8} {'locked':>6} {'stranded%':>9} {'extractions':>11}")
    for size in (int(s) for s in args.sizes.split(",")):
        for mode in args.modes.split(","):
            out = subprocess.run([sys.executable, __file__, "--one", str(size), mode], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out)
            per = 1e6 * r["seconds"] / size
            print(f"{size:>9} {mode:>5} {r['seconds']:>8.2f} {r['cpu']:>6.2f} {per:>10.1f} "
                  f"{r['rss_mib']:>8.1f} {r['placed']:>7} {r['pending']:>7} {r['departed']:>8} "
                  f"{r['locked_peak']:>6} {r['stranded_peak_pct']:>9.2f} {r['extractions']:>11}")


if __name__ == "__main__":
    main()
