"""Deterministic generator of realistic ResourceSlices for the loader/lint benchmark.

The benchmark compares `dra-affinity lint` with a bare `yaml.load_all(CSafeLoader)`,
so the input must look like what drivers really publish: pools made of one
metadata slice (1–8 `sharingAffinity` extractors, guarded CEL) plus device slices
(1–128 devices with typed attributes and consumable capacity), all agreeing on
`pool.generation` and `resourceSliceCount`, spread over several multi-document
files. Seeded `random.Random` only: the same `(n, seed)` always writes the same bytes.

`generate_cluster` writes the scheduler benchmark's cluster instead: pools of
shareable NICs with two extractors each (`subnet`, `pkey`), consumable capacity `pods: 16`
(one pod each by default), one DeviceClass, and N ResourceClaims whose affinity values are
drawn from 20 subnets x 4 pkeys, so `simulate` and `dry-run` see locks form and conflict.

Run directly: `python -m bench.gen_slices N OUT_DIR [--seed S]`, or
`python -m bench.gen_slices --cluster CLAIMS OUT_DIR [--devices 1000 --pools 50]`.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

API_VERSION = "resource.k8s.io/v1"
SLICES_PER_FILE = 250
"""Several files, each large enough that per-file overhead does not dominate."""

_DRIVERS = ("networking.example.com", "gpu.example.com", "fpga.acme.io", "rdma.vendor.dev")
_KEYS = (
    "subnet", "pkey", "nvlink-domain", "vlan", "tenant", "partition",
    "numa-zone", "fabric", "security-domain", "rack",
)  # fmt: skip
_FIELDS = ("subnetID", "ibPKey", "domain", "vlanID", "tenantName", "partitionID", "zone")
_MODELS = ("A100", "H100", "MI300X", "CX7", "BF3", "U55C")


class _Literal(str):
    """A string the dumper writes as a `|` block, as humans write CEL in manifests."""


class _Dumper(yaml.CSafeDumper):
    """CSafeDumper plus literal blocks for multi-line expressions."""


def _literal(dumper: yaml.representer.SafeRepresenter, value: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")


_Dumper.add_representer(_Literal, _literal)


def _expression(rng: random.Random, driver: str) -> str:
    """One extractor in one of the shapes the KEP and driver authors use."""
    field = rng.choice(_FIELDS)
    version = rng.choice(("v1", "v1beta1", "v1alpha2"))
    shape = rng.randrange(5)
    kind = rng.choice(("NICConfig", "GPUConfig", "Config"))
    guard = f'object.apiVersion == "{driver}/{version}"\n  && object.kind == "{kind}"'
    if shape == 0:
        return _Literal(f'{guard}\n  ? object.{field} : ""\n')
    if shape == 1:
        return _Literal(f'{guard} && has(object.{field})\n  ? object.{field} : ""\n')
    if shape == 2:
        return f'object.?{field}.orValue("")'
    if shape == 3:
        return _Literal(
            f'(object.apiVersion == "{driver}/v1" ||\n object.apiVersion == "{driver}/v1beta1")\n'
            f'  && object.kind == "NICConfig"\n  ? object.{field} : ""\n'
        )
    return _Literal(
        f"cel.bind(cfg, object.?spec.orValue({{}}),\n"
        f'  has(cfg.{field}) ? string(cfg.{field}) : "")\n'
    )


def _metadata(rng: random.Random, name: str, node: str, driver: str) -> dict[str, Any]:
    return {
        "name": name,
        "uid": f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
        f"8{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}",
        "resourceVersion": str(rng.randrange(10**6, 10**8)),
        "creationTimestamp": f"2025-0{rng.randrange(1, 10)}-1{rng.randrange(10)}"
        f"T0{rng.randrange(10)}:12:33Z",
        "generateName": f"{node}-{driver.split('.')[0]}-",
        "labels": {"kubernetes.io/hostname": node, f"{driver}/pool": node},
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": node, "controller": True,
             "uid": f"{rng.getrandbits(64):016x}"}
        ],
    }  # fmt: skip


def _device(rng: random.Random, driver: str, index: int, shared: bool) -> dict[str, Any]:
    slots = rng.choice((4, 8, 16, 32))
    device: dict[str, Any] = {
        "name": f"dev-{index}",
        "attributes": {
            f"{driver}/model": {"string": rng.choice(_MODELS)},
            f"{driver}/index": {"int": index},
            f"{driver}/healthy": {"bool": rng.random() > 0.05},
            f"{driver}/firmware": {"version": f"{rng.randrange(1, 4)}.{rng.randrange(20)}.0"},
            f"{driver}/pciRoot": {"string": f"pci0000:{rng.randrange(256):02x}"},
        },
        "capacity": {
            f"{driver}/memory": {"value": f"{rng.choice((16, 40, 80, 141))}Gi"},
            f"{driver}/slots": {
                "value": str(slots),
                "requestPolicy": {
                    "default": "1",
                    "validRange": {"min": "1", "max": str(slots), "step": "1"},
                },
            },
        },
    }
    if shared:
        device["allowMultipleAllocations"] = True
    return device


def _pool_slices(rng: random.Random, pool_index: int, budget: int) -> list[dict[str, Any]]:
    """One pool: a metadata slice (most pools) and 1–4 device slices, at most `budget` slices."""
    driver = rng.choice(_DRIVERS)
    node = f"node-{pool_index:05d}"
    generation = rng.randrange(1, 20)
    with_meta = rng.random() < 0.7 and budget >= 2
    device_slices = max(1, min(budget - int(with_meta), rng.randrange(1, 5)))
    count = device_slices + int(with_meta)
    pool = {"name": node, "generation": generation, "resourceSliceCount": count}
    out: list[dict[str, Any]] = []
    if with_meta:
        keys = rng.sample(_KEYS, rng.randrange(1, 9))
        out.append({
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": _metadata(rng, f"{node}-{driver.split('.')[0]}-meta", node, driver),
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": dict(pool),
                "sharingAffinity": [
                    {"name": key, "expression": _expression(rng, driver)} for key in keys
                ],
            },
        })  # fmt: skip
    for s in range(device_slices):
        devices = [
            _device(rng, driver, s * 128 + d, with_meta) for d in range(rng.randrange(1, 129))
        ]
        out.append({
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": _metadata(rng, f"{node}-{driver.split('.')[0]}-{s}", node, driver),
            "spec": {"driver": driver, "nodeName": node, "pool": dict(pool), "devices": devices},
        })  # fmt: skip
    return out


def _slices(n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    produced = 0
    pool_index = 0
    while produced < n:
        for obj in _pool_slices(rng, pool_index, n - produced):
            produced += 1
            yield obj
        pool_index += 1


def generate(n: int, out_dir: Path, seed: int) -> list[Path]:
    """Write `n` ResourceSlices to `out_dir/slices-NNN.yaml`; return the files in order."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        path = out_dir / f"slices-{len(paths):03d}.yaml"
        text = yaml.dump_all(batch, Dumper=_Dumper, sort_keys=False, default_flow_style=False)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
        batch.clear()

    for obj in _slices(n, rng):
        batch.append(obj)
        if len(batch) == SLICES_PER_FILE:
            flush()
    if batch:
        flush()
    return paths


CLUSTER_DRIVER = "nic.bench.example.com"
CLUSTER_CLASS = "nic.bench.example.com"
CLUSTER_SUBNETS = 20
CLUSTER_PKEYS = 4
CLUSTER_PODS = 16


def _cluster_pool(index: int, devices: int) -> list[dict[str, Any]]:
    node = f"node-{index:03d}"
    pool = {"name": node, "generation": 1, "resourceSliceCount": 2}
    meta = {
        "apiVersion": API_VERSION, "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-meta"},
        "spec": {"driver": CLUSTER_DRIVER, "nodeName": node, "pool": dict(pool), "sharingAffinity": [
            {"name": "subnet", "expression": 'has(object.subnetID) ? object.subnetID : ""'},
            {"name": "pkey", "expression": 'has(object.ibPKey) ? object.ibPKey : ""'},
        ]},
    }
    nics = [{
        "name": f"nic-{d}", "allowMultipleAllocations": True,
        "attributes": {f"{CLUSTER_DRIVER}/model": {"string": "CX7"}},
        "capacity": {"pods": {"value": str(CLUSTER_PODS), "requestPolicy": {"default": "1"}}},
    } for d in range(devices)]
    slice_ = {
        "apiVersion": API_VERSION, "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-nics"},
        "spec": {"driver": CLUSTER_DRIVER, "nodeName": node, "pool": dict(pool), "devices": nics},
    }
    return [meta, slice_]


def _cluster_claim(index: int, rng: random.Random) -> dict[str, Any]:
    subnet = f"subnet-{rng.randrange(CLUSTER_SUBNETS):02d}"
    pkey = f"0x80{rng.randrange(CLUSTER_PKEYS):02x}"
    return {
        "apiVersion": API_VERSION, "kind": "ResourceClaim",
        "metadata": {"name": f"pod-{index:06d}", "namespace": "bench"},
        "spec": {"devices": {
            "requests": [{"name": "nic", "exactly": {"deviceClassName": CLUSTER_CLASS}}],
            "config": [{"requests": ["nic"], "opaque": {"driver": CLUSTER_DRIVER, "parameters": {
                "apiVersion": f"{CLUSTER_DRIVER}/v1", "kind": "NICConfig",
                "subnetID": subnet, "ibPKey": pkey, "mtu": 9000}}}],
        }},
    }


def generate_cluster(claims: int, out_dir: Path, seed: int = 0, *, devices: int = 1000,
                     pools: int = 50) -> list[Path]:
    """Write the scheduler benchmark's cluster: `slices.yaml`, `classes.yaml`, `claims.yaml`.

    `devices` are spread evenly over `pools` (the remainder to the first pools); the claims'
    values are seeded, so the same arguments always write the same bytes.
    """
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    per_pool = [devices // pools + (1 if i < devices % pools else 0) for i in range(pools)]
    slices = [obj for i, n in enumerate(per_pool) for obj in _cluster_pool(i, n)]
    device_class = {
        "apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": CLUSTER_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{CLUSTER_DRIVER}"'}}]},
    }
    written = []
    for name, docs in (("slices.yaml", slices), ("classes.yaml", [device_class])):
        path = out_dir / name
        path.write_text(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False), encoding="utf-8")
        written.append(path)
    path = out_dir / "claims.yaml"
    with path.open("w", encoding="utf-8") as handle:
        for start in range(0, claims, 1000):  # in batches: 100,000 claims never sit in memory twice
            batch = [_cluster_claim(i, rng) for i in range(start, min(claims, start + 1000))]
            handle.write(("---\n" if start else "") +
                         yaml.dump_all(batch, Dumper=_Dumper, sort_keys=False))
    written.append(path)
    return written


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="slices (or claims with --cluster)")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cluster", action="store_true", help="write the scheduler cluster instead")
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--pools", type=int, default=50)
    args = parser.parse_args()
    if args.cluster:
        paths = generate_cluster(args.n, args.out_dir, args.seed, devices=args.devices, pools=args.pools)
    else:
        paths = generate(args.n, args.out_dir, args.seed)
    for path in paths:
        print(path)


if __name__ == "__main__":
    _main()
