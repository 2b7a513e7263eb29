"""The cost walk's own `==`/`!=` on scalars agrees with the program, type by type."""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.eval.runtime import evaluate

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
