"""Test suites for `dra-affinity test`: slices, claims and the outcome each request must get.

A suite is YAML (documented in the README):

    name: networking driver extractors
    kubernetesVersion: "1.37"            # optional
    resources: [../slices/, claims.yaml] # files or directories, relative to the suite file
    objects: [ {kind: ResourceClaim, ...} ]   # optional inline objects
    cases:
      - name: NIC config yields subnet and pkey
        claim: ml/training-pod-a          # namespace/name (a bare name: namespace default)
        request: nic                      # optional: every request of the claim
        pool: networking.example.com/node-a   # driver/name or name; optional: every pool
        expect:
          outcome: ok                     # ok | not-satisfied | claim-inconsistent | slice-error |
                                          # not-applicable | pool-incomplete | no-matching-device |
                                          # selector-error
          affinity: {subnet: subnet-A}    # optional, exact map
          unsatisfied: [pkey]             # optional, exact list
          errorKind: missing field        # optional
          errorContains: "no such key"    # optional substring of the error message

A case with `allocate:` instead of `claim:` is a lock simulation (SPEC §6): claims are
allocated (or released) in order, and each step states the device it must get or the
reason it must stay unschedulable:

      - name: Story 1, RDMA PKey alignment
        pools: [rdma.example.com/node-b]  # optional: candidate pools (default: every pool)
        mode: alpha                       # optional: alpha (first-fit) | beta (prefer locked)
        featureGate: true                 # optional: DRASharingAffinity in the scheduler
        featureGates: {DRASharingAffinity: off}   # optional: any gate (docs/releases.md)
        objects: []                       # optional: inline objects for this case only
        allocate:
          - claim: training/pod-a
            device: mlx5-0                # device, pool/device or driver/pool/device
            lock: {pkey: pkey-0x8001}     # optional: the device's lock afterwards
          - claim: training/pod-c
            unschedulable: lock mismatch  # a reason (the KEP's four classes, or e.g.
                                          # insufficient capacity); `true`: any reason
          - release: training/pod-a       # the claim drains; the last one clears the lock
        devices:                          # optional: final state per device
          mlx5-0: {state: locked, lock: {pkey: pkey-0x8001}}
        metrics: {sharing_affinity_lock_conflict_total: 1}   # optional, exact values

A case with `workload:` replays a workload file (docs/simulate.md) and checks expectations
on its fragmentation report, so a driver's CI fails when a change makes its reference
workload fragment:

      - name: 20 subnets fit the NIC pools
        workload: ../capacity/nic-20-subnets.yaml   # relative to the suite file
        modes: [alpha, beta]              # optional (default: the modes the expectations name,
                                          # else alpha)
        featureGate: true                 # optional
        pools: [nic.example.com/node-1]   # optional
        expect:
          - beta.pending <= 0
          - beta.stranded <= 5%
          - beta.peakPending <= alpha.peakPending   # beta no worse than alpha

The suite is checked with a JSON schema first, so a typo in a key is a located
error instead of a silently ignored expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..policies.core.features import KNOWN_GATES, SHARING_AFFINITY

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..policies.core.findings import Finding
    from .workload_expect import Expectation
    from .workload_file import WorkloadFile

OUTCOMES = ["ok", "not-satisfied", "claim-inconsistent", "slice-error", "not-applicable",
            "pool-incomplete", "no-matching-device", "selector-error"]

REASONS = ["feature gate off", "pool incomplete", "allocated exclusively", "insufficient capacity",
           "unknown lock state", "CEL evaluation failure", "claim inconsistent", "no keys extracted",
           "lock mismatch", "no candidate devices"]
"""`policies.scheduler.locks.Reason` values (kept literal here so loading a suite imports no policy code)."""

LOCK_STATES = ["clean", "locked", "unreconstructable", "untracked"]

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

_EXTRACTION_CASE: dict[str, Any] = {
    "type": "object",
    "required": ["name", "claim", "expect"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "claim": {"type": "string"},
        "request": {"type": "string"},
        "pool": {"type": "string"},
        "expect": {
            "type": "object",
            "required": ["outcome"],
            "additionalProperties": False,
            "properties": {
                "outcome": {"enum": OUTCOMES},
                "affinity": _STRING_MAP,
                "unsatisfied": {"type": "array", "items": {"type": "string"}},
                "errorKind": {"type": "string"},
                "errorContains": {"type": "string"},
            },
        },
    },
}

_ALLOCATE_STEP: dict[str, Any] = {
    "type": "object",
    "required": ["claim"],
    "additionalProperties": False,
    "properties": {
        "claim": {"type": "string"},
        "device": {"type": "string"},
        "lock": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
        "unschedulable": {"enum": [True, *REASONS]},
    },
}

_RELEASE_STEP: dict[str, Any] = {
    "type": "object",
    "required": ["release"],
    "additionalProperties": False,
    "properties": {"release": {"type": "string"}},
}

_SIMULATION_CASE: dict[str, Any] = {
    "type": "object",
    "required": ["name", "allocate"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "mode": {"enum": ["alpha", "beta"]},
        "featureGate": {"enum": [True, False, "on", "off"]},
        "featureGates": {"type": "object", "propertyNames": {"enum": sorted(KNOWN_GATES)},
                         "additionalProperties": {"enum": [True, False, "on", "off"]}},
        "pools": {"type": "array", "items": {"type": "string"}},
        "objects": {"type": "array", "items": {"type": "object"}},
        "allocate": {
            "type": "array",
            "minItems": 1,
            "items": {
                "if": {"type": "object", "required": ["release"]},
                "then": _RELEASE_STEP,
                "else": _ALLOCATE_STEP,
            },
        },
        "devices": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "state": {"enum": LOCK_STATES},
                    "lock": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
                    "holders": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
        "metrics": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
}

_WORKLOAD_CASE: dict[str, Any] = {
    "type": "object",
    "required": ["name", "workload", "expect"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string"},
        "workload": {"type": "string"},
        "modes": {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": ["alpha", "beta"]}},
        "featureGate": {"enum": [True, False, "on", "off"]},
        "featureGates": {"type": "object", "propertyNames": {"enum": sorted(KNOWN_GATES)},
                         "additionalProperties": {"enum": [True, False, "on", "off"]}},
        "pools": {"type": "array", "items": {"type": "string"}},
        "expect": {"type": "array", "minItems": 1, "items": {"type": "string"}},
    },
}

SUITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["cases"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"const": "TestSuite"},
        "name": {"type": "string"},
        "kubernetesVersion": {"type": ["string", "number"]},
        "resources": {"type": "array", "items": {"type": "string"}},
        "objects": {"type": "array", "items": {"type": "object"}},
        "cases": {
            "type": "array",
            "minItems": 1,
            "items": {
                # `allocate:` makes a case a lock simulation, `workload:` a workload replay; any
                # other case is an extraction case
                "if": {"type": "object", "required": ["allocate"]},
                "then": _SIMULATION_CASE,
                "else": {
                    "if": {"type": "object", "required": ["workload"]},
                    "then": _WORKLOAD_CASE,
                    "else": _EXTRACTION_CASE,
                },
            },
        },
    },
}


class SuiteError(ValueError):
    """The suite file itself is unusable (message names file, line and field)."""


@dataclass(frozen=True)
class Case:
    name: str
    claim: str
    request: str | None
    pool: str | None
    expect: dict[str, Any]
    line: int | None = None


@dataclass(frozen=True)
class SimulationStep:
    """One `allocate:` item: allocate `claim` (expecting `device` or `unschedulable`) or release it."""

    claim: str
    release: bool = False
    device: str | None = None
    unschedulable: str | bool | None = None
    lock: dict[str, str] | None = None
    expects_lock: bool = False
    """`lock:` was given (`lock: null` expects an untracked device)."""


@dataclass(frozen=True)
class SimulationCase:
    """A lock simulation: steps in order, then optional final device states and metrics."""

    name: str
    steps: tuple[SimulationStep, ...]
    mode: str = "alpha"
    feature_gate: bool = True
    pools: tuple[str, ...] = ()
    objects: tuple[dict[str, Any], ...] = ()
    gates: tuple[tuple[str, bool], ...] = ()
    """`featureGate` then `featureGates`, as (gate, enabled): checked against the release when
    the case runs."""
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)
    line: int | None = None


@dataclass(frozen=True)
class WorkloadCase:
    """A workload replay and the expectations its report must meet (in each of `modes`)."""

    name: str
    workload: WorkloadFile
    modes: tuple[str, ...]
    expect: tuple[Expectation, ...]
    feature_gate: bool = True
    pools: tuple[str, ...] = ()
    line: int | None = None
    gates: tuple[tuple[str, bool], ...] = ()
    """As `SimulationCase.gates`."""


@dataclass(frozen=True)
class Suite:
    path: Path
    name: str
    kubernetes_version: str | None
    resources: tuple[Path, ...]
    objects: tuple[dict[str, Any], ...]
    cases: tuple[Case | SimulationCase | WorkloadCase, ...] = field(default=())


def unreadable_resources(suite_path: Path, findings: Iterable[Finding], usage_errors: Iterable[str],
                         what: str = "resources") -> SuiteError | None:
    """A `SuiteError` naming every resource of a suite that cannot be read (a path that is not
    there, bad YAML, an object kubectl would refuse: SA000), or None.

    Why an error and not a hint: a suite whose slice file is unreadable checks fewer objects
    than it names, and a case that then passes proves nothing; kubectl would not apply it.
    """
    from ..policies.rules.input.sa000_input_error import RULE as INPUT_ERROR

    problems = list(usage_errors)
    for finding in findings:
        if finding.rule != INPUT_ERROR.id:
            continue
        where = finding.primary
        position = f":{where.position.line}:{where.position.column}" if where.position else ""
        problems.append(f"{where.file or suite_path}{position}: {finding.message}")
    if not problems:
        return None
    return SuiteError(f"{suite_path}: {what} cannot be read: " + "; ".join(problems))


def load_suite(path: Path) -> Suite:
    """Read and validate one suite file; raises `SuiteError` with a located message."""
    from jsonschema import Draft202012Validator

    from ..sources.loader import load_paths

    loaded = load_paths([str(path)])
    if loaded.usage_errors:
        raise SuiteError(loaded.usage_errors[0])
    if loaded.findings:
        f = loaded.findings[0]
        pos = f.primary.position
        where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
        raise SuiteError(f"{where}: {f.message}")
    if len(loaded.documents) != 1:
        raise SuiteError(f"{path}: a suite file holds exactly one YAML document")
    doc = loaded.documents[0]
    errors = sorted(Draft202012Validator(SUITE_SCHEMA).iter_errors(doc.data),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        from ..policies.model.schema import unknown_property

        # an unknown key first: a misspelt one is usually why a required one is missing
        error = next((e for e in errors if unknown_property(e) is not None), errors[0])
        unknown = unknown_property(error)
        if unknown is not None:
            pos = doc.source.locate(unknown[0])
            where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
            raise SuiteError(f"{where}: {unknown[1]}")
        field_path = tuple(error.absolute_path)
        pos = doc.source.locate(field_path)
        where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
        rendered = ".".join(str(p) for p in field_path) or "<suite>"
        raise SuiteError(f"{where}: {rendered}: {error.message}")
    data = doc.data
    base = path.parent
    cases: list[Case | SimulationCase | WorkloadCase] = []
    for i, c in enumerate(data["cases"]):
        pos = doc.source.locate(("cases", i))
        line = pos.line if pos else None
        if "allocate" in c:
            for j, item in enumerate(c["allocate"]):
                if "release" not in item and ("device" in item) == ("unschedulable" in item):
                    at = doc.source.locate(("cases", i, "allocate", j))
                    where = f"{path}:{at.line}:{at.column}" if at else str(path)
                    raise SuiteError(f"{where}: cases.{i}.allocate.{j}: give either `device:` (where the "
                                     "claim must go) or `unschedulable:` (why it must stay pending)")
            cases.append(_simulation_case(c, line))
            continue
        if "workload" in c:
            cases.append(_workload_case(path, doc.source, i, c, line))
            continue
        cases.append(Case(name=c["name"], claim=c["claim"], request=c.get("request"),
                          pool=c.get("pool"), expect=c["expect"], line=line))
    for i, resource in enumerate(data.get("resources", [])):
        if not (base / resource).exists():  # a suite that reads nothing proves nothing
            at = doc.source.locate(("resources", i))
            where = f"{path}:{at.line}:{at.column}" if at else str(path)
            raise SuiteError(f"{where}: resources.{i}: {resource}: no such file or directory "
                             f"(relative to the suite file's directory, {base})")
    version = data.get("kubernetesVersion")
    return Suite(
        path=path,
        name=data.get("name") or path.stem,
        kubernetes_version=str(version) if version is not None else None,
        resources=tuple(base / r for r in data.get("resources", [])),
        objects=tuple(data.get("objects", [])),
        cases=tuple(cases),
    )


def _workload_case(path: Path, source: Any, i: int, data: dict[str, Any], line: int | None) -> WorkloadCase:
    from .workload_expect import ExpectationError, parse_expectation
    from .workload_file import WorkloadFileError, load_workload

    def located(field_path: tuple[str | int, ...], message: str) -> SuiteError:
        pos = source.locate(field_path)
        where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
        return SuiteError(f"{where}: {'.'.join(str(p) for p in field_path)}: {message}")

    target = path.parent / data["workload"]
    if not target.is_file():
        raise located(("cases", i, "workload"), f"no workload file {str(target)!r}")
    try:
        workload = load_workload(target)
    except WorkloadFileError as exc:
        raise SuiteError(str(exc)) from None
    expect = []
    for j, text in enumerate(data["expect"]):
        try:
            expect.append(parse_expectation(text))
        except ExpectationError as exc:
            raise located(("cases", i, "expect", j), str(exc)) from None
    named = sorted({m.value for e in expect for m in e.modes})
    modes = tuple(data.get("modes") or named or ["alpha"])
    missing = [m for m in named if m not in modes]
    if missing:
        raise located(("cases", i, "modes"), f"the expectations name mode {missing[0]!r}, which the case "
                                             "does not run")
    gate = data.get("featureGate", True)
    return WorkloadCase(name=data["name"], workload=workload, modes=modes, expect=tuple(expect),
                        feature_gate=gate in (True, "on"), pools=tuple(data.get("pools", [])), line=line,
                        gates=_gates(data))


def _gates(data: dict[str, Any]) -> tuple[tuple[str, bool], ...]:
    """A case's gate settings: `featureGate` (DRASharingAffinity), then `featureGates`."""
    out = [] if "featureGate" not in data else [(SHARING_AFFINITY, data["featureGate"] in (True, "on"))]
    out += [(name, value in (True, "on")) for name, value in (data.get("featureGates") or {}).items()]
    return tuple(out)


def _simulation_case(data: dict[str, Any], line: int | None) -> SimulationCase:
    steps = []
    for item in data["allocate"]:
        if "release" in item:
            steps.append(SimulationStep(claim=item["release"], release=True))
        else:
            steps.append(SimulationStep(claim=item["claim"], device=item.get("device"),
                                        unschedulable=item.get("unschedulable"), lock=item.get("lock"),
                                        expects_lock="lock" in item))
    gate = data.get("featureGate", True)
    return SimulationCase(
        name=data["name"],
        steps=tuple(steps),
        mode=data.get("mode", "alpha"),
        feature_gate=gate in (True, "on"),
        pools=tuple(data.get("pools", [])),
        objects=tuple(data.get("objects", [])),
        gates=_gates(data),
        devices=dict(data.get("devices", {})),
        metrics=dict(data.get("metrics", {})),
        line=line,
    )
