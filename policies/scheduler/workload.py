"""Workloads for capacity planning: which claims arrive, when, with which affinity values, for how long.

A workload names claims (ResourceClaims or ResourceClaimTemplates of the input) and, per claim,
how often it arrives (a weight, or an arrival rate), how long a placed copy stays (fixed,
exponential, or never leaves) and which opaque-config fields vary between copies (the values
and their frequencies; `zipf_weights` gives the skew of a few popular subnets and a long tail).
`arrivals` turns it into a seeded, reproducible sequence; `dra_affinity.policies.scheduler.replay`
replays it against the lock model.

Copies that differ only in their varied values share one *variant* claim (`Variant`): the
replay extracts once per (variant, request, pool), so 100,000 arrivals over 20 subnets cost
20 extractions per request and pool, and no copy compiles anything (compilation is cached per
expression by `analysis.scheduler_cel`).
"""

from __future__ import annotations

import bisect
import copy
import enum
import itertools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.source import FieldPath
from ..model.resources import ClaimConfig, OpaqueConfig, ResourceClaim


class LifetimeKind(enum.Enum):
    FIXED = "fixed"
    EXPONENTIAL = "exponential"
    NEVER = "never"
    """The claim stays allocated until the end of the run (a long-running service)."""


@dataclass(frozen=True, slots=True)
class Lifetime:
    kind: LifetimeKind
    value: float = 0.0
    """The duration (fixed) or the mean (exponential), in the workload's time unit."""

    def sample(self, rng: random.Random) -> float | None:
        """How long one placed copy stays; None: it never leaves."""
        if self.kind is LifetimeKind.NEVER:
            return None
        if self.kind is LifetimeKind.FIXED:
            return self.value
        return rng.expovariate(1.0 / self.value)


@dataclass(frozen=True, slots=True)
class Vary:
    """One opaque-config field that differs between copies, and its values with their weights."""

    field: tuple[str, ...]
    """The path inside `opaque.parameters` (`subnetID`, or `spec.network.subnet` as a tuple)."""
    values: tuple[tuple[str, float], ...]
    config: int | None = None
    """The index in `spec.devices.config`; None: the claim's first opaque config."""
    path: FieldPath = ()
    """Where this entry sits in the workload file (for error messages)."""


@dataclass(frozen=True, slots=True)
class TemplateSpec:
    claim: str
    """`namespace/name` of a ResourceClaim or ResourceClaimTemplate of the input."""
    weight: float
    """Share of the arrivals (arrival rates are turned into weights by the loader)."""
    lifetime: Lifetime
    vary: tuple[Vary, ...] = ()
    path: FieldPath = ()


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    seed: int
    arrivals: int
    rate: float
    """Arrivals per time unit over all templates (a Poisson process)."""
    templates: tuple[TemplateSpec, ...]


@dataclass(frozen=True, slots=True)
class WorkloadProblem:
    """The workload cannot be run against this input (unknown claim, missing config field ...)."""

    message: str
    path: FieldPath = ()


def zipf_weights(count: int, exponent: float) -> tuple[float, ...]:
    """Weights of the 1st .. count-th value under Zipf's law: the k-th is 1/k^s of the first."""
    return tuple(1.0 / (k ** exponent) for k in range(1, count + 1))


@dataclass(frozen=True, slots=True)
class Variant:
    """One combination of varied values of one template: the claim all its copies are."""

    index: int
    template: int
    values: tuple[str, ...]
    claim: ResourceClaim
    """The template's claim with these values, named `<name>~<n>` (one name per content, as the
    extraction memo and every cache keyed by claim name expect)."""
    template_claim: str
    """`namespace/name` of the template: the copies are named after it (`<name>-<arrival>`)."""


@dataclass(frozen=True, slots=True)
class Arrival:
    index: int
    time: float
    variant: int
    lifetime: float | None


def _cumulative(weights: Sequence[float]) -> list[float]:
    return list(itertools.accumulate(weights))


def _pick(rng: random.Random, cumulative: Sequence[float]) -> int:
    return min(bisect.bisect_right(cumulative, rng.random() * cumulative[-1]), len(cumulative) - 1)


def variants(workload: Workload, claims: Mapping[str, ResourceClaim]
             ) -> tuple[list[Variant], dict[tuple[int, tuple[int, ...]], int]] | list[WorkloadProblem]:
    """Every (template, value combination) as a claim, and its index by (template, value indexes).

    All combinations are built up front (a template varying 20 subnets × 4 pkeys has 80), so
    the problems of a workload are reported before the run, never halfway through it.
    """
    problems: list[WorkloadProblem] = []
    out: list[Variant] = []
    index: dict[tuple[int, tuple[int, ...]], int] = {}
    for t, spec in enumerate(workload.templates):
        claim = claims.get(spec.claim)
        if claim is None:
            problems.append(WorkloadProblem(f"claim {spec.claim!r} is not in the input (give the file "
                                            "holding the ResourceClaim or ResourceClaimTemplate)",
                                            (*spec.path, "claim")))
            continue
        targets: list[int] = []
        for vary in spec.vary:
            target = _config_index(claim, vary)
            if isinstance(target, WorkloadProblem):
                problems.append(target)
            else:
                targets.append(target)
        if len(targets) != len(spec.vary):
            continue
        for combo in itertools.product(*(range(len(v.values)) for v in spec.vary)):
            values = tuple(v.values[i][0] for v, i in zip(spec.vary, combo, strict=True))
            built = _with_values(claim, spec.vary, targets, values)
            if isinstance(built, WorkloadProblem):
                problems.append(built)
                break
            index[(t, combo)] = len(out)
            named = replace(built, name=f"{claim.name}~{len(out)}")
            out.append(Variant(len(out), t, values, named, claim.qualified_name))
    return problems or (out, index)


def _config_index(claim: ResourceClaim, vary: Vary) -> int | WorkloadProblem:
    opaque = [c.index for c in claim.configs if c.opaque is not None]
    if vary.config is None:
        if not opaque:
            return WorkloadProblem(f"claim {claim.qualified_name} has no opaque config to vary",
                                   vary.path)
        return opaque[0]
    if vary.config not in opaque:
        return WorkloadProblem(f"claim {claim.qualified_name} has no opaque config at "
                               f"spec.devices.config[{vary.config}]", (*vary.path, "config"))
    return vary.config


def _with_values(claim: ResourceClaim, varies: Sequence[Vary], targets: Sequence[int],
                 values: Sequence[str]) -> ResourceClaim | WorkloadProblem:
    configs = list(claim.configs)
    for vary, target, value in zip(varies, targets, values, strict=True):
        config = configs[target]
        assert config.opaque is not None
        params = copy.deepcopy(config.opaque.parameters)
        if not isinstance(params, dict):
            return WorkloadProblem(f"claim {claim.qualified_name}: spec.devices.config[{target}].opaque."
                                   "parameters is not an object: cannot set a field in it", vary.path)
        node: dict[str, Any] = params
        for part in vary.field[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                return WorkloadProblem(f"claim {claim.qualified_name}: {'.'.join(vary.field)}: "
                                       f"{part!r} is not an object", (*vary.path, "field"))
            node = child
        node[vary.field[-1]] = value
        configs[target] = ClaimConfig(config.index, config.requests,
                                      OpaqueConfig(config.opaque.driver, params))
    return replace(claim, configs=tuple(configs))


def arrivals(workload: Workload, index: Mapping[tuple[int, tuple[int, ...]], int]) -> list[Arrival]:
    """The seeded sequence of arrivals: same workload and seed, same arrivals, on any machine."""
    rng = random.Random(workload.seed)
    by_template = _cumulative([t.weight for t in workload.templates])
    by_value = [[_cumulative([w for _, w in v.values]) for v in t.vary] for t in workload.templates]
    out: list[Arrival] = []
    now = 0.0
    for n in range(workload.arrivals):
        now += rng.expovariate(workload.rate)
        t = _pick(rng, by_template)
        combo = tuple(_pick(rng, cumulative) for cumulative in by_value[t])
        lifetime = workload.templates[t].lifetime.sample(rng)
        out.append(Arrival(n, now, index[(t, combo)], lifetime))
    return out
