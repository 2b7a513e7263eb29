"""An expression and a slice as the cost budget sees them (SA108, SP302 and the scheduler).

The same gate and the same sum serve the slice rule, the pool rules and the pool model, so
an over-long or blank expression is never costed in one place and skipped in another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.limits import Limits
from ..model.resources import ResourceSlice

if TYPE_CHECKING:  # the CEL engine loads on the first expression, not on `--help`
    from .expression import ExpressionAnalysis


def analysable(expression: str | None, limits: Limits) -> ExpressionAnalysis | None:
    """Compilation and cost of a non-empty expression within the length limit (else None).

    Expressions over the length limit are SA105's: upstream stops there too, without
    compiling.
    """
    if not expression or not expression.strip():
        return None
    if len(expression.encode("utf-8")) > limits.max_expression_bytes:
        return None
    from .expression import analyse

    return analyse(expression, limits.kubernetes_version)


def slice_cost(slice_: ResourceSlice, limits: Limits) -> int:
    """Saturating sum of every analysable expression's estimated maximum in the slice.

    No ratcheting: the scheduler re-costs every stored expression.
    """
    from ..cel.cost.estimate import MAX_UINT64

    total = 0
    for extractor in slice_.sharing_affinity:
        result = analysable(extractor.expression, limits)
        if result is not None and result.cost is not None:
            total = min(MAX_UINT64, total + result.cost.max)
    return total
