"""Differential campaign: the project's allocations against the real structured allocator.

    .venv/bin/python -m tests.policies.scheduler.allocdiff --claims 10000 [--seed 0] [--show 5]

Generates clusters (pools split over several slices, devices with attributes, capacities with
request policies, `allowMultipleAllocations`, bound claims with and without `shareID`),
DeviceClasses with selectors (some fail at run time on devices that lack an attribute), and
claim sequences without sharing affinity (upstream has none): requests with selectors,
ExactCount / All, firstAvailable, matchAttribute / distinctAttribute constraints, capacity
requests (also fractional ones against a `validRange` in milli-units) and admin access. The
project allocates each sequence claim by claim (`simulation.simulate`);
`../shared/oracle/allocoracle` (the `structured` allocator of kubernetes-1.36.2) answers the
same claims in trajectory mode: for each claim whether it places it, and whether the devices
the project picked are an allocation it accepts, on the project's own state.

Some cases are one pod: its claims allocated together (`a+b` in `--order`). The oracle
allocates claim by claim only, so a pod is judged twice: the project's devices for each
claim must be accepted on the project's trajectory, and where the oracle places every claim
of the pod one after the other, the project must place the pod on exactly those devices (the
joint search's first branch). A pod the project places only by moving an earlier claim is
proven placeable by the accepted devices; a pod neither side places cannot be told apart
from one only a joint search would place (the oracle has no joint mode).

The project runs at its default release (1.37), where `DRAFractionalCapacityRange` is off, as
1.36 has no such gate: both round a `validRange` step on whole numbers. Prints one JSON line
of figures; `--show N` prints N disagreements.

The oracle is a reference, not part of the product: `oracle_path()` is None where it is absent
or cannot run, and the suite's bounded version skips then.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dra_affinity.policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.simulation import Action, SimulationReport, Step, simulate

REPO = Path(__file__).resolve().parents[3]
ORACLE = REPO.parent / "shared" / "oracle" / "allocoracle"
MEMORY_LIMIT = 3 << 30
NODE = "node-1"
DRIVERS = ("gpu.example.com", "net.example.com")
MODELS = ("a", "b", "c")


def oracle_path() -> Path | None:
    """The allocator oracle when it is present and runs here, else None."""
    if not ORACLE.is_file():
        return None
    try:
        done = subprocess.run([str(ORACLE)], input=b"", capture_output=True, timeout=30, check=False)
    except OSError:
        return None
    return ORACLE if done.returncode == 0 else None


# -- generation -------------------------------------------------------------------------------


def _capacity(rng: random.Random, shareable: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rng.random() < 0.6:
        out["mem"] = {"value": rng.choice(["8Gi", "16Gi", "40Gi"])}
    if shareable or rng.random() < 0.3:
        slots: dict[str, Any] = {"value": str(rng.choice([2, 4, 6]))}
        policy = rng.random()
        if policy < 0.3:
            slots["requestPolicy"] = {"default": "1", "validRange": {"min": "1", "step": "1"}}
        elif policy < 0.5:
            slots["requestPolicy"] = {"default": "2", "validValues": ["1", "2", "4"]}
        elif policy < 0.6:
            slots["requestPolicy"] = {"validRange": {"min": "1", "max": "3"}}
        out["slots"] = slots
    if rng.random() < 0.3:  # fractional ranges: rounded on whole numbers without the gate
        bw: dict[str, Any] = {"value": rng.choice(["2", "3", "2500m"])}
        bounds = rng.choice([{"min": "500m", "step": "250m"}, {"min": "1500m", "step": "500m", "max": "3"},
                             {"min": "250m"}, {"min": "100m", "step": "300m", "max": "2500m"}])
        bw["requestPolicy"] = {"validRange": dict(bounds)}
        if rng.random() < 0.6:
            bw["requestPolicy"]["default"] = bounds["min"]
        out["bw"] = bw
    return out


def _device(rng: random.Random, name: str, driver: str) -> dict[str, Any]:
    attributes: dict[str, Any] = {"model": {"string": rng.choice(MODELS)}}
    if rng.random() < 0.85:
        attributes["mem"] = {"int": rng.choice([8, 16, 32])}
    if rng.random() < 0.8:
        attributes["numa"] = {"int": rng.choice([0, 1])}
    if rng.random() < 0.2:
        attributes[f"{driver}/family"] = {"string": rng.choice(["x", "y"])}
    shareable = rng.random() < 0.35
    device: dict[str, Any] = {"name": name, "attributes": attributes}
    capacity = _capacity(rng, shareable)
    if capacity:
        device["capacity"] = capacity
    if shareable:
        device["allowMultipleAllocations"] = True
    return device


def _slices(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for driver in DRIVERS[: rng.choice([1, 1, 2])]:
        for p in range(rng.randint(1, 3)):
            pool = f"pool-{p}"
            count = rng.choice([1, 1, 2, 3])
            names = [f"{pool}-s{i}" for i in range(count)]
            rng.shuffle(names)  # file order is not name order
            n = 0
            for slice_name in names:
                devices = []
                for _ in range(rng.randint(0 if count > 1 else 1, 3)):
                    devices.append(_device(rng, f"dev-{n}", driver))
                    n += 1
                out.append({
                    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"name": f"{driver.split('.')[0]}-{slice_name}"},
                    "spec": {"driver": driver, "nodeName": NODE, "devices": devices,
                             "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}},
                })
    return out


def _classes() -> list[dict[str, Any]]:
    def cls(name: str, *expressions: str) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if expressions:
            spec["selectors"] = [{"cel": {"expression": e}} for e in expressions]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": spec}
    return [
        cls("gpu", 'device.driver == "gpu.example.com"'),
        cls("net", 'device.driver == "net.example.com"'),
        cls("any"),
        cls("big", 'device.driver == "gpu.example.com"', 'device.attributes["gpu.example.com"].mem >= 16'),
    ]


_REQUEST_SELECTORS = (
    'device.attributes["{d}"].model == "a"',
    'device.attributes["{d}"].model != "c"',
    'device.attributes["{d}"].numa == 0',
    'has(device.attributes["{d}"].mem) && device.attributes["{d}"].mem >= 16',
    'device.attributes["{d}"].mem <= 16',
    'device.allowMultipleAllocations',
    '"slots" in device.capacity["{d}"]',
)


def _exact(rng: random.Random, counts: bool = True, sub: bool = False) -> dict[str, Any]:
    cls = rng.choice(["gpu", "gpu", "net", "any", "big"])
    driver = "net.example.com" if cls == "net" else "gpu.example.com"
    spec: dict[str, Any] = {"deviceClassName": cls}
    if rng.random() < 0.5:
        spec["selectors"] = [{"cel": {"expression": rng.choice(_REQUEST_SELECTORS).format(d=driver)}}]
    mode = rng.random()
    if counts and mode < 0.12:
        spec["allocationMode"] = "All"
    elif counts and mode < 0.4:
        spec["allocationMode"] = "ExactCount"
        spec["count"] = rng.choice([1, 2, 2, 3])
    if rng.random() < 0.35:
        spec["capacity"] = {"requests": {"slots": rng.choice(["1", "2", "3"])}}
    if rng.random() < 0.2:
        spec.setdefault("capacity", {"requests": {}})["requests"]["bw"] = rng.choice(
            ["100m", "600m", "1", "1100m", "1500m", "2"])
    if rng.random() < 0.04 and not sub:  # a sub-request has no adminAccess field
        spec["adminAccess"] = True
    return spec


def _claim(rng: random.Random, name: str) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for r in range(rng.choice([1, 1, 1, 2, 2, 3])):
        if rng.random() < 0.2:
            subs = [{"name": f"s{i}", **_exact(rng, sub=True)} for i in range(rng.randint(2, 3))]
            if rng.random() < 0.05:
                subs[-1]["deviceClassName"] = "missing"
            requests.append({"name": f"r{r}", "firstAvailable": subs})
        else:
            requests.append({"name": f"r{r}", "exactly": _exact(rng)})
    devices: dict[str, Any] = {"requests": requests}
    if rng.random() < 0.3:
        constraint: dict[str, Any] = {}
        attr = rng.choice(["model", "numa", "mem", "family"])
        domain = "gpu.example.com"
        key = "matchAttribute" if rng.random() < 0.6 else "distinctAttribute"
        constraint[key] = f"{domain}/{attr}"
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = rng.sample([r["name"] for r in requests], 2)
        devices["constraints"] = [constraint]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": devices}}


def _pod_claim(rng: random.Random, name: str) -> dict[str, Any]:
    """A claim of a generated pod: a claim of `_claim` now and then, else one request that
    often competes with its siblings for the same devices (so that the pod's search has to
    move an earlier claim). No admin access: within one `Allocate` the devices it takes are in
    use for the pod's other claims, which the oracle, claim by claim, cannot show
    (test_allocator.py checks that rule)."""
    if rng.random() < 0.3:
        claim = _claim(rng, name)
        for request in claim["spec"]["devices"]["requests"]:  # see below
            request.get("exactly", {}).pop("adminAccess", None)
        return claim
    spec: dict[str, Any] = {"deviceClassName": rng.choice(["gpu", "any", "big"])}
    if rng.random() < 0.6:
        spec["selectors"] = [{"cel": {"expression": rng.choice(_REQUEST_SELECTORS[:5]).format(
            d="gpu.example.com")}}]
    if rng.random() < 0.3:
        spec["allocationMode"] = "ExactCount"
        spec["count"] = 2
    if rng.random() < 0.2:
        spec["capacity"] = {"requests": {"slots": rng.choice(["1", "2"])}}
    devices: dict[str, Any] = {"requests": [{"name": "r0", "exactly": spec}]}
    if spec.get("count") == 2 and rng.random() < 0.5:
        devices["constraints"] = [{"matchAttribute": f"gpu.example.com/{rng.choice(['numa', 'model'])}"}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"devices": devices}}


def _bound(rng: random.Random, slices: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """A claim already allocated: one result on a random device, with or without `shareID`."""
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d)
               for s in slices for d in s["spec"]["devices"]]
    if not devices:
        return None
    driver, pool, device = rng.choice(devices)
    result: dict[str, Any] = {"request": "r0", "driver": driver, "pool": pool, "device": device["name"]}
    if device.get("allowMultipleAllocations") and rng.random() < 0.8:
        result["shareID"] = f"00000000-0000-0000-0000-{rng.randrange(16**12):012x}"
        if rng.random() < 0.7 and "slots" in device.get("capacity", {}):
            result["consumedCapacity"] = {"slots": rng.choice(["1", "2"])}
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
             "spec": {"devices": {"requests": [{"name": "r0", "exactly": {"deviceClassName": "any"}}]}},
             "status": {"allocation": {"devices": {"results": [result]}}}}
    return claim


@dataclass
class Case:
    id: int
    slices: list[dict[str, Any]]
    classes: list[dict[str, Any]]
    bound: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    pod: bool = False
    """The claims are one pod's, allocated together."""


def cases(seed: int, claims: int) -> Iterator[Case]:
    """Generated cases until `claims` claims to allocate have been produced."""
    rng = random.Random(seed)
    made = 0
    n = 0
    while made < claims:
        slices = _slices(rng)
        bound = [b for i in range(rng.choice([0, 0, 1, 2])) if (b := _bound(rng, slices, f"bound-{i}"))]
        pod = rng.random() < 0.3 and claims - made >= 2
        size = rng.randint(2, 3) if pod else rng.randint(1, 5)
        make = _pod_claim if pod else _claim
        todo = [make(rng, f"c{i}") for i in range(min(size, claims - made))]
        made += len(todo)
        yield Case(n, slices, _classes(), bound, todo, pod)
        n += 1


# -- both sides -------------------------------------------------------------------------------


def _models(docs: Sequence[dict[str, Any]]) -> list[Any]:
    out = []
    for doc in docs:
        result = parse(doc)
        if result.obj is None:
            raise ValueError(f"generated object does not parse: {result.findings}")
        out.append(result.obj)
    return out


@dataclass
class ProjectClaim:
    placed: bool
    devices: list[dict[str, str]]
    failure: str = ""


def project(case: Case) -> list[ProjectClaim]:
    slices = [m for m in _models(case.slices) if isinstance(m, ResourceSlice)]
    classes = [m for m in _models(case.classes) if isinstance(m, DeviceClass)]
    claims = [m for m in _models(case.bound + case.claims) if isinstance(m, ResourceClaim)]
    steps = None
    if case.pod:
        names = [f"default/{c['metadata']['name']}" for c in case.claims]
        steps = [Step(Action.ALLOCATE, name, n < len(names) - 1) for n, name in enumerate(names)]
    report = simulate(slices, claims, steps, classes=classes)
    assert isinstance(report, SimulationReport), report
    out = []
    for step in report.steps:
        if step.step.action is not Action.ALLOCATE:
            continue
        devices = [{"request": p.request, "driver": p.device.driver, "pool": p.device.pool,
                    "device": p.device.device} for p in step.placements]
        out.append(ProjectClaim(step.placed, devices,
                                step.failure.message if step.failure is not None else ""))
    if case.pod and not all(c.placed for c in out):  # a pod is placed whole or not at all
        out = [ProjectClaim(False, [], c.failure) for c in out]
    return out


def oracle_lines(batch: Sequence[tuple[Case, list[ProjectClaim]]]) -> list[dict[str, Any]]:
    """One line per case (trajectory mode); a pod's case has a second line without `given`:
    the oracle allocating the pod's claims one after the other on its own."""
    lines = []
    for case, mine in batch:
        line = {"id": case.id, "node": {"name": NODE}, "slices": case.slices,
                "classes": case.classes, "allocated": case.bound, "claims": case.claims,
                "given": [{"devices": c.devices} if c.placed else None for c in mine]}
        lines.append(line)
        if case.pod:
            lines.append({k: v for k, v in line.items() if k != "given"} | {"id": f"{case.id}/alone"})
    return lines


def ask_oracle(oracle: Path, lines: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(["prlimit", f"--as={MEMORY_LIMIT}", str(oracle)], input=text.encode(),
                          capture_output=True, timeout=600, check=True)
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]


@dataclass
class Figures:
    claims: int = 0
    placement_agree: int = 0
    both_placed: int = 0
    accepted: int = 0
    pods: int = 0
    pods_placed: int = 0
    pods_moved: int = 0
    """Pods placed only because the joint search moved an earlier claim (the oracle, claim by
    claim, fails one of them)."""
    causes: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "placement_agree": self.placement_agree,
            "placement_pct": round(100 * self.placement_agree / max(self.claims, 1), 2),
            "both_placed": self.both_placed,
            "accepted": self.accepted,
            "accepted_pct": round(100 * self.accepted / max(self.both_placed, 1), 2),
            "pods": self.pods,
            "pods_placed": self.pods_placed,
            "pods_moved": self.pods_moved,
            "disagreements": dict(self.causes),
        }


def compare(batch: Sequence[tuple[Case, list[ProjectClaim]]], answers: Sequence[dict[str, Any]],
            figures: Figures, keep: int) -> None:
    queue = list(answers)
    for case, mine in batch:
        answer = queue.pop(0)
        alone = queue.pop(0) if case.pod else None
        for line in (answer, alone):
            if line is not None and line.get("inputError"):
                raise ValueError(f"case {case.id}: oracle input error: {line['inputError']}")
        sequential = alone is not None and all(r["status"] == "allocated" for r in alone["results"])
        pod_placed = all(c.placed for c in mine)
        if alone is not None:
            figures.pods += 1
            figures.pods_placed += pod_placed
            figures.pods_moved += pod_placed and not sequential
        for k, (own, theirs) in enumerate(zip(mine, answer["results"], strict=True)):
            figures.claims += 1
            placed = theirs["status"] == "allocated"
            if alone is not None:  # a pod: placeable when the oracle places it claim by claim,
                # or when it accepts every device of the project's joint allocation
                placed = sequential or (pod_placed and all(
                    r.get("givenStatus") == "accepted" for r in answer["results"]))
                if sequential:
                    theirs = alone["results"][k]
            kind = ""
            if placed == own.placed:
                figures.placement_agree += 1
            else:
                kind = "project placed, allocator not" if own.placed else "allocator placed, project not"
            if placed and own.placed:
                figures.both_placed += 1
                # the pinned re-run can miss a solution the free search finds (distinctAttribute
                # keeps one value per request, so its state depends on the path): the
                # allocator's own choice is accepted whatever the pinned re-run says
                if alone is not None and sequential and not _same(own.devices, theirs.get("devices", [])):
                    kind = "pod placed elsewhere than the allocator's first branch"
                elif (theirs.get("givenStatus") == "accepted" or _same(own.devices, theirs.get("devices", []))
                      or answer["results"][k].get("givenStatus") == "accepted"):
                    figures.accepted += 1
                else:
                    kind = "devices not accepted"
            if kind:
                figures.causes[kind] += 1
                if len(figures.examples) < keep:
                    figures.examples.append({"kind": kind, "case": case.id, "claim": k,
                                             "project": own.devices, "project_failure": own.failure,
                                             "allocator": theirs, "slices": case.slices,
                                             "bound": case.bound, "claims": case.claims})


def _same(mine: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]) -> bool:
    def key(devices: Sequence[dict[str, Any]]) -> list[tuple[str, ...]]:
        return sorted((d["request"], d["driver"], d["pool"], d["device"]) for d in devices)
    return key(mine) == key(theirs)


def run(claims: int, seed: int = 0, keep: int = 0, batch_size: int = 200) -> Figures:
    oracle = oracle_path()
    if oracle is None:
        raise RuntimeError(f"the allocator oracle {ORACLE} is absent or cannot run here")
    figures = Figures()
    batch: list[tuple[Case, list[ProjectClaim]]] = []
    for case in cases(seed, claims):
        batch.append((case, project(case)))
        if len(batch) >= batch_size:
            compare(batch, ask_oracle(oracle, oracle_lines(batch)), figures, keep)
            batch = []
    if batch:
        compare(batch, ask_oracle(oracle, oracle_lines(batch)), figures, keep)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="print this many disagreements")
    args = parser.parse_args(argv)
    figures = run(args.claims, args.seed, args.show)
    for example in figures.examples:
        print(json.dumps(example), file=sys.stderr)
    print(json.dumps(figures.as_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
