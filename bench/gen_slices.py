"""Deterministic generator of realistic ResourceSlices for the loader/lint benchmark.

The benchmark compares `dra-affinity lint` with a bare `yaml.load_all(CSafeLoader)`,
so the input must look like what drivers really publish: pools made of one
metadata slice (1–8 `sharingAffinity` extractors, guarded CEL) plus device slices
(1–128 devices with typed attributes and consumable capacity), all agreeing on
`pool.generation` and `resourceSliceCount`, spread over several multi-document
files. Seeded `random.Random` only: the same `(n, seed)` always writes the same bytes.

Run directly: `python bench/gen_slices.py N OUT_DIR [--seed S]`.
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


def _main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for path in generate(args.n, args.out_dir, args.seed):
        print(path)


if __name__ == "__main__":
    _main()
