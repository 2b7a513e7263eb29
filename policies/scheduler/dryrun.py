"""Dry-run: every claim × request × candidate pool, extracted as the scheduler would.

The one orchestration behind `dra-affinity dry-run` and `dra-affinity test`: it
takes model objects (from files or a cluster), builds pools the way the pool rules
do (`dra_affinity.policies.scheduler.pools.build_pools`), picks candidate pools per request and runs
`dra_affinity.policies.scheduler.extraction.extract` once per (claim, request, pool).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from dra_affinity.policies.core.findings import Finding, Location, PoolRef
from dra_affinity.policies.core.gc_pause import gc_paused
from dra_affinity.policies.core.limits import KubernetesVersion, limits_for
from dra_affinity.policies.core.problems import SELECTOR_ERROR
from dra_affinity.policies.model.resources import DeviceClass, DeviceRequest, ResourceClaim, ResourceSlice
from dra_affinity.policies.scheduler.candidates import CandidateMatch, PoolSurvey, match_pool, missing_class
from dra_affinity.policies.scheduler.claims import claim_problems, missing_class_finding
from dra_affinity.policies.scheduler.extraction import (
    ExtractionMemo,
    ExtractionPool,
    ExtractionProblem,
    ExtractionResult,
    Outcome,
    PoolExtractor,
    device_requests,
    relabel,
    request_names,
)
from dra_affinity.policies.scheduler.pools import Pool, build_pools


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
    run = DryRun(slices, claims, classes, kubernetes_version=kubernetes_version, filters=filters)
    with gc_paused():  # only collected here: no caller code runs while the results are made
        results = tuple(run.results())
    return DryRunReport(results, tuple(run.findings), run.pools)


class DryRun:
    """A dry run whose results are produced one at a time (`results()`), for streaming output.

    Work is shared the way the allocator's inputs repeat: candidate matching once per
    (DeviceClass, request selectors, pool) and extraction once per (pool extractors, request,
    in-scope config contents), so claims made from one template cost a lookup each.
    `findings` is complete once `results()` is exhausted.
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
        self._memo = ExtractionMemo(self._limits.kubernetes_version)
        self._matches: dict[tuple[object, ...], CandidateMatch] = {}
        self._plans: dict[tuple[object, ...], _RequestPlan] = {}
        self._drivers = tuple(dict.fromkeys(ref.driver for ref in self.pools))
        self.findings: list[Finding] = []

    def _match(self, request: DeviceRequest, pool: Pool) -> CandidateMatch:
        """Once per (class and request selectors, pool); a non-candidate carries its survey."""
        key = (_selectors_key(request), pool.ref)
        match = self._matches.get(key)
        if match is None:
            match = match_pool(request, self._classes, pool,
                               kubernetes_version=self._limits.kubernetes_version)
            self._matches[key] = match
        return match

    def results(self, quiet: Collection[Outcome] = (),
                tally: Callable[[Sequence[tuple[PoolRef, Outcome]]], object] | None = None
                ) -> Iterator[ExtractionResult]:
        """Every (claim request, pool) result in claim, request and pool order.

        `quiet` outcomes are only passed to `tally` (once per claim request, as the sequence of
        every pool's (pool, outcome), one shared object per distinct sequence), not yielded: a
        `--summary` of 100,000 claims then pays per claim for a lookup, not for a relabelled
        result per pool. Without `tally` every result is yielded.

        Results are decided with the cyclic GC paused (short-lived acyclic objects next to a large
        parsed input), `_BATCH` at a time, and handed over with the collector as the caller had
        it: the caller's code (rendering, writing, `tally`) never runs inside the pause. A caller
        that only collects the results may pause around the whole drain (`dry_run` does).
        """
        counted: list[Sequence[tuple[PoolRef, Outcome]]] = []
        produced = self._results(frozenset(quiet) if tally is not None else frozenset(),
                                 counted.append if tally is not None else None)
        while True:
            with gc_paused():
                batch = list(itertools.islice(produced, _BATCH))
            if tally is not None:
                for outcomes in counted:
                    tally(outcomes)
                counted.clear()
            yield from batch
            if len(batch) < _BATCH:
                return

    def _results(self, quiet: frozenset[Outcome],
                 tally: Callable[[Sequence[tuple[PoolRef, Outcome]]], object] | None
                 ) -> Iterator[ExtractionResult]:
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
                plan = self._plan(claim, name, request, quiet)
                if tally is not None:
                    tally(plan.outcomes)
                reported: set[str] = set()
                for item in plan.loud:
                    if item.message is not None:
                        # the allocator aborts the pod on the first; every pool is reported
                        message = item.message.replace(_CLAIM_MARK, claim.qualified_name)
                        if message not in reported:
                            reported.add(message)
                            self.findings.append(_selector_finding(
                                claim, message, by_class.get(request.device_class_name) if request else None))
                        yield ExtractionResult(
                            claim.qualified_name, name, item.ref, Outcome.SELECTOR_ERROR,
                            error=ExtractionProblem(SELECTOR_ERROR_KIND, message))
                    elif item.result is None:
                        yield ExtractionResult(claim.qualified_name, name, item.ref,
                                               Outcome.NO_MATCHING_DEVICE, notes=item.notes)
                    elif plan.shared:
                        yield relabel(item.result, claim.qualified_name, item.ref)
                    else:
                        yield item.result

    def _plan(self, claim: ResourceClaim, name: str, request: DeviceRequest | None,
              quiet: frozenset[Outcome]) -> _RequestPlan:
        """Every pool's item for one claim request, shared by the claim requests that read alike:
        same class and selectors (candidates), same in-scope config contents (extraction)."""
        matched = self._classes and request is not None
        selectors = _selectors_key(request) if matched and request is not None else None
        contents = tuple(self._memo.content(claim, name, driver) for driver in self._drivers)
        key = (selectors, name, contents, quiet)
        shared = None not in contents
        found = self._plans.get(key) if shared else None
        if found is not None:
            return found
        items: list[_PlanItem] = []
        for ref, pool in self.pools.items():
            if not self._filters.pool_ok(ref):
                continue
            if matched and request is not None:
                match = self._match(request, pool)
                if match.failure is not None:
                    items.append(_PlanItem(ref, Outcome.SELECTOR_ERROR,
                                       message=match.failure.message(_CLAIM_MARK)))
                    continue
                if not match.candidate:
                    survey = match.survey  # no device matched: the walk that decided it counted why
                    if survey is None or survey.class_devices == 0:
                        continue  # not a pool of the class's driver: the allocator never looks
                    items.append(_PlanItem(ref, Outcome.NO_MATCHING_DEVICE,
                                           notes=_exclusions(request, survey)))
                    continue
            result = self._memo.extract(claim, name, self._summaries[ref])
            items.append(_PlanItem(ref, result.outcome, result=result))
        found = _RequestPlan(tuple((i.ref, i.outcome) for i in items),
                      tuple(i for i in items if i.outcome not in quiet), shared)
        if shared:
            self._plans[key] = found
        return found


_BATCH = 1024
"""Results decided per GC pause in `DryRun.results` (the pause is toggled once per batch)."""

_CLAIM_MARK = "\x00claim\x00"
"""Where a plan's selector message names the claim (filled in per claim)."""


@dataclass(frozen=True, slots=True)
class _PlanItem:
    """One pool's part of a plan: a selector failure, no matching device, or an extraction."""

    ref: PoolRef
    outcome: Outcome
    message: str | None = None
    notes: tuple[str, ...] = ()
    result: ExtractionResult | None = None


@dataclass(frozen=True, slots=True)
class _RequestPlan:
    outcomes: tuple[tuple[PoolRef, Outcome], ...]
    """Every pool's outcome, in pool order (what `--summary` counts)."""
    loud: tuple[_PlanItem, ...]
    """The items whose outcome is not quiet: yielded per claim."""
    shared: bool
    """Cached for other claims: extraction results carry another claim's name."""


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
