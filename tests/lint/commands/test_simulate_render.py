"""simulate's step rendering with its shared-text caches against the plain renderers.

`step_text` and `_step_block` render once what many steps share (a failed step's text after its
claim, one device's candidate entry or line) and splice the rest; the bytes must be those of
`json.dumps(step_to_json(...))` and of `_step_lines`, for placed, failed and released steps, with
and without `--summary`, on first render and from the caches.
"""

from __future__ import annotations

import json
from typing import Any

from dra_affinity.lint.commands.simulate_cmd import (
    _rejected_lines,
    _step_block,
    _step_lines,
    step_text,
    step_to_json,
)
from dra_affinity.policies.core.cache import REGISTRY
from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.simulation import (
    Action,
    Detail,
    SimulationReport,
    Step,
    StepResult,
    simulate,
)

from tests.helpers import requires_layers

DRIVER = "nic.example.com"


def _objects() -> tuple[list[ResourceSlice], list[ResourceClaim]]:
    """Two pools (one affinity pool of two 2-pod NICs, one exclusive device without affinity) and
    claims that fill them and then fail alike, with a release in between."""
    spec = {"driver": DRIVER, "nodeName": "n0",
            "pool": {"name": "n0", "generation": 1, "resourceSliceCount": 2}}
    affinity = [{"name": "subnet", "expression": 'object.?subnetID.orValue("")'}]
    docs: list[dict[str, Any]] = [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "meta"},
         "spec": {**spec, "sharingAffinity": affinity}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "nics"},
         "spec": {**spec, "devices": [
             {"name": f"eth{d}", "allowMultipleAllocations": True,
              "capacity": {"pods": {"value": "2", "requestPolicy": {"default": "1"}}}} for d in range(2)]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "other"},
         "spec": {"driver": DRIVER, "nodeName": "n1", "devices": [{"name": "x0"}],
                  "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}}},
    ]
    for n, subnet in enumerate(["a", "b", "a", "b", "c", "c", "a", "c", "c"]):
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                     "metadata": {"name": f"c{n}", "namespace": "ns"},
                     "spec": {"devices": {
                         "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}],
                         "config": [{"opaque": {"driver": DRIVER, "parameters": {"subnetID": subnet}}}]}}})
    parsed = [parse(d).obj for d in docs]
    return ([o for o in parsed if isinstance(o, ResourceSlice)],
            [o for o in parsed if isinstance(o, ResourceClaim)])


def _steps(detail: Detail) -> tuple[StepResult, ...]:
    slices, claims = _objects()
    names = [c.qualified_name for c in claims]
    order = [Step(Action.ALLOCATE, n) for n in names[:7]] + [Step(Action.RELEASE, names[0])]
    order += [Step(Action.ALLOCATE, n) for n in names[7:]] + [Step(Action.RELEASE, names[8])]
    report = simulate(slices, claims, order, detail=detail)
    assert isinstance(report, SimulationReport)
    return report.steps


@requires_layers("simulate-remembered-failures")
def test_the_fixture_has_alike_failures_placements_and_releases() -> None:
    steps = _steps(Detail.DEVICES)
    failed = [s for s in steps if s.step.action is Action.ALLOCATE and not s.placed]
    assert len(failed) >= 2 and any(s.placed and s.placements for s in steps)
    assert any(s.step.action is Action.RELEASE for s in steps)
    assert failed[-1].evaluated is failed[-2].evaluated  # shared: a remembered failure


def test_step_text_is_json_dumps_of_step_to_json() -> None:
    REGISTRY.clear()
    for detail, summary in ((Detail.DEVICES, False), (Detail.COUNTS, True)):
        steps = _steps(detail)
        for _ in range(2):  # cold, then from the caches
            for s in steps:
                assert step_text(s, summary) == json.dumps(step_to_json(s, summary))


def test_step_block_is_the_step_lines() -> None:
    REGISTRY.clear()
    for detail, summary in ((Detail.DEVICES, False), (Detail.COUNTS, True)):
        steps = _steps(detail)
        for _ in range(2):
            for n, s in enumerate(steps, start=1):
                lines = _step_lines(n, s)
                if summary and s.step.action is Action.ALLOCATE:
                    lines = lines[:1] + _rejected_lines(s) + lines[1:]
                assert _step_block(n, s, summary) == "".join(f"  {line}\n" for line in lines)
