"""Kubernetes Semver and Quantity values behind `dyn` answer as cel-go's objects do.

The expected values and texts are cel-go's (`shared/oracle/celoracle`, cel-go with the
Kubernetes libraries): our engine carries a Semver as a tagged list and a Quantity as a string,
so without `runtime_library_values` these would be list and string answers.
"""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.eval.runtime import MISSING_FIELD_HINT, evaluate

OBJECT = {"i": 1, "b": True, "l": [1], "s": "x", "d": 1e30}

CASES = [
    ('dyn(quantity("1")).size() == 1', None, "no such overload: size"),
    ('dyn(semver("1.0.0")) == "1.0.0"', None, "no such overload"),
    ('"1.0.0" == dyn(semver("1.0.0"))', False, None),  # the left operand's Equal decides
    ('dyn(semver("1.0.0")) != 1', True, None),  # != is "Equal did not answer true"
    ('[dyn(semver("1.0.0"))] == [1]', True, None),  # a failing element comparison is skipped
    ('dyn(semver("1.0.0")) == semver("1.0.0")', True, None),
    ('dyn(quantity("8Gi")) == quantity("8589934592")', True, None),
    ('dyn(quantity("8Gi")).startsWith("8")', None, "no such overload"),
    ('string(dyn(quantity("8Gi")))', None, "no such overload: string(kubernetes.Quantity)"),
    ('dyn(semver("1.0.0")).exists(x, true)', None, "got 'cel.Semver', expected iterable type"),
    ("object.i.exists(x, true)", None, "got 'types.Int', expected iterable type"),
    ("object.b.size()", None, "no such overload: size"),
    ("object.l < 1", None, "no such overload: _<_"),
    ('object.i < "a"', None, "no such overload"),
    ('type(dyn(semver("1.0.0")))', "kubernetes.Semver", None),
    ('dyn(semver("1.0.0")) in ["a"]', None,
     "internal error: runtime error: hash of unhashable type cel.Semver"),
    ('dyn(quantity("1")) in ["1"]', False, None),
    ('object.s.isLessThan(semver("1.0.0"))', None,
     "no such overload: isLessThan(string, kubernetes.Semver)"),
    ("1 in object.i", None, "no such overload"),
    ("int(object.b)", None, "no such overload: int(bool)"),
    ('dyn(semver("1.0.0")).isGreaterThan(semver("0.1.0"))', True, None),
    # the engine's own errors, in cel-go's words
    ("int(object.s)", None, "type conversion error from 'string' to 'int'"),
    ("bool(object.s)", None, "type conversion error from 'string' to 'bool'"),
    ("duration(object.s)", None, "type conversion error from 'string' to 'google.protobuf.Duration'"),
    ("int(object.d)", None, "integer overflow"),
    ("object.i.distinct()", None,
     "internal error: interface conversion: types.Int is not traits.Lister: missing method Contains"),
    ("object.i || false", None, "no such overload"),
    ("object.i ? 1 : 2", None, "no such overload"),
    ("object.i && object.missing", None, "no such overload"),  # the first non-bool decides
    ("object.missing && object.i", None, "no such key: missing"),
    ("true && object.missing", None, "no such key: missing"),
]


@pytest.mark.parametrize(("expression", "value", "error"), CASES)
def test_library_values_behind_dyn(expression: str, value: object, error: str | None) -> None:
    compiled = compile_expression(expression, EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS))
    assert compiled.ok, compiled.errors
    result = evaluate(compiled, {"object": OBJECT})
    if error is None:
        assert result.error is None, result.error
        assert result.value == value
    else:
        assert result.error is not None, result.value
        assert result.error.message.removesuffix(MISSING_FIELD_HINT) == error  # Kubernetes' hint
