"""Suggestions for misspelled names: offered only when the name put in its place compiles there."""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.suggest import suggestions

KEY = EnvKey((1, 36), EnvMode.NEW_EXPRESSIONS)


@pytest.mark.parametrize(("expression", "expected"), [
    ('object.?a.orVlaue("")', ("did you mean 'orValue' instead of 'orVlaue'?",)),
    ("sizee(object.a) > 0", ("did you mean 'size' instead of 'sizee'?",)),
    ('object.a.startswith("x")', ("did you mean 'startsWith' instead of 'startswith'?",)),
    ('quantty("1").isInteger()', ("did you mean 'quantity' instead of 'quantty'?",)),
    ('object.a.orValue("")', ()),  # compiles: nothing to suggest
    ("object.a.zzz()", ()),  # near no known name
    ("objct.a", ("did you mean 'object' instead of 'objct'?",)),
])
def test_suggestions(expression: str, expected: tuple[str, ...]) -> None:
    assert suggestions(compile_expression(expression, KEY)) == expected


def test_a_name_the_release_lacks_is_not_suggested() -> None:
    """`includes` (lists library v1) is not in 1.36's environment for new expressions."""
    compiled = compile_expression("[1].inclodes(1)", KEY)
    assert "includes" not in " ".join(suggestions(compiled))
