"""SA106: the expression compiles in the Kubernetes CEL environment of the target release."""

from __future__ import annotations

from collections.abc import Iterator

from ...cel.suggest import suggestions
from ...core.findings import Finding, Severity
from ...core.k8s_names import go_quote
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.checked_extractors():
        compiled = result.compiled
        if compiled.ok or compiled.engine_limited or extractor.expression is None:
            continue
        hints = "".join(f"; {hint}" for hint in suggestions(compiled))
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity", extractor.index, "expression"),
            f"Invalid value: {go_quote(extractor.expression)}: compilation failed: {compiled.error_text}"
            f"{hints}",
            inner=(compiled.errors[0].line, compiled.errors[0].column) if compiled.errors else None,
        )


RULE = SliceRule(
    id="SA106",
    slug="compile-error",
    severity=Severity.ERROR,
    summary="the expression does not compile (parse or type-check) in the Kubernetes CEL environment",
    description=(
        "The environment is the Kubernetes base CEL environment of the target release's "
        "compatibility version (n−1, as the API server uses for new expressions) plus "
        "`cel.bind`, with one variable `object` of type `dyn`: the claim's opaque parameters. "
        "No other variable exists (`device` is an error here), and libraries Kubernetes lacks "
        "(`math`, `base64`, strings v3+) are absent. The message is cel-go's "
        "`ERROR: <input>:L:C:` report with a caret under the problem. An expression that only "
        "our engine cannot handle (nesting deeper than 32) is SA207, not SA106. A misspelled "
        "function gets the nearest name that compiles in its place (`did you mean 'orValue' "
        "instead of 'orVlaue'?`)."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: object.subnetID."
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'"
    ),
    check=check,
    ratchets=True,
    upstream="kube-scheduler (compiles every extractor; a failure blocks the pool)",
)
