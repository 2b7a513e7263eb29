"""The static questions behind advisories SA201, SA202, SA205, SA206."""

from __future__ import annotations

import pytest
from dra_affinity.policies.analysis.advice import (
    can_decline,
    depends_on_object,
    has_schema_guard,
    unguarded_selects,
)

from tests.policies.cel.conftest import affinity_ast

KEP_SUBNET = (
    'object.apiVersion == "networking.example.com/v1"\n'
    '  && object.kind == "NICConfig"\n'
    '  ? object.subnetID : ""'
)
KEP_TWO_VERSIONS = (
    '(object.apiVersion == "networking.example.com/v1" ||\n'
    ' object.apiVersion == "networking.example.com/v1beta1")\n'
    '  && object.kind == "NICConfig"\n'
    '  ? object.subnetID : ""'
)


def unguarded(expr: str) -> list[str]:
    return [u.text for u in unguarded_selects(affinity_ast(expr))]


@pytest.mark.parametrize(
    "expr",
    [
        KEP_SUBNET,
        KEP_TWO_VERSIONS,
        'has(object.subnetID) ? object.subnetID : ""',
        'has(object.spec.subnet) ? object.spec.subnet : ""',
        'has(object.spec) && has(object.spec.subnet) ? object.spec.subnet : ""',
        '"subnet" in object ? object.subnet : ""',
        'object.?spec.?subnet.orValue("")',
        'cel.bind(s, object.?spec.orValue({}), has(s.subnet) ? s.subnet : "")',
        'object.kind == "A" && object.spec.subnet != "" ? object.spec.subnet : ""',
        'object.kind in ["A", "B"] ? object.x : ""',
        '"constant"',
    ],
)
def test_guarded_reads(expr: str) -> None:
    assert unguarded(expr) == []


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("object.subnetID", ["object.subnetID"]),
        ("object.spec.subnet", ["object.spec.subnet"]),
        ('object["spec"].subnet', ['object["spec"].subnet']),
        ('has(object.a) ? object.b : ""', ["object.b"]),
        ('has(object.a) ? "" : object.a', ["object.a"]),
        ('object.x != "" ? object.x : ""', ["object.x"]),
        ("cel.bind(v, object.spec, v.subnet)", ["object.spec", "v.subnet"]),
        ('has(object.spec) ? object.spec.subnet : ""', ["object.spec.subnet"]),
    ],
)
def test_unguarded_reads(expr: str, expected: list[str]) -> None:
    assert unguarded(expr) == expected


def test_unguarded_positions_point_into_the_expression() -> None:
    [found] = unguarded_selects(affinity_ast('has(object.a)\n  ? object.b : ""'))
    assert (found.line, found.column) == (2, 5)
    assert found.path == ("b",)


def test_schema_guard_detection() -> None:
    assert has_schema_guard(affinity_ast(KEP_SUBNET))
    assert has_schema_guard(affinity_ast('has(object.kind) ? "x" : ""'))
    assert has_schema_guard(affinity_ast('object.?kind.orValue("") == "K" ? "x" : ""'))
    assert not has_schema_guard(affinity_ast('has(object.subnetID) ? object.subnetID : ""'))


def test_depends_on_object() -> None:
    assert depends_on_object(affinity_ast("object.x"))
    assert not depends_on_object(affinity_ast('"fixed-subnet"'))
    assert not depends_on_object(affinity_ast('cel.bind(v, "a", v + "b")'))


@pytest.mark.parametrize(
    ("expr", "declines"),
    [
        (KEP_SUBNET, True),
        ('object.?subnet.orValue("")', True),
        ('cel.bind(v, object.x, v == "a" ? "" : v)', True),
        ("object.subnetID", False),
        ('has(object.a) ? object.a : "default"', False),
        ('object.?subnet.orValue("none")', False),
    ],
)
def test_can_decline(expr: str, declines: bool) -> None:
    assert can_decline(affinity_ast(expr)) is declines
