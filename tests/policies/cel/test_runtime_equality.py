"""The cost walk's own `==`/`!=` on scalars agrees with the program, type by type."""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.common.jsonvalue import ErrorValue, Opaque, OptionalValue
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.eval.runtime import evaluate
from dra_affinity.policies.cel.eval.runtime_library_values import walk_equal

KEY = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS)


@pytest.mark.parametrize(
    ("expression", "obj", "expected"),
    [
        ('object.a == "x"', {"a": "x"}, True),
        ('object.a != "x"', {"a": "y"}, True),
        ("object.a == 1", {"a": 1}, True),
        ("object.a == 1.0", {"a": 1}, True),  # mixed int/double: heterogeneous equality
        ("object.a == 1", {"a": True}, False),  # bool is not an int in CEL
        ("object.a == object.b", {"a": float("nan"), "b": float("nan")}, False),
        ('object.a == "1"', {"a": 1}, False),
        ("object.a == null", {"a": None}, True),
        ("object.a == [1]", {"a": [1]}, True),
    ],
)
def test_walk_and_program_agree(expression: str, obj: dict, expected: bool) -> None:
    compiled = compile_expression(expression, KEY)
    assert compiled.ok, compiled.error_text
    result = evaluate(compiled, {"object": obj})
    assert result.error is None
    assert result.value is expected
    assert result.runtime_cost >= 1


SEMVER = Opaque("kubernetes.Semver", ["semver", 1, 0, 0])
UNREAD = Opaque("unknown")
NO_SUCH_OVERLOAD = ErrorValue("no such overload")


@pytest.mark.parametrize(
    ("a", "b", "as_bool", "as_go"),
    [
        (1, 1.0, True, True),
        (True, 1, False, False),
        (None, None, True, True),
        (None, SEMVER, False, False),
        (SEMVER, None, False, False),  # `types.Equal`: null equals only null
        (SEMVER, 1, False, NO_SUCH_OVERLOAD),  # `Semver.Equal` takes only a Semver
        (1, SEMVER, False, False),  # the left operand's `Equal` decides
        ([SEMVER], [1], False, True),  # a failing element comparison is skipped
        ({"a": SEMVER, "b": 1}, {"a": 1, "b": 2}, False, False),
        ({"a": SEMVER}, {"b": SEMVER}, False, False),
        (OptionalValue(SEMVER, True), OptionalValue(None, True), False, NO_SUCH_OVERLOAD),
        (OptionalValue(None, False), OptionalValue(None, False), True, True),
        (Opaque("net.IP", "1.2.3.4"), Opaque("net.IP", "1.2.3.4"), True, True),
        (SEMVER, UNREAD, None, None),
        (1, UNREAD, False, None),
        ([1], UNREAD, False, False),
    ],
)
def test_walk_equal_with_and_without_cel_gos_errors(a: object, b: object, as_bool: object,
                                                    as_go: object) -> None:
    """One equality, two modes: a bool (or unknown) for the walk's own natives, cel-go's
    `types.Equal` with the library values' errors for `==` on them."""
    assert walk_equal(a, b) == as_bool
    assert walk_equal(a, b, go_errors=True) == as_go
