"""Slice rules SA101–SA105, SA109 at their boundaries, through the engine."""

from __future__ import annotations

import pytest
from dra_affinity.policies.core.findings import Severity
from dra_affinity.policies.rules.engine import check_slice

from tests.helpers import entry, model, slice_doc


def rules_of(doc, old=None) -> list[tuple[str, str]]:
    findings = check_slice(model(doc), model(old) if old else None)
    return [(f.rule, f.message) for f in findings]


def test_eight_entries_pass_nine_fail() -> None:
    eight = [entry(f"k{i}") for i in range(8)]
    assert rules_of(slice_doc(eight)) == []
    nine = [entry(f"k{i}") for i in range(9)]
    assert rules_of(slice_doc(nine)) == [
        ("SA101", "spec.sharingAffinity: Too many: 9: must have at most 8 items")
    ]


def test_duplicate_names_reported_at_the_later_entry() -> None:
    doc = slice_doc([entry("subnet"), entry("pkey"), entry("subnet")])
    findings = check_slice(model(doc))
    assert [(f.rule, f.message) for f in findings] == [
        ("SA102", 'spec.sharingAffinity[2]: Duplicate value: "subnet"')
    ]
    assert findings[0].primary.field_path == "spec.sharingAffinity[2]"
    assert findings[0].severity is Severity.ERROR


@pytest.mark.parametrize(
    "name",
    ["subnet", "pkey", "nvlink-domain", "a", "A.b_c-9", "networking.example.com/subnet", "x" * 63],
)
def test_valid_names(name: str) -> None:
    assert rules_of(slice_doc([entry(name)])) == []


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("rdma pkey", "name part must consist of alphanumeric characters"),
        ("-subnet", "must start and end with an alphanumeric character"),
        ("x" * 64, "name part must be no more than 63 characters"),
        ("/subnet", "prefix part must be non-empty"),
        ("Example.com/subnet", "prefix part a lowercase RFC 1123 subdomain"),
        ("a/b/c", "a qualified name must consist of"),
        ("example.com/", "name part must be non-empty"),
    ],
)
def test_invalid_names(name: str, fragment: str) -> None:
    found = rules_of(slice_doc([entry(name)]))
    assert found, name
    assert all(rule == "SA103" for rule, _ in found)
    assert any(fragment in message for _, message in found)
    assert found[0][1].startswith('spec.sharingAffinity[0].name: Invalid value: "')


def test_missing_and_empty_name_are_required() -> None:
    doc = slice_doc([{"expression": entry("x")["expression"]}, entry("")])
    assert rules_of(doc) == [
        ("SA103", "spec.sharingAffinity[0].name: Required value"),
        ("SA103", "spec.sharingAffinity[1].name: Required value"),
    ]


@pytest.mark.parametrize("expression", [None, "", "   \n"])
def test_empty_expression(expression: str | None) -> None:
    item = {"name": "subnet"} if expression is None else entry("subnet", expression)
    assert rules_of(slice_doc([item])) == [
        ("SA104", "spec.sharingAffinity[0].expression: Required value")
    ]


def _padded(size: int, filler: str = "a") -> str:
    """A string literal expression of exactly `size` UTF-8 bytes."""
    width = len(filler.encode())
    body = (size - 2) // width
    text = '"' + filler * body + '"'
    text += " " * (size - len(text.encode()))
    assert len(text.encode()) == size
    return text


@pytest.mark.parametrize("filler", ["a", "é", "€", "😀"])
def test_length_boundary_in_bytes(filler: str) -> None:
    ok = _padded(10240, filler)
    too_long = _padded(10241, filler)
    assert "SA105" not in [r for r, _ in rules_of(slice_doc([entry("k", ok)]))]
    assert [f for f in rules_of(slice_doc([entry("k", too_long)])) if f[0] == "SA105"] == [
        ("SA105", "spec.sharingAffinity[0].expression: Too long: may not be more than 10240 bytes")
    ]


def test_length_counts_bytes_not_characters() -> None:
    text = '"' + "é" * 5200 + '"'  # 5202 characters, 10402 bytes
    assert len(text) < 10240 < len(text.encode())
    assert [r for r, _ in rules_of(slice_doc([entry("k", text)])) if r == "SA105"] == ["SA105"]


def test_devices_and_affinity_are_exclusive() -> None:
    doc = slice_doc([entry("subnet")], devices=[{"name": "eth0"}])
    assert rules_of(doc) == [
        ("SA109", 'spec: Invalid value: "": only one of `devices` or `sharingAffinity` is allowed')
    ]
    # presence, as upstream tests non-nil: an empty device list still counts
    assert [r for r, _ in rules_of(slice_doc([entry("subnet")], devices=[]))] == ["SA109"]
    assert rules_of(slice_doc(None, devices=[{"name": "eth0"}])) == []


def test_update_ratchets_unchanged_expressions_only() -> None:
    long_expr = _padded(10241)
    old = slice_doc([entry("k", long_expr)])
    unchanged = slice_doc([entry("k", long_expr), entry("j")])
    assert rules_of(unchanged, old) == []
    changed = slice_doc([entry("k", long_expr + " ")])
    assert [r for r, _ in rules_of(changed, old) if r == "SA105"] == ["SA105"]
    # ratcheting is by expression text, not by entry name or position
    moved = slice_doc([entry("j"), entry("renamed", long_expr)])
    assert rules_of(moved, old) == []


def test_ratcheting_does_not_cover_structural_rules() -> None:
    nine = [entry(f"k{i}") for i in range(9)]
    assert [r for r, _ in rules_of(slice_doc(nine), slice_doc(nine))] == ["SA101"]


def test_trailing_newline_is_not_a_qualified_name() -> None:
    assert [r for r, _ in rules_of(slice_doc([entry("subnet\n")]))] == ["SA103"]


def test_lone_surrogates_are_measured_as_go_decodes_them() -> None:
    # Python's json keeps "\ud800"; Go's decoder makes it U+FFFD (3 bytes). No traceback.
    text = '"' + "\ud800" * 3413 + '"'  # 3413 * 3 + 2 = 10241 bytes once replaced
    assert [r for r, _ in rules_of(slice_doc([entry("k", text)])) if r == "SA105"] == ["SA105"]
