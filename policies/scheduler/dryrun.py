"""Dry-run: every claim × request × candidate pool, extracted as the scheduler would.

The one orchestration behind `dra-affinity dry-run` and `dra-affinity test`: it
takes model objects (from files or a cluster), builds pools the way the pool rules
do (`dra_affinity.policies.scheduler.pools.build_pools`), picks candidate pools per request and runs
`dra_affinity.policies.scheduler.extraction.extract` once per (claim, request, pool).

One run (`DryRun`) serves every view: `results()` for those that write each result,
`requests()` for those that count outcomes per claim request and keep only some results.
`DryRun` decides every claim request on its own, as the scheduler would. The speed layer
`dry-run-plans` (`policies.core.layers`) is `PlanSharingDryRun`, at the end of this module: it
decides each distinct claim request once and relabels the plan for the claims that read
alike. `new_dry_run` picks it while the layer is on; switched off, the output is the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..core import layers
from ..core.findings import Finding, Location, PoolRef
from ..core.gc_pause import gc_paused
from ..core.limits import KubernetesVersion, limits_for
from ..core.problems import SELECTOR_ERROR
from ..model.resources import DeviceClass, DeviceRequest, ResourceClaim, ResourceSlice
from .candidates import CandidateMatch, PoolSurvey, match_pool, missing_class
from .claims import claim_problems, missing_class_finding
from .extraction import (
    ExtractionMemo,
    ExtractionPool,
    ExtractionProblem,
    ExtractionResult,
    Outcome,
    PoolExtractor,
    device_requests,
    extract,
    relabel,
    request_names,
)
from .pools import Pool, build_pools


@dataclass(frozen=True, slots=True)
class Filters:
    """`--claim ns/name`, `--pool driver/name` (or just name), `--request name`."""

    claim: str | None = None
    pool: str | None = None
    request: str | None = None

    def claim_ok(self, claim: ResourceClaim) -> bool:
        if self.claim is None:
            return True
        wanted = self.claim if "/" in self.claim else f"default/{self.claim}"
        return claim.qualified_name in {self.claim, wanted}

    def pool_ok(self, ref: PoolRef) -> bool:
        return self.pool is None or self.pool in {ref.name, f"{ref.driver}/{ref.name}"}

    def request_ok(self, name: str) -> bool:
        return self.request is None or self.request in {name, name.split("/", 1)[0]}

    def unmatched(self, claims: Sequence[ResourceClaim], pools: Iterable[PoolRef]) -> list[tuple[str, str]]:
        """(filter, why) for each filter naming what is not in the input: a typo must not pass."""
        problems: list[tuple[str, str]] = []
        if self.claim is not None and not any(self.claim_ok(c) for c in claims):
            problems.append(("claim", f"no claim {self.claim!r} in the input (claims are namespace/name; "
                            "a bare name means namespace default)"))
        if self.pool is not None and not any(self.pool_ok(ref) for ref in pools):
            problems.append(("pool", f"no pool {self.pool!r} in the input (pools are driver/name, or name)"))
        if self.request is not None and not any(
                self.request_ok(name) for c in claims if self.claim_ok(c) for name in request_names(c)):
            where = f" of claim {self.claim}" if self.claim is not None else ""
            problems.append(("request", f"no request {self.request!r}{where} in the input"))
        return problems


def _selectors_key(request: DeviceRequest) -> tuple[object, ...]:
    """What the candidate devices of a request depend on: its class and its own selectors."""
    return (request.device_class_name, request.name,
            tuple((s.index, s.expression) for s in request.selectors))


@dataclass(frozen=True, slots=True)
class DryRunReport:
    results: tuple[ExtractionResult, ...]
    findings: tuple[Finding, ...]
    pools: Mapping[PoolRef, Pool]


def to_extraction_pool(pool: Pool) -> ExtractionPool:
    """The scheduler-facing summary of a pool that extraction needs."""
    return ExtractionPool(
        ref=pool.ref,
        generation=pool.generation,
        extractors=tuple(PoolExtractor(e, s.name) for e, s in pool.extractors.values()),
        complete=pool.complete,
        incomplete_reason=pool.incomplete_reason,
        duplicate_keys=pool.duplicate_keys,
        total_cost=pool.total_cost,
    )


def dry_run(
    slices: Sequence[ResourceSlice],
    claims: Sequence[ResourceClaim],
    classes: Sequence[DeviceClass] = (),
    *,
    kubernetes_version: KubernetesVersion | None = None,
    filters: Filters | None = None,
) -> DryRunReport:
    """Extract for every claim request against every candidate pool.

    With DeviceClasses, a pool is a candidate for a request when one of its devices
    satisfies the class's and the request's selectors (`dra_affinity.policies.scheduler.candidates`); without
    any, every pool is a candidate (SPEC §5). A selector the allocator cannot evaluate
    aborts the pod: it becomes an SA003 finding and a `selector-error` result on every pool
    where it fails. A pool of the class's driver where no device passes the request's own
    selectors is a `no-matching-device` result naming what each selector excluded; a request
    naming a DeviceClass absent from the input is an SA000 finding and gets no results.
    """
    run = new_dry_run(slices, claims, classes, kubernetes_version=kubernetes_version, filters=filters)
    results = tuple(run.results())
    return DryRunReport(results, tuple(run.findings), run.pools)


QUIET = frozenset({Outcome.OK, Outcome.NOT_APPLICABLE})
"""Outcomes that leave nothing to fix: a view of a large run may count them without keeping them."""

class DryRun:
    """One dry run: every claim request's results on every pool, decided one claim request at a
    time (`requests()`), so that a view can write them as they come or only count them.

    `findings` is complete once `requests()` (or `results()`) is exhausted.
    """

    def __init__(self, slices: Sequence[ResourceSlice], claims: Sequence[ResourceClaim],
                 classes: Sequence[DeviceClass] = (), *, kubernetes_version: KubernetesVersion | None = None,
                 filters: Filters | None = None) -> None:
        self._claims = claims
        self._filters = filters or Filters()
        self._limits = limits_for(kubernetes_version) if kubernetes_version else limits_for()
        self.pools = build_pools(slices, self._limits)
        self._summaries = {ref: to_extraction_pool(pool) for ref, pool in self.pools.items()}
        self._classes = {c.name: c for c in classes}
        self.findings: list[Finding] = []

    def results(self) -> Iterator[ExtractionResult]:
        """Every (claim request, pool) result in claim, request and pool order."""
        for request in self.requests():
            yield from request.results()

    def requests(self) -> Iterator[RequestResults]:
        """Every claim request's results, in claim and request order.

        They are decided with the cyclic GC paused (short-lived acyclic objects next to a large
        parsed input), `_BATCH` claim requests at a time, and handed over with the collector as
        the caller had it: the caller's code (rendering, writing, counting) never runs inside
        the pause.
        """
        produced = self._requests()
        while True:
            with gc_paused():
                batch = list(itertools.islice(produced, _BATCH))
            yield from batch
            if len(batch) < _BATCH:
                return

    def _requests(self) -> Iterator[RequestResults]:
        filters, by_class = self._filters, self._classes
        for claim in self._claims:
            self.findings.extend(claim_problems(claim))
            if not filters.claim_ok(claim):
                continue
            requests = device_requests(claim)
            for name in request_names(claim):
                if not filters.request_ok(name):
                    continue
                request = requests.get(name)
                missing = missing_class(request, by_class) if request is not None else None
                if request is not None and missing is not None:
                    self.findings.append(missing_class_finding(claim, request, missing))
                    continue  # the scheduler leaves the claim pending: no pool is tried
                plan = self._plan(claim, name, request)
                device_class = by_class.get(request.device_class_name) if request is not None else None
                for message in plan.selector_messages:
                    # the allocator aborts the pod on the first; every distinct one is reported
                    self.findings.append(_selector_finding(claim, message, device_class))
                yield RequestResults(claim.qualified_name, name, plan)

    def _plan(self, claim: ResourceClaim, name: str, request: DeviceRequest | None) -> RequestPlan:
        """Every pool's result for one claim request."""
        return self._decide(claim, name, request, claim.qualified_name)

    def _decide(self, claim: ResourceClaim, name: str, request: DeviceRequest | None,
                label: str) -> _Decision:
        """Every pool's result for one claim request, results naming the claim `label`: a
        selector failure, no matching device, or what extraction makes of the claim there."""
        results: list[ExtractionResult] = []
        for ref, pool in self.pools.items():
            if not self._filters.pool_ok(ref):
                continue
            if self._classes and request is not None:
                match = self._match(request, pool)
                if match.failure is not None:
                    error = ExtractionProblem(SELECTOR_ERROR_KIND, match.failure.message(label))
                    results.append(ExtractionResult(label, name, ref, Outcome.SELECTOR_ERROR, error=error))
                    continue
                if not match.candidate:
                    survey = match.survey  # no device matched: the walk that decided it counted why
                    if survey is None or survey.class_devices == 0:
                        continue  # not a pool of the class's driver: the allocator never looks
                    results.append(ExtractionResult(label, name, ref, Outcome.NO_MATCHING_DEVICE,
                                                    notes=_exclusions(request, survey)))
                    continue
            results.append(self._extract(claim, name, ref))
        return _Decision.of(results)

    def _match(self, request: DeviceRequest, pool: Pool) -> CandidateMatch:
        """Whether `pool` is a candidate for `request`; a non-candidate carries its survey."""
        return match_pool(request, self._classes, pool, kubernetes_version=self._limits.kubernetes_version)

    def _extract(self, claim: ResourceClaim, name: str, ref: PoolRef) -> ExtractionResult:
        return extract(claim, name, self._summaries[ref], kubernetes_version=self._limits.kubernetes_version)


_BATCH = 64
"""Claim requests decided per GC pause in `DryRun.requests` (the pause is toggled once per batch)."""

@dataclass(frozen=True, slots=True)
class _Decision:
    """Every pool's result for one claim request, and what the views and findings read of them."""

    results: tuple[ExtractionResult, ...]
    """In pool order."""
    outcomes: tuple[tuple[PoolRef, Outcome], ...]
    """Every pool's outcome, in pool order."""
    notable: tuple[ExtractionResult, ...]
    """The results whose outcome is not `QUIET`."""
    selector_messages: tuple[str, ...]
    """The distinct selector failures, in pool order (SA003 findings)."""

    @classmethod
    def of(cls, results: Sequence[ExtractionResult]) -> _Decision:
        messages = (r.error.message for r in results if r.outcome is Outcome.SELECTOR_ERROR and r.error)
        return cls(tuple(results), tuple((r.pool, r.outcome) for r in results),
                   tuple(r for r in results if r.outcome not in QUIET), tuple(dict.fromkeys(messages)))


class RequestPlan(Protocol):
    """What the views and findings read of one claim request's results on every pool."""

    @property
    def results(self) -> Iterable[ExtractionResult]:
        """In pool order."""
        ...

    @property
    def outcomes(self) -> tuple[tuple[PoolRef, Outcome], ...]:
        """Every pool's outcome, in pool order."""
        ...

    @property
    def notable(self) -> Iterable[ExtractionResult]:
        """The results whose outcome is not `QUIET`."""
        ...

    @property
    def selector_messages(self) -> tuple[str, ...]:
        """The distinct selector failures, in pool order (SA003 findings)."""
        ...


@dataclass(frozen=True, slots=True)
class RequestResults:
    """One claim request's results on every pool it reaches, in pool order."""

    claim: str
    request: str
    _plan: RequestPlan

    @property
    def outcomes(self) -> tuple[tuple[PoolRef, Outcome], ...]:
        """Every pool's (pool, outcome), in pool order (claim requests that read alike may share
        one object: counting it needs no result)."""
        return self._plan.outcomes

    def results(self, *, quiet: bool = False) -> Iterator[ExtractionResult]:
        """The results, or with `quiet` only those whose outcome is not `QUIET`."""
        yield from self._plan.notable if quiet else self._plan.results


SELECTOR_ERROR_KIND = "selector error"


def _exclusions(request: DeviceRequest, survey: PoolSurvey) -> tuple[str, ...]:
    """Which selector excluded how many devices, in the allocator's order."""
    notes = [f"{survey.class_devices} of {_devices(survey.devices)} pass DeviceClass "
             f"{request.device_class_name}'s selectors"]
    notes += [f"request selector #{index} excluded {_devices(count)}" for index, count in survey.excluded]
    return tuple(notes)


def _devices(n: int) -> str:
    return f"{n} device{'' if n == 1 else 's'}"


def _selector_finding(claim: ResourceClaim, message: str, device_class: DeviceClass | None) -> Finding:
    """Point at the class when its selector failed, else at the claim."""
    if device_class is not None and message.startswith("class "):
        location = Location.at(device_class.source, ("spec", "selectors"), device_class.ref)
    else:
        location = Location.at(claim.source, (*claim.spec_path, "devices", "requests"), claim.ref)
    return SELECTOR_ERROR.finding(message, location)


# -- the speed layer `dry-run-plans` ----------------------------------------------------------

PLAN_SHARING = layers.declare(
    "dry-run-plans",
    "claims made from one template read alike: candidate matching once per (class and request "
    "selectors, pool), extraction once per (pool extractors, request, in-scope config contents), "
    "and one plan of every pool's results per distinct claim request, relabelled per claim",
)


_CLAIM_MARK = "\x00claim\x00"
"""The claim a shared plan's results name (filled in per claim by `_ClaimPlan`)."""


class PlanSharingDryRun(DryRun):
    """`DryRun` where claim requests that read alike share one decision.

    Claims made from one template read alike: the same class and request selectors (so the
    same candidate pools) and the same in-scope config contents (so the same extraction). Each
    distinct claim request is decided once, its results naming `_CLAIM_MARK`, and every claim
    that reads so gets that plan relabelled with its own name (`_ClaimPlan`). Candidate
    matching is kept per (class and request selectors, pool), extraction by content
    (`ExtractionMemo`).
    """

    def __init__(self, slices: Sequence[ResourceSlice], claims: Sequence[ResourceClaim],
                 classes: Sequence[DeviceClass] = (), *, kubernetes_version: KubernetesVersion | None = None,
                 filters: Filters | None = None) -> None:
        super().__init__(slices, claims, classes, kubernetes_version=kubernetes_version, filters=filters)
        self._memo = ExtractionMemo(self._limits.kubernetes_version)
        self._matches: dict[tuple[object, ...], CandidateMatch] = {}
        self._plans: dict[tuple[object, ...], _Decision] = {}
        self._drivers = tuple(dict.fromkeys(ref.driver for ref in self.pools))

    def _plan(self, claim: ResourceClaim, name: str, request: DeviceRequest | None) -> RequestPlan:
        selectors = _selectors_key(request) if self._classes and request is not None else None
        contents = tuple(self._memo.content(claim, name, driver) for driver in self._drivers)
        if None in contents:  # a config the memo cannot key: decided for this claim alone
            return super()._plan(claim, name, request)
        key = (selectors, name, contents)
        shared = self._plans.get(key)
        if shared is None:
            shared = self._plans[key] = self._decide(claim, name, request, _CLAIM_MARK)
        return _ClaimPlan(shared, claim.qualified_name)

    def _match(self, request: DeviceRequest, pool: Pool) -> CandidateMatch:
        key = (_selectors_key(request), pool.ref)
        match = self._matches.get(key)
        if match is None:
            match = self._matches[key] = super()._match(request, pool)
        return match

    def _extract(self, claim: ResourceClaim, name: str, ref: PoolRef) -> ExtractionResult:
        return self._memo.extract(claim, name, self._summaries[ref])


@dataclass(frozen=True, slots=True)
class _ClaimPlan:
    """A shared plan as one claim reads it: its results and messages name the claim."""

    shared: _Decision
    claim: str

    @property
    def outcomes(self) -> tuple[tuple[PoolRef, Outcome], ...]:
        return self.shared.outcomes  # the shared object: a view counts it once per sequence

    @property
    def results(self) -> Iterator[ExtractionResult]:
        return (self._own(r) for r in self.shared.results)

    @property
    def notable(self) -> Iterator[ExtractionResult]:
        return (self._own(r) for r in self.shared.notable)

    @property
    def selector_messages(self) -> tuple[str, ...]:
        return tuple(m.replace(_CLAIM_MARK, self.claim) for m in self.shared.selector_messages)

    def _own(self, result: ExtractionResult) -> ExtractionResult:
        if result.outcome is Outcome.SELECTOR_ERROR and result.error is not None:
            message = result.error.message.replace(_CLAIM_MARK, self.claim)
            return ExtractionResult(self.claim, result.request, result.pool, result.outcome,
                                    error=ExtractionProblem(result.error.kind, message))
        return relabel(result, self.claim, result.pool)


def new_dry_run(slices: Sequence[ResourceSlice], claims: Sequence[ResourceClaim],
                classes: Sequence[DeviceClass] = (), *, kubernetes_version: KubernetesVersion | None = None,
                filters: Filters | None = None) -> DryRun:
    """A dry run, through `PlanSharingDryRun` while `dry-run-plans` is on."""
    run = PlanSharingDryRun if PLAN_SHARING.on else DryRun
    return run(slices, claims, classes, kubernetes_version=kubernetes_version, filters=filters)
