"""`dra-affinity cel check`: iterate on one extractor — compile, type, cost, and a dry evaluation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from dra_affinity.lint.options import kubernetes_version_option
from dra_affinity.lint.values import json_value
from dra_affinity.policies.core.limits import KubernetesVersion, limits_for


@click.group("cel")
def cel() -> None:
    """Check CEL extractor expressions in the Kubernetes sharing-affinity environment."""


def _read_expression(expression: str | None, file: str | None) -> str:
    if (expression is None) == (file is None):
        raise click.UsageError("give exactly one of EXPRESSION or --file")
    if file is None:
        assert expression is not None
        try:
            expression.encode("utf-8")
        except UnicodeEncodeError as exc:
            # The shell passed bytes that are not UTF-8 (Python keeps them as lone surrogates).
            raise click.UsageError(f"EXPRESSION is not valid UTF-8 (at character {exc.start + 1})") from None
        return expression
    try:
        return sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.UsageError(f"cannot read --file {file}: {exc}") from None


def _read_object(spec: str) -> object:
    """`--object` takes inline JSON/YAML, a file path, or `-` for stdin.

    YAML goes through `lint`'s loader, like every other YAML the CLI reads: it refuses alias
    bombs and duplicate keys as Kubernetes does, instead of expanding them.
    """
    from dra_affinity.lint.loader import load_text
    from dra_affinity.policies.cel.common.jsonvalue import K8sJsonError, decode_k8s_json

    text = spec
    stripped = spec.lstrip()
    if spec == "-":
        text = sys.stdin.read()
    elif not stripped.startswith(("{", "[")):
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"--object: not JSON and not a readable file: {spec} ({exc})") from None
    try:
        if text.lstrip().startswith(("{", "[")):
            return decode_k8s_json(text)
        loaded = load_text(text, name="--object")
        if loaded.findings:
            raise click.UsageError(f"--object: cannot decode: {loaded.findings[0].message}")
        if len(loaded.documents) != 1:
            raise click.UsageError(f"--object: expected one YAML document, found "
                                   f"{len(loaded.documents)}")
        return decode_k8s_json(loaded.documents[0].data)
    except K8sJsonError as exc:
        raise click.UsageError(f"--object: cannot decode: {exc}") from None


def check_expression(expression: str, version: KubernetesVersion, obj: object | None,
                     stored: bool) -> tuple[dict[str, Any], str]:
    """The `cel check --format json` document, and the errors as cel-go prints them."""
    from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
    from dra_affinity.policies.cel.compile import compile_expression
    from dra_affinity.policies.cel.cost.estimate import estimate_cost

    mode = EnvMode.STORED_EXPRESSIONS if stored else EnvMode.NEW_EXPRESSIONS
    compiled = compile_expression(expression, EnvKey(version, mode))
    out: dict[str, Any] = {
        "compiles": None if compiled.engine_limited else compiled.ok,
        "errors": [
            {"line": e.line, "column": e.column, "message": e.message} for e in compiled.errors
        ],
        "outputType": compiled.output_type,
        "cost": None,
        "result": None,
    }
    if compiled.engine_limited:
        out["engineLimited"] = compiled.engine_limit_reason
    if compiled.ok and compiled.checked is not None:
        cost = estimate_cost(compiled.checked, presence_test_cost=0)
        out["cost"] = {"min": cost.min, "max": cost.max}
        if cost.unbounded:
            out["cost"]["unbounded"] = [
                {"line": c.line, "column": c.column, "expression": c.text, "reason": c.reason,
                 "operation": c.operation_text}
                for c in cost.unbounded
            ]
        if obj is not None:
            from dra_affinity.policies.cel.eval.runtime import evaluate

            limit = limits_for(version).runtime_cost_per_evaluation
            result = evaluate(compiled, {"object": obj}, cost_limit=limit)
            out["result"] = {
                "value": json_value(result.value),
                "type": result.cel_type or None,
                "runtimeCost": result.runtime_cost,
                "error": {"kind": result.error.kind, "message": result.error.message}
                if result.error else None,
            }
    return out, compiled.error_text


def _text(doc: dict[str, Any], error_text: str) -> str:
    lines: list[str] = []
    if doc["compiles"] is None:
        lines.append(f"not fully checked: {doc.get('engineLimited')}")
    elif not doc["compiles"]:
        return "does not compile:\n" + error_text
    else:
        lines.append(f"compiles: output type {doc['outputType']}")
    if doc["cost"] is not None:
        cost = doc["cost"]
        lines.append(f"estimated cost: min {cost['min']}, max {cost['max']}")
        for cause in cost.get("unbounded", []):
            lines.append(
                f"  unbounded: `{cause['expression']}` ({cause['line']}:{cause['column']}): "
                f"{cause['reason']} in `{cause['operation']}`"
            )
    result = doc["result"]
    if result is not None:
        if result["error"]:
            lines.append(f"error: {result['error']['kind']}: {result['error']['message']}")
        else:
            lines.append(f"value: {json.dumps(result['value'])} ({result['type']})")
        lines.append(f"runtime cost: {result['runtimeCost']}")
    return "\n".join(lines)


@cel.command("check")
@click.argument("expression", required=False)
@click.option("--file", "file", metavar="PATH|-", help="Read the expression from a file (or stdin).")
@click.option("--object", "obj", metavar="FILE|JSON|-",
              help="Evaluate against this opaque-parameters object (JSON/YAML text, a file, or -).")
@click.option("--stored", is_flag=True,
              help="Use the environment for stored expressions (every option of the release) "
                   "instead of the one that validates new expressions (n−1).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@kubernetes_version_option
def check(expression: str | None, file: str | None, obj: str | None, stored: bool, fmt: str,
          kubernetes_version: KubernetesVersion) -> None:
    """Compile EXPRESSION, print its output type and estimated cost, and evaluate it with --object.

    Exit code 1 when the expression does not compile or its evaluation fails.
    """
    text = _read_expression(expression, file)
    value = _read_object(obj) if obj is not None else None
    doc, error_text = check_expression(text, kubernetes_version, value, stored)
    click.echo(json.dumps(doc, indent=2) if fmt == "json" else _text(doc, error_text))
    failed = doc["compiles"] is False or (doc["result"] is not None and doc["result"]["error"])
    sys.exit(1 if failed else 0)
