"""One extractor expression, analysed once: compiled, typed and costed.

Every rule about an expression (SA106–SA108, the advisories, extraction) starts
here, and the webhook sees the same expressions over and over, so the analysis is
cached by (expression, target version) on top of the compile cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from dra_affinity.policies.analysis.advice import (
    OversizedFormat,
    UnguardedSelect,
    can_decline,
    depends_on_object,
    has_schema_guard,
    oversized_format_verbs,
    unguarded_selects,
)
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import CACHE_BYTES, CompileResult, compile_expression, result_weight
from dra_affinity.policies.cel.cost.estimate import CostReport, estimate_cost
from dra_affinity.policies.core.cache import cached
from dra_affinity.policies.core.limits import KubernetesVersion

ANALYSIS_CACHE_SIZE = 4096


@dataclass(frozen=True, eq=False)
class ExpressionAnalysis:
    """Compilation in the environment that validates new expressions, and its static cost.

    `cost` is None when the expression did not compile. The estimate uses no size
    knowledge of `object` and no Kubernetes-library pricing, exactly like the
    scheduler's estimator (reference §1.4), so "unbounded" here is what the
    scheduler will reject.
    """

    compiled: CompileResult
    cost: CostReport | None

    @property
    def ok(self) -> bool:
        return self.compiled.ok

    # The advisories' questions, answered once per expression: the webhook sees the same
    # expressions on every write of a slice, and these walks cost as much as a compile.

    @cached_property
    def unguarded_reads(self) -> tuple[UnguardedSelect, ...]:
        ast = self.compiled.checked
        return tuple(unguarded_selects(ast)) if ast is not None else ()

    @cached_property
    def depends_on_object(self) -> bool:
        ast = self.compiled.checked
        return ast is not None and depends_on_object(ast)

    @cached_property
    def has_schema_guard(self) -> bool:
        ast = self.compiled.checked
        return ast is not None and has_schema_guard(ast)

    @cached_property
    def oversized_formats(self) -> tuple[OversizedFormat, ...]:
        ast = self.compiled.checked
        return tuple(oversized_format_verbs(ast)) if ast is not None else ()

    @cached_property
    def can_decline(self) -> bool:
        ast = self.compiled.checked
        return ast is not None and can_decline(ast)


@cached("analysis.expression", ANALYSIS_CACHE_SIZE, max_bytes=CACHE_BYTES,
        weigh=lambda _args, analysis: result_weight(analysis.compiled))
def analyse(expression: str, kubernetes_version: KubernetesVersion) -> ExpressionAnalysis:
    """Analyse `expression` as the API server of `kubernetes_version` would on write."""
    compiled = compile_expression(expression, EnvKey(kubernetes_version, EnvMode.NEW_EXPRESSIONS))
    cost = None
    if compiled.ok and compiled.checked is not None:
        cost = estimate_cost(compiled.checked, presence_test_cost=0)
    return ExpressionAnalysis(compiled, cost)
