"""Candidate pools: which pools the allocator would consider for a request.

Why: a dry run or simulation that tries every pool for every request reports outcomes the
scheduler never produces (a NIC claim "not satisfied" by an FPGA pool). The allocator only
offers a request the devices that satisfy its DeviceClass's selectors and then its own, in that
order, each a CEL expression over `device` (reference §3, §6.1). So a pool is a *candidate* for
a request when at least one of its devices satisfies all of them. When no DeviceClass is given
at all, every pool is a candidate (callers decide that; `match_pool` agrees).

Evaluation follows the scheduler: selectors are compiled in the StoredExpressions `dra-device`
environment of the target release without a cost estimate (each once, through
`dra_affinity.policies.analysis.device`'s cache), each evaluation has its own runtime limit of
`CELSelectorExpressionMaxCost`, a false selector ends the device's checks, and the first
matching device ends the pool's.

Errors. A selector that does not compile, or fails at run time on a device (a missing
attribute read without `has()`, the cost limit, a non-bool result), is an *error* for the
allocator, which aborts scheduling of the pod — not a non-match. `match_pool` returns it as a
value (`CandidateMatch.failure`); `pool_is_candidate`, the boolean filter of
`scheduler.dryrun` and `scheduler.simulation`, raises `SelectorError` carrying that value, which
callers must turn into a finding or a failed placement (see `SelectorError`).

A request naming a DeviceClass that is not in `classes` (when any are given) is decided once,
per request, by `missing_class`: the allocator offers it no device at all (the class does not
exist; a dry run more likely was not given that class's file), so the claim stays pending.
`match_pool` then evaluates nothing and says `class_missing`; callers that
decide per request ask `missing_class` first and report its reason, the one text for it.

The CEL stack is imported where a selector is first evaluated, not with this module: a dry
run without DeviceClasses (and `missing_class`'s callers) never pays for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core.findings import PoolRef
from ..core.limits import KubernetesVersion, limits_for
from ..model.resources import Device, DeviceClass, DeviceRequest, DeviceSelector
from .pools import Pool

if TYPE_CHECKING:
    from ..analysis.device import DeviceValue, DeviceValueProblem

__all__ = [
    "CandidateMatch",
    "DeviceMatch",
    "PoolSurvey",
    "SelectorError",
    "SelectorProblem",
    "match_device",
    "match_pool",
    "missing_class",
    "pool_is_candidate",
]

Source = Literal["class", "request"]
Stage = Literal["compile", "runtime", "engine"]

_STAGE_WORDS = {"compile": "CEL compile error", "runtime": "CEL runtime error",
                "engine": "cannot be evaluated by this tool"}


@dataclass(frozen=True, slots=True)
class SelectorProblem:
    """Why the allocator would abort instead of matching: one selector on one device.

    `source`/`owner`/`index`: `spec.selectors[index]` of DeviceClass `owner`, or of request
    `owner` of the claim; `stage`: `compile` (also the output-type rule), `runtime` (also a
    device whose attributes cannot be converted), or `engine` (the expression exceeds our CEL
    engine, not Kubernetes); `detail`: the upstream error text; `device`: the device being
    evaluated (`driver/pool/device`), None for compile errors.
    """

    source: Source
    owner: str
    index: int
    stage: Stage
    detail: str
    pool: PoolRef
    device: str | None = None

    def message(self, claim: str | None = None) -> str:
        """The allocator's error text: `class <name>: selector #<i>: CEL runtime error: <err>`,
        or `claim <ns>/<name>: ...` for a request's own selector when `claim` is given."""
        if self.source == "class":
            who = f"class {self.owner}"
        elif claim is not None:
            who = f"claim {claim}"
        else:
            who = f"request {self.owner}"
        return f"{who}: selector #{self.index}: {_STAGE_WORDS[self.stage]}: {self.detail}"


class SelectorError(Exception):
    """Raised by `pool_is_candidate` where the allocator would fail, not skip, the pool.

    What a caller must do: catch it around the `candidate(request, classes, pool)` call and
    stop treating the request as schedulable — the scheduler aborts scheduling of the pod.
    Report `error.failure.message(claim.qualified_name)` (a finding against the claim, or the
    DeviceClass when `failure.source == "class"`), and do not evaluate the remaining pools for
    that (claim, request): any result for them would be one the scheduler never reaches.
    """

    def __init__(self, failure: SelectorProblem) -> None:
        super().__init__(failure.message())
        self.failure = failure


@dataclass(frozen=True, slots=True)
class PoolSurvey:
    """Why no device of a pool is a candidate: every device against the class's and the request's
    own selectors, counted.

    Why: a pool of the class's driver where no device passes the request's own selectors
    is a pool the user expected to be used; saying nothing about it (as a candidate
    filter does) leaves them guessing which selector excluded what. `devices`: the pool's;
    `class_devices`: devices passing every DeviceClass selector (0: not a pool of the class's
    driver); `excluded`: (request selector index, devices it was the first to reject).
    """

    devices: int
    class_devices: int
    excluded: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class CandidateMatch:
    """Whether a pool is a candidate for a request, as a value.

    `device`: the first matching device (None when not a candidate or when nothing was
    evaluated); `failure`: set when the allocator would abort (then `candidate` is False);
    `class_missing`: the request's DeviceClass was not among the given classes (`missing_class`:
    then nothing is evaluated and `candidate` is False, as the allocator offers no device);
    `survey`: when the pool is not a candidate because no device matched (no failure, the class
    exists), which selector excluded how many devices — the walk that decided it looked at every
    device, so the counts cost no second walk; `evaluations`: selector evaluations performed.
    """

    candidate: bool
    device: str | None = None
    failure: SelectorProblem | None = None
    class_missing: bool = False
    evaluations: int = 0
    survey: PoolSurvey | None = None


def missing_class(request: DeviceRequest, classes: Collection[str]) -> str | None:
    """Why the allocator offers `request` no device at all, or None when its DeviceClass exists.

    Why: a class that does not exist selects no device, whatever the pools hold, so the claim
    stays pending — a per-request fact, decided here once for every caller (dry-run, simulate,
    the replay, explain, the SA000 finding), with the one text they all report. `classes`: the
    names of the given DeviceClasses; when none are given every class is taken to exist (the
    input is slices and claims alone, and class selectors are not modelled).
    """
    if not classes or request.device_class_name in classes:
        return None
    return (f"request {request.name!r}: DeviceClass {request.device_class_name!r} is not in the input "
            "(the scheduler leaves the claim pending)")


def match_pool(request: DeviceRequest, classes: Mapping[str, DeviceClass], pool: Pool, *,
               kubernetes_version: KubernetesVersion | None = None) -> CandidateMatch:
    """Match `request` against `pool`'s devices as the allocator does (errors as values).

    One walk: the first matching device ends it (a candidate); a failure ends it (the allocator
    aborts); else every device was rejected and the result carries their `PoolSurvey`. Bounded
    like the allocator: at most (devices × selectors) evaluations, each with the per-evaluation
    runtime cost limit.
    """
    if not classes:
        return CandidateMatch(True)
    if missing_class(request, classes) is not None:
        return CandidateMatch(False, class_missing=True)
    device_class = classes[request.device_class_name]
    class_count = len(device_class.selectors)
    excluded = [0] * len(request.selectors)
    """Per request selector: the devices it was the first to reject."""
    evaluations = class_devices = 0
    for device, slice_ in pool.devices:
        matched = match_device(request, device_class, device, slice_.driver, pool.ref,
                               kubernetes_version=kubernetes_version)
        evaluations += matched.evaluations
        if matched.failure is not None:
            return CandidateMatch(False, failure=matched.failure, evaluations=evaluations)
        if matched.rejected is None:
            return CandidateMatch(True, device.name, evaluations=evaluations)
        if matched.rejected >= class_count:
            class_devices += 1
            excluded[matched.rejected - class_count] += 1
    counts = zip(request.selectors, excluded, strict=True)
    survey = PoolSurvey(len(pool.devices), class_devices, tuple((s.index, n) for s, n in counts))
    return CandidateMatch(False, evaluations=evaluations, survey=survey)


@dataclass(frozen=True, slots=True)
class DeviceMatch:
    """One device against a request's class and own selectors.

    `rejected`: None when every selector matched, else the position (class selectors first)
    of the first that did not; `failure`: the allocator would error instead; `evaluations`:
    selector evaluations performed."""

    rejected: int | None
    failure: SelectorProblem | None = None
    evaluations: int = 0

    @property
    def matched(self) -> bool:
        return self.rejected is None and self.failure is None


def match_device(request: DeviceRequest, device_class: DeviceClass, device: Device, driver: str,
                 pool: PoolRef, *, kubernetes_version: KubernetesVersion | None = None) -> DeviceMatch:
    """The allocator's `isSelectable` for one device: class selectors, then the request's own,
    in order; the first false one ends the checks, the first error is the allocator's error.
    Each evaluation has the per-evaluation runtime cost limit of the release."""
    from ..analysis.device import (  # the CEL stack: only when a selector runs
        DeviceValueProblem,
        compile_selector,
        device_value,
        evaluate_selector,
    )
    from ..cel.check.env import DEFAULT_VERSION, EnvKey, EnvMode, dra_list_attributes

    version = kubernetes_version or DEFAULT_VERSION
    # the scheduler compiles stored expressions, which from 1.37 no DRA gate changes
    key = EnvKey(version, EnvMode.STORED_EXPRESSIONS, "dra-device")
    list_attributes = dra_list_attributes(version)
    cost_limit = limits_for(version).runtime_cost_per_evaluation
    selectors: list[tuple[Source, str, DeviceSelector]] = [
        ("class", device_class.name, s) for s in device_class.selectors]
    selectors += [("request", request.name, s) for s in request.selectors]
    value: DeviceValue | DeviceValueProblem | None = None
    evaluations = 0
    where = f"{driver}/{pool.name}/{device.name}"
    for position, (source, owner, selector) in enumerate(selectors):
        compiled = compile_selector(selector.expression, key)
        if not compiled.ok:
            stage: Stage = "engine" if compiled.engine_limited else "compile"
            failure = SelectorProblem(source, owner, selector.index, stage, compiled.detail or "", pool)
            return DeviceMatch(position, failure, evaluations)
        if value is None:
            value = device_value(device, driver, list_attributes=list_attributes)
        if isinstance(value, DeviceValueProblem):
            return DeviceMatch(position, SelectorProblem(source, owner, selector.index, "runtime",
                                                         value.message, pool, where), evaluations)
        result = evaluate_selector(compiled, value, cost_limit=cost_limit)
        evaluations += 1
        if result.error is not None:
            return DeviceMatch(position, SelectorProblem(source, owner, selector.index, "runtime",
                                                         result.error, pool, where), evaluations)
        if not result.matched:
            return DeviceMatch(position, None, evaluations)
    return DeviceMatch(None, None, evaluations)


def pool_is_candidate(request: DeviceRequest, classes: Mapping[str, DeviceClass], pool: Pool, *,
                      kubernetes_version: KubernetesVersion | None = None) -> bool:
    """True when some device of `pool` satisfies the request's class and own selectors.

    Raises `SelectorError` where the allocator would fail instead (see its docstring for
    what callers must do); `match_pool` is the same check returning the failure as a value.
    """
    match = match_pool(request, classes, pool, kubernetes_version=kubernetes_version)
    if match.failure is not None:
        raise SelectorError(match.failure)
    return match.candidate
