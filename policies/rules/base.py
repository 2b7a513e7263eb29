"""What a rule is: stable id and docs (for `rules`, SARIF, the webhook) plus a check.

Rules are yamllint-style: one module per rule, exporting `RULE`. A check is a
generator over a context, yielding `Finding`s; it never raises for bad input
(the structural check ran before), and it never formats locations itself.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dra_affinity.policies.core.findings import Finding, Location, Severity
from dra_affinity.policies.core.source import FieldPath, Position, render_path

if TYPE_CHECKING:
    from dra_affinity.policies.rules.context import PoolContext, SliceContext


class Scope(enum.Enum):
    INPUT = "input"
    SLICE = "slice"
    POOL = "pool"


SliceCheck = Callable[["SliceContext"], Iterable[Finding]]
PoolCheck = Callable[["PoolContext"], Iterable[Finding]]
"""A pool rule sees one pool (all its slices) at a time; see `dra_affinity.policies.scheduler.pools`."""


@dataclass(frozen=True, slots=True)
class Rule:
    """Everything a user or a reporter needs to know about one rule id."""

    id: str
    slug: str
    severity: Severity
    scope: Scope
    summary: str
    description: str
    bad_example: str = ""
    good_example: str = ""
    check: SliceCheck | None = None
    ratchets: bool = False
    """UPDATE: skip expressions byte-identical to one the old object already had (SPEC §2)."""
    upstream: str = ""
    """Where the API server or scheduler enforces the same thing, if anywhere."""
    pool_check: PoolCheck | None = None
    """The check of a pool rule (kept apart from `check`, whose input is one slice)."""

    @property
    def implemented(self) -> bool:
        return self.check is not None or self.pool_check is not None or self.scope is Scope.INPUT

    def finding(
        self,
        ctx: SliceContext,
        path: FieldPath,
        body: str,
        *,
        anchor: FieldPath | None = None,
        severity: Severity | None = None,
        inner: tuple[int, int] | None = None,
    ) -> Finding:
        """A finding on `ctx.slice` whose message reads like an API server field error.

        `anchor` is where a human should look when it differs from the reported field
        (a duplicate list entry is reported at `[i]`, but its `name` is the line to show).
        """
        obj = ctx.slice
        location = Location.at(obj.source, path, obj.ref)
        position = obj.source.locate(anchor) if anchor is not None else location.position
        at = Position(*inner) if inner is not None and inner[0] >= 1 else None
        value = obj.source.positions.get(path) if at is not None else None
        location = Location(
            field=path, file=location.file, position=position, object=obj.ref, inner=at, value=value
        )
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=f"{render_path(path)}: {body}",
            locations=(location,),
            pool=obj.pool,
        )

    def pool_finding(
        self,
        ctx: PoolContext,
        message: str,
        locations: Sequence[Location],
        *,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding about a whole pool, pointing at every slice involved (the first is primary)."""
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=message,
            locations=tuple(locations),
            pool=ctx.pool.ref,
        )
