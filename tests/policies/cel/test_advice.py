"""The static questions behind advisories SA201, SA202, SA205, SA206."""

from __future__ import annotations

import pytest
from dra_affinity.policies.analysis.advice import (
    depends_on_object,
    has_schema_guard,
    unguarded_selects,
)
from dra_affinity.policies.analysis.expression import analyse
from dra_affinity.policies.core.limits import limits_for

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
        ('cel.bind(v, object.x, v == "a" ? "" : v)', False),  # fails on a config without x
        ('cel.bind(v, object.?x.orValue(""), v == "a" ? "" : v)', True),
        ("object.subnetID", False),
        ('has(object.a) ? object.a : "default"', False),
        ('object.?subnet.orValue("none")', False),
        ('"%s".format([object.?net.vrf.orValue("")])', True),
        ('object.?interface.vrf.name.orValue("")', True),
        ('object.?net.vrf.orValue("default")', False),
        ('object.kind == "" ? "" : "x"', False),
    ],
)
def test_can_decline(expr: str, declines: bool) -> None:
    """Decided by running the expression on configs of another schema, not by a literal search."""
    assert analyse(expr, limits_for().kubernetes_version).can_decline is declines


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("object.?interface.vrf.name", []),
        ('object.?interface.vrf.name.orValue("")', []),
        ('cel.bind(v, object.?a, v.b.orValue(""))', []),
        ('object[?"a"].b.orValue("")', []),
        ('object.a.?b.c.orValue("")', ['object.a.?b.c']),
        ('cel.bind(v, object.a, v.?b.orValue(""))', ["object.a"]),
    ],
)
def test_optional_chaining_propagates(expr: str, expected: list[str]) -> None:
    """After the first optional step nothing in the chain can fail: only the plain fields
    before it are reads (`object.?x.y` yields none when x or y is absent)."""
    assert unguarded(expr) == expected


def test_unguarded_read_reported_with_a_config_that_fails() -> None:
    analysis = analyse('object.mode == "vrf" ? object.spec.vrf : ""', limits_for().kubernetes_version)
    [(_, witness)] = [r for r in analysis.unguarded_reads if r[0].text == "object.spec.vrf"]
    assert witness.config.get("mode") == "vrf"  # the branch is reached
    assert witness.error in {"no such key: spec", "no such key: vrf"}
    assert "spec" not in witness.config or "vrf" not in witness.config["spec"]


def test_unguarded_read_never_reached_is_not_reported() -> None:
    """`!has(x) ? "" : object.x` is guarded by a negation the static walk does not read;
    no config makes it fail, so nothing is announced."""
    assert unguarded('!has(object.x) ? "" : object.x') == ["object.x"]
    assert analyse('!has(object.x) ? "" : object.x', limits_for().kubernetes_version).unguarded_reads == ()
