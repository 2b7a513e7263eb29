"""`dra-affinity cel check`: iterate on one extractor — compile, type, cost, and a dry evaluation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ...policies.core.limits import KubernetesVersion, limits_for
from ..options import format_option, kubernetes_version_option
from ..reporters.json_reporter import kubernetes_to_json
from ..reporters.output import emit
from ..values import json_value


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


def _names_a_file(spec: str) -> bool:
    """Whether `spec` is the path of a file (inline JSON longer than a path can be is not)."""
    try:
        return Path(spec).is_file()
    except (OSError, ValueError):
        return False


def _read_object(spec: str) -> object:
    """`--object` takes inline JSON/YAML, a file path, or `-` for stdin.

    A value naming an existing file is read from it; anything else is inline text, so
    `--object 'vlan: 100'` works as well as `--object '{"vlan": 100}'`. YAML goes through
    `lint`'s loader, like every other YAML the CLI reads: it refuses alias bombs and
    duplicate keys as Kubernetes does, instead of expanding them. What decodes to something
    other than an object is a usage error: opaque parameters are always objects.
    """
    from ...policies.cel.common.jsonvalue import K8sJsonError, decode_k8s_json
    from ...sources.loader import load_text

    text = spec
    source = "inline text"
    if spec == "-":
        text = sys.stdin.read()
        source = "standard input"
    elif _names_a_file(spec):
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"--object: cannot read {spec}: {exc}") from None
        source = spec
    if text.lstrip().startswith(("{", "[")):
        try:
            return _object_or_usage_error(decode_k8s_json(text), source)
        except K8sJsonError as exc:
            json_error = exc  # flow-style YAML (`{vlan: 100}`) is not JSON: try it as YAML
    else:
        json_error = None
    loaded = load_text(text, name="--object")
    if loaded.findings:
        reason = json_error if json_error is not None else loaded.findings[0].message
        raise click.UsageError(f"--object: {source} is neither a readable file nor a JSON/YAML object: "
                               f"{reason}")
    if len(loaded.documents) > 1:
        raise click.UsageError(f"--object: expected one YAML document in {source}, "
                               f"found {len(loaded.documents)}")
    if not loaded.documents:
        return _object_or_usage_error(None, source)
    try:
        return _object_or_usage_error(decode_k8s_json(loaded.documents[0].data), source)
    except K8sJsonError as exc:
        raise click.UsageError(f"--object: cannot decode {source}: {exc}") from None


def _object_or_usage_error(value: object, source: str) -> object:
    if not isinstance(value, dict):
        found = f"a {type(value).__name__} {value!r:.40}" if value is not None else "nothing"
        raise click.UsageError(
            f"--object: {source} is neither a readable file nor a JSON/YAML object (found {found}); give the "
            "opaque parameters (e.g. '{\"vlan\": 100}' or 'vlan: 100'), a file, or -")
    return value




def lint_verdicts(expression: str, version: KubernetesVersion) -> list[dict[str, Any]]:
    """What `lint` reports for this expression as a slice's only extractor (SA105–SA108).

    The expression is put into a minimal ResourceSlice and run through the same rules,
    so ids and messages are lint's, word for word.
    """
    import yaml

    from ...policies.core.api import RESOURCE_GROUP
    from ...policies.model.resources import ResourceSlice, parse
    from ...policies.rules.engine import EngineOptions, check_slice
    from ...policies.rules.slice import (
        sa105_expression_too_long,
        sa106_compile_error,
        sa107_output_type,
        sa108_cost_budget,
    )
    from ...sources.loader import load_text

    # the slice rules that decide whether the API server accepts an extractor
    verdict_rules = {m.RULE.id for m in (sa105_expression_too_long, sa106_compile_error,
                                         sa107_output_type, sa108_cost_budget)}

    manifest = {
        "apiVersion": f"{RESOURCE_GROUP}/v1", "kind": "ResourceSlice", "metadata": {"name": "cel-check"},
        "spec": {"driver": "cel-check.example.com", "nodeName": "node",
                 "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                 "sharingAffinity": [{"name": "key", "expression": expression}]},
    }
    (document,) = load_text(yaml.safe_dump(manifest), name="<expression>").documents
    parsed = parse(document.data, document.source)
    if not isinstance(parsed.obj, ResourceSlice):  # the manifest above always parses
        return []
    findings = check_slice(parsed.obj, options=EngineOptions(kubernetes_version=version))
    return [{"rule": f.rule, "severity": f.severity.label, "message": f.message}
            for f in findings if f.rule in verdict_rules]


def check_expression(expression: str, version: KubernetesVersion, obj: object | None,
                     stored: bool) -> tuple[dict[str, Any], str]:
    """The `cel check --format json` document, and the errors as cel-go prints them."""
    from ...policies.cel.check.env import EnvKey, EnvMode
    from ...policies.cel.compile import compile_expression
    from ...policies.cel.cost.estimate import estimate_cost

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
        "verdicts": lint_verdicts(expression, version),
        "kubernetes": kubernetes_to_json(version),
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
            from ...policies.cel.eval.runtime import evaluate

            limit = limits_for(version).runtime_cost_per_evaluation
            from ...policies.scheduler.extraction import classify

            result = evaluate(compiled, {"object": obj}, cost_limit=limit)
            kind, detail, _ = classify(result)
            out["result"] = {
                "value": json_value(result.value),
                "type": result.cel_type or None,
                "runtimeCost": result.runtime_cost,
                # what CEL itself says (the upstream-parity corpus checks this) ...
                "error": {"kind": result.error.kind, "message": result.error.message}
                if result.error else None,
                # ... and what the scheduler makes of it (a non-string value is its error too)
                "scheduler": {"kind": kind, "message": detail} if kind is not None else None,
            }
    return out, compiled.error_text


def _verdict(verdict: dict[str, Any], error_text: str) -> str:
    """A verdict as lint's first line reads (`RULE severity: message`); a message that quotes
    the compile error printed just above says so instead of printing it twice."""
    message = verdict["message"]
    if error_text and f": {error_text}" in message:
        message = message.replace(f": {error_text}", " (the error above)")
    return f"{verdict['rule']} {verdict['severity']}: {message}"


def _text(doc: dict[str, Any], error_text: str) -> str:
    lines: list[str] = []
    verdicts = [_verdict(v, error_text) for v in doc["verdicts"]]
    if doc["compiles"] is None:
        lines.append(f"not fully checked: {doc.get('engineLimited')}")
    elif not doc["compiles"]:
        return "\n".join(["does not compile:", error_text, *verdicts])
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
    lines.extend(verdicts)
    result = doc["result"]
    if result is not None:
        if result["scheduler"]:
            if result["error"] is None:  # evaluated, but the scheduler cannot use the value
                lines.append(f"value: {json.dumps(result['value'])} ({result['type']})")
            verdict = result["scheduler"]
            lines.append(f"scheduler: slice-error: {verdict['kind']}: {verdict['message']}")
        else:
            lines.append(f"value: {json.dumps(result['value'])} ({result['type']})")
            lines.append("scheduler: ok")
        lines.append(f"runtime cost: {result['runtimeCost']}")
    return "\n".join(lines)


@cel.command("check", short_help="Would this extractor be accepted and work? Verdicts and value.")
@click.argument("expression", required=False)
@click.option("--file", "file", metavar="PATH|-", help="Read the expression from a file (or stdin).")
@click.option("--object", "obj", metavar="FILE|JSON|-",
              help="Evaluate against this opaque-parameters object: inline JSON or YAML text, a file, "
                   "or - for stdin.")
@click.option("--stored", is_flag=True,
              help="Use the environment for stored expressions (every option of the release) "
                   "instead of the one that validates new expressions (n−1).")
@format_option(("text", "json"))
@kubernetes_version_option
def check(expression: str | None, file: str | None, obj: str | None, stored: bool, fmt: str,
          output: str | None, kubernetes_version: KubernetesVersion) -> None:
    """Would this extractor be accepted and work? Compile EXPRESSION, print its output type,
    estimated cost and lint's verdicts (SA105–SA108), and evaluate it with --object as the
    scheduler does.

    Exit code 1 when the expression does not compile, a verdict fails (what the API server
    rejects), or the evaluation fails or returns what the scheduler cannot use (a
    non-string: `cel expression returned non-string`); 0 otherwise; 2 on usage errors.
    """
    text = _read_expression(expression, file)
    value = _read_object(obj) if obj is not None else None
    doc, error_text = check_expression(text, kubernetes_version, value, stored)
    emit("cel check", json.dumps(doc, indent=2) if fmt == "json" else _text(doc, error_text), output)
    failed = (doc["compiles"] is False or any(v["severity"] == "error" for v in doc["verdicts"])
              or (doc["result"] is not None and doc["result"]["scheduler"]))
    sys.exit(1 if failed else 0)
