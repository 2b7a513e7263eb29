"""The scheduler's view of an extractor: compiled for evaluation, with its cost verdict.

The scheduler compiles stored expressions in the StoredExpressions environment of its
own release and rejects an estimated maximum above the per-evaluation limit. The
API server's view (new expressions at n−1) is `dra_affinity.policies.analysis.expression`.
"""

from __future__ import annotations

from ..cel.check.env import EnvKey, EnvMode
from ..cel.compile import CompileResult, compile_expression
from ..cel.cost.estimate import estimate_cost
from ..core.cache import cached
from ..core.limits import KubernetesVersion


@cached("analysis.scheduler_compile", 4096)
def scheduler_compile(expression: str, version: KubernetesVersion) -> tuple[CompileResult, int | None]:
    """(compiled program, estimated maximum cost or None when it did not compile)."""
    compiled = compile_expression(expression, EnvKey(version, EnvMode.STORED_EXPRESSIONS))
    if not compiled.ok or compiled.checked is None:
        return compiled, None
    return compiled, estimate_cost(compiled.checked, presence_test_cost=0).max
