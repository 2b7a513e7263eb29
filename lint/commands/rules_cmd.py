"""`dra-affinity rules [ID]`: the catalog, as ruff's `rule CODE` explains a code."""

from __future__ import annotations

import json

import click

from ...policies.rules.base import Rule
from ...policies.rules.catalog import UnknownRuleError, catalog, get_rule
from ...policies.rules.context import SliceRule
from ..options import format_option
from ..reporters.output import emit


def _ratchets(rule: Rule) -> bool:
    return isinstance(rule, SliceRule) and rule.ratchets


def _as_json(rule: Rule) -> dict[str, object]:
    return {
        "id": rule.id,
        "slug": rule.slug,
        "severity": rule.severity.label,
        "scope": rule.scope.value,
        "summary": rule.summary,
        "description": rule.description,
        "badExample": rule.bad_example,
        "goodExample": rule.good_example,
        "implemented": rule.implemented,
        "ratchets": _ratchets(rule),
        "upstream": rule.upstream,
    }


def _explain(rule: Rule) -> str:
    lines = [
        f"{rule.id} {rule.slug} ({rule.severity.label}, {rule.scope.value} rule)",
        "",
        rule.summary[0].upper() + rule.summary[1:] + ".",
        "",
        click.wrap_text(rule.description, width=88, preserve_paragraphs=True),
    ]
    if rule.upstream:
        lines += ["", f"Also enforced by: {rule.upstream}."]
    if _ratchets(rule):
        lines += ["", "On UPDATE, expressions stored unchanged in the old object are not re-checked."]
    for title, example in (("Bad", rule.bad_example), ("Good", rule.good_example)):
        if example:
            lines += ["", f"{title}:", *("    " + line for line in example.splitlines())]
    return "\n".join(lines)


@click.command("rules")
@click.argument("rule_id", required=False, metavar="[RULE_ID]")
@format_option(("text", "json"))
def rules(rule_id: str | None, fmt: str, output: str | None) -> None:
    """List every rule, or explain RULE_ID (e.g. `dra-affinity rules SA105`).

    Exit code 0; 2 on usage errors (an unknown rule).
    """
    if rule_id is None:
        selected = list(catalog().values())
        if fmt == "json":
            emit("rules", json.dumps([_as_json(r) for r in selected], indent=2), output)
            return
        emit("rules", _table(selected), output)
        return
    try:
        rule = get_rule(rule_id)
    except UnknownRuleError:
        raise click.UsageError(
            f"unknown rule {rule_id!r}; `dra-affinity rules` lists them"
        ) from None
    emit("rules", json.dumps(_as_json(rule), indent=2) if fmt == "json" else _explain(rule), output)


def _table(selected: list[Rule]) -> str:
    """One rule per line, columns as wide as their longest cell."""
    rows = [(r.id, r.severity.label, r.slug, r.summary) for r in selected]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
                     + "  " + row[3] for row in rows)
