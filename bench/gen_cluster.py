"""Deterministic generator of a cluster dump for the `locks` / `explain` / `exporter` benchmark.

What `kubectl get resourceslices,deviceclasses,resourceclaims -A -o json` prints for a busy
cluster: `pools` pools (one node each) of `devices // pools` shareable NICs, each pool with a
metadata slice (extractors `subnet` and `tenant`, guarded CEL) and a device slice; one
DeviceClass per driver; `claims` allocated claims spread over the devices so that most devices
are locked, a few are unreconstructable (a legacy claim without the tenant key) and some stay
clean; plus `pending` claims left unallocated. Seeded `random.Random` only: the same arguments
always write the same bytes.

Run directly: `python bench/gen_cluster.py OUT.json|OUT.yaml [--devices N] [--pools N] [--claims N]`
(a `.yaml` name writes what `kubectl get ... -o yaml` prints: the same objects as YAML).
"""

from __future__ import annotations

import argparse
import json
import random
import uuid
import zlib
from pathlib import Path
from typing import Any

API_VERSION = "resource.k8s.io/v1"
DRIVERS = ("nic.example.com", "rdma.example.com")
CAPACITY = "example.com/vfs"
_SUBNETS = 40
_TENANTS = 8


def driver_of(pool: int) -> str:
    return DRIVERS[pool % len(DRIVERS)]


def pool_slices(pool: int, devices: int, generation: int = 1) -> list[dict[str, Any]]:
    """The metadata slice and the device slice of pool `node-<pool>`."""
    driver, node = driver_of(pool), f"node-{pool:04d}"
    spec = {"driver": driver, "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 2}}
    meta = {"apiVersion": API_VERSION, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver}-meta"},
            "spec": {**spec, "sharingAffinity": [
                {"name": "subnet", "expression": 'has(object.subnet) ? object.subnet : ""'},
                {"name": "tenant", "expression": 'has(object.tenant) ? object.tenant : ""'}]}}
    devs = [{"name": f"nic-{d:03d}", "allowMultipleAllocations": True,
             "attributes": {"model": {"string": "CX7"}},
             "capacity": {CAPACITY: {"value": "64", "requestPolicy": {"default": "1"}}}}
            for d in range(devices)]
    slice_ = {"apiVersion": API_VERSION, "kind": "ResourceSlice",
              "metadata": {"name": f"{node}-{driver}-0"}, "spec": {**spec, "devices": devs}}
    return [meta, slice_]


def claim(name: str, namespace: str, driver: str, params: dict[str, Any],
          device: tuple[str, str] | None) -> dict[str, Any]:
    """A ResourceClaim for one NIC with `params`; allocated to (pool, device) when given."""
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": driver}}],
                             "config": [{"opaque": {"driver": driver, "parameters": params}}]}}}
    if device is not None:
        pool, dev = device
        doc["status"] = {"allocation": {"devices": {"results": [
            {"request": "nic", "driver": driver, "pool": pool, "device": dev,
             "shareID": str(uuid.UUID(int=zlib.crc32(f"{namespace}/{name}".encode()))),  # a share
             "consumedCapacity": {CAPACITY: "1"}}]}}}
    return doc


def generate(devices: int = 10_000, pools: int = 500, claims: int = 100_000, pending: int = 100,
             seed: int = 1) -> dict[str, Any]:
    """A `List` of every object, as `kubectl get ... -o json` prints it."""
    rng = random.Random(seed)
    per_pool = max(devices // pools, 1)
    items: list[dict[str, Any]] = [
        {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": d},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{d}"'}}]}} for d in DRIVERS]
    for p in range(pools):
        items.extend(pool_slices(p, per_pool))
    # Each device gets one lock value; about 1 % of devices hold a legacy claim (no tenant:
    # unreconstructable) and about 5 % stay clean.
    locks: dict[tuple[int, int], tuple[str, str] | None] = {}
    for p in range(pools):
        for d in range(per_pool):
            roll = rng.random()
            locks[(p, d)] = None if roll < 0.05 else (f"subnet-{rng.randrange(_SUBNETS)}",
                                                       f"team-{rng.randrange(_TENANTS)}")
    held = [k for k, v in locks.items() if v is not None]
    for n in range(claims):
        p, d = held[n % len(held)] if n < len(held) else rng.choice(held)
        subnet, tenant = locks[(p, d)] or ("", "")
        params: dict[str, Any] = {"subnet": subnet, "tenant": tenant}
        if n < len(held) and rng.random() < 0.01:
            params = {"subnet": subnet}  # a claim from before the tenant key existed
        items.append(claim(f"claim-{n:06d}", f"ns-{n % 50:02d}", driver_of(p), params,
                           (f"node-{p:04d}", f"nic-{d:03d}")))
    for n in range(pending):
        p = rng.randrange(pools)
        items.append(claim(f"pending-{n:04d}", "pending", driver_of(p),
                           {"subnet": f"subnet-{rng.randrange(_SUBNETS)}",
                            "tenant": f"team-{rng.randrange(_TENANTS)}"}, None))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _kubectl_dumper(yaml: Any) -> Any:
    """PyYAML's dumper writing what kubectl writes: a shared Python object is written again
    each time, never as an anchor and alias (`&id001`), which kubectl never prints."""

    class Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
        def ignore_aliases(self, data: object) -> bool:
            return True

    return Dumper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=500)
    parser.add_argument("--claims", type=int, default=100_000)
    parser.add_argument("--pending", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    doc = generate(args.devices, args.pools, args.claims, args.pending, args.seed)
    if args.out.suffix in {".yaml", ".yml"}:
        import yaml

        with args.out.open("w") as out:
            yaml.dump(doc, out, Dumper=_kubectl_dumper(yaml), sort_keys=False)
    else:
        args.out.write_text(json.dumps(doc))
    print(f"wrote {len(doc['items'])} objects to {args.out}")


if __name__ == "__main__":
    main()
