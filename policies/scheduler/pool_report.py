"""What `dra-affinity pools` reports for one pool: SPEC §4's facts and the pool's findings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.slice_cost import slice_cost
from ..core.findings import Finding, PoolRef
from ..core.limits import Limits
from ..core.source import Position
from ..model.resources import ResourceSlice
from .pools import Pool


@dataclass(frozen=True, slots=True)
class SliceSummary:
    """One slice of a pool report: where it is and what it contributes."""

    name: str
    file: str | None
    position: Position | None
    generation: int
    resource_slice_count: int
    keys: tuple[str, ...]
    cost: int
    devices: int
    shareable_devices: int

    @property
    def role(self) -> str:
        if self.keys and self.devices:
            return "metadata+devices"
        if self.keys:
            return "metadata"
        return "devices" if self.devices else "empty"


@dataclass(frozen=True, slots=True)
class PoolReport:
    """What `dra-affinity pools` prints for one pool (SPEC §4's facts, plus its findings)."""

    ref: PoolRef
    generation: int
    complete: bool
    present: int
    expected: int | None
    incomplete_reason: str
    keys: tuple[tuple[str, str], ...]
    """(key, name of the slice declaring it), in declaration order, first declaration wins."""
    duplicate_keys: tuple[str, ...]
    total_cost: int
    cost_budget: int
    devices: int
    shareable_devices: int
    slices: tuple[SliceSummary, ...]
    superseded: tuple[SliceSummary, ...]
    findings: tuple[Finding, ...] = ()


def _summary(slice_: ResourceSlice, cost: int) -> SliceSummary:
    return SliceSummary(
        name=slice_.name,
        file=slice_.source.file,
        position=slice_.source.locate(()),
        generation=slice_.generation,
        resource_slice_count=slice_.resource_slice_count,
        keys=tuple(e.name for e in slice_.sharing_affinity if e.name),
        cost=cost,
        devices=len(slice_.devices),
        shareable_devices=sum(1 for d in slice_.devices if d.allow_multiple_allocations),
    )


def pool_report(pool: Pool, limits: Limits, findings: Iterable[Finding] = ()) -> PoolReport:
    """The report of one pool; `findings` are its pool findings (from `engine.check_pool`)."""
    return PoolReport(
        ref=pool.ref,
        generation=pool.generation,
        complete=pool.complete,
        present=len(pool.slices),
        expected=pool.expected_count,
        incomplete_reason=pool.incomplete_reason,
        keys=tuple((key, s.name) for key, (_, s) in pool.extractors.items()),
        duplicate_keys=pool.duplicate_keys,
        total_cost=pool.total_cost,
        cost_budget=limits.pool_cost_budget,
        devices=len(pool.devices),
        shareable_devices=pool.shareable_devices,
        slices=tuple(_summary(s, c) for s, c in zip(pool.slices, pool.slice_costs, strict=True)),
        superseded=tuple(_summary(s, slice_cost(s, limits)) for s in pool.superseded),
        findings=tuple(findings),
    )
