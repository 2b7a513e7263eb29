"""Expression rules SA106–SA108 and advisories SA201–SA207, through the engine."""

from __future__ import annotations

import pytest
from dra_affinity.policies.core.findings import Severity
from dra_affinity.policies.rules.engine import check_slice

from tests.helpers import entry, model, slice_doc

GUARDED = 'object.apiVersion == "n.example.com/v1" && object.kind == "C" ? "%s".format([object.x]) : ""'


def _literal_list(n: int, item: str) -> str:
    return "[" + ",".join([repr(item)] * n) + "]"


# about 547,000 estimated: within the budget alone, over half of it, over it twice
HEAVY = f"{_literal_list(300, 'a')}.all(x, {_literal_list(300, 'b')}.all(y, x != y)) ? 'k' : ''"


def findings(*expressions: str, old: list[str] | None = None):
    doc = slice_doc([entry(f"k{i}", e) for i, e in enumerate(expressions)])
    old_doc = slice_doc([entry(f"k{i}", e) for i, e in enumerate(old)]) if old is not None else None
    return check_slice(model(doc), model(old_doc) if old_doc else None)


def rules(*expressions: str, old: list[str] | None = None) -> list[str]:
    return sorted({f.rule for f in findings(*expressions, old=old)})


def test_clean_guarded_extractor_has_no_findings() -> None:
    assert rules(GUARDED) == []


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("object.subnetID.", "Syntax error"),
        ("device.attributes", "undeclared reference to 'device'"),
        ('math.greatest(1, 2) > 0 ? "a" : ""', "math"),
        ('"abc".reverse()', "reverse"),
        ('object.x + 1 == "a" ? "" : 1', ""),
    ],
)
def test_sa106_compile_errors(expr: str, fragment: str) -> None:
    found = [f for f in findings(expr) if f.rule == "SA106"]
    assert len(found) == 1, [f.message for f in findings(expr)]
    message = found[0].message
    assert message.startswith("spec.sharingAffinity[0].expression: Invalid value: ")
    assert "compilation failed: ERROR: <input>:1:" in message
    assert fragment in message
    assert found[0].severity is Severity.ERROR


@pytest.mark.parametrize(("expr", "type_name"), [
    ("42", "int"), ("object.x == 'a'", "bool"), ("object.?x", "optional_type(dyn)"),
    ("[object.x]", "list(dyn)"),
])
def test_sa107_non_string_output(expr: str, type_name: str) -> None:
    [finding] = [f for f in findings(expr) if f.rule == "SA107"]
    assert finding.message.endswith(f"must evaluate to string, not {type_name}")


def test_sa107_accepts_string_dyn_and_string_convertible_library_types() -> None:
    assert "SA107" not in rules('"%s".format([object.x])', "object.x")
    assert "SA107" not in rules('ip(object.?ip.orValue("10.0.0.1"))')
    assert "SA107" not in rules('cidr("10.0.0.0/8")')


@pytest.mark.parametrize(
    ("expr", "cause"),
    [
        ("object.a == object.b ? object.a : ''", "object.a"),
        ('"prefix-" + object.x', "object.x"),
        ("object.x.matches('^a') ? 'a' : ''", "object.x"),
        ("object.items.exists(i, i.name == 'x') ? 'y' : ''", "object.items"),
        ("string(object.vlan)", "object.vlan"),
    ],
)
def test_sa108_unbounded_estimates_name_the_sub_expression(expr: str, cause: str) -> None:
    [finding] = [f for f in findings(expr) if f.rule == "SA108"]
    assert "Forbidden: too complex, exceeds cost limit: estimated cost" in finding.message
    assert "exceeds limit 1000000" in finding.message
    assert f"`{cause}` (1:" in finding.message


def test_sa108_slice_sum() -> None:
    # 2 * ~600k: each alone is within budget, the slice is not
    heavy = HEAVY
    assert "SA108" not in rules(heavy)
    report = findings(heavy, heavy.replace("'k'", "'j'"))
    messages = [f.message for f in report if f.rule == "SA108"]
    assert messages and "total estimated cost" in messages[0]


def test_sa108_ratchets_when_nothing_changed() -> None:
    expensive = '"prefix-" + object.x'
    assert "SA108" in rules(expensive)
    assert "SA108" not in rules(expensive, old=[expensive])
    assert "SA108" in rules(expensive, old=["object.y"])


def test_sa201_unguarded_reads() -> None:
    [finding] = [f for f in findings('has(object.a) ? object.b : ""') if f.rule == "SA201"]
    assert "`object.b` (1:17)" in finding.message
    assert 'object.?b.orValue("")' in finding.message
    assert finding.severity is Severity.WARNING


def test_sa202_schema_guard() -> None:
    assert "SA202" in rules('has(object.a) ? object.a : ""')
    assert "SA202" not in rules(GUARDED)


def test_sa203_dyn_output() -> None:
    assert "SA203" in rules('object.?x.orValue("")')
    assert "SA203" not in rules(GUARDED)


def test_sa204_near_budget() -> None:
    assert "SA204" in rules(HEAVY)


def test_sa205_constant() -> None:
    assert "SA205" in rules('"object.subnetID"')


def test_sa206_cannot_decline() -> None:
    assert "SA206" in rules("object.subnetID")
    assert "SA206" not in rules('object.?subnetID.orValue("")')


def test_sa207_engine_limit_is_a_warning_not_sa106() -> None:
    deep = "(" * 40 + '""' + ")" * 40
    found = findings(deep)
    assert [f.rule for f in found if f.severity is Severity.ERROR] == []
    assert any(f.rule == "SA207" for f in found)


def test_too_long_expressions_are_not_compiled() -> None:
    long_expr = '"' + "a" * 10240 + '"'
    assert rules(long_expr) == ["SA105"]
