"""Compile errors and syntax where cel-cpp alone would disagree with cel-go.

Upstream sources: cel-go `ext/comprehensions.go` (two-variable macros, `exists_one` alias,
`extractIterVars`), `parser/parser_test.go` (macro error positions), `ext/formatting.go`
(`stringFormatValidator`), `checker` (`found no matching overload`), `interpreter/decorators.go`
(`OptOptimize` folds constant type conversions while building the program) and
`common/types` (conversion error texts).
"""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.common.errors import ErrorStage
from dra_affinity.policies.cel.compile import alias_two_variable_exists_one, compile_uncached
from dra_affinity.policies.cel.eval.runtime_conversions import conversion_verdict

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)


def errors(expr: str, key: EnvKey = KEY) -> list[tuple[int, int, str]]:
    result = compile_uncached(expr, key)
    assert not result.ok
    return [(e.line, e.column, e.message) for e in result.errors]


# --- exists_one with two variables ---------------------------------------------------------------


@pytest.mark.parametrize(("text", "aliased"), [
    ("l.exists_one(k, v, v)", "l. existsOne(k, v, v)"),
    ("l.exists_one (k, v, f(v, 1))", "l. existsOne (k, v, f(v, 1))"),
    ("l.exists_one(x, x > 1)", "l.exists_one(x, x > 1)"),  # the standard one-variable macro
    ("'a.exists_one(k, v, v)'", "'a.exists_one(k, v, v)'"),  # inside a string
    ("l.exists_one(k, v, ',,')", "l. existsOne(k, v, ',,')"),
    ("exists_one(a, b, c)", "exists_one(a, b, c)"),  # not a receiver call
    ("l.exists_one(k, v, v) // exists_one(a, b, c)\n",
     "l. existsOne(k, v, v) // exists_one(a, b, c)\n"),
])
def test_exists_one_alias_keeps_every_offset(text: str, aliased: str) -> None:
    assert alias_two_variable_exists_one(text) == aliased
    assert len(aliased) == len(text)


def test_two_variable_exists_one_compiles_from_1_32() -> None:
    expr = "{'a': 1, 'b': 2}.exists_one(k, v, v == 2)"
    assert compile_uncached(expr, KEY).ok
    assert compile_uncached(expr, EnvKey((1, 32), EnvMode.STORED_EXPRESSIONS)).ok
    # Without ext.TwoVarComprehensions (compatibility version 1.31) cel-go has no such macro.
    assert ("undeclared reference to 'exists_one' (in container '')"
            in [m for _, _, m in errors(expr, EnvKey((1, 32), EnvMode.NEW_EXPRESSIONS))])


def test_errors_inside_the_aliased_macro_point_at_the_source() -> None:
    assert errors("[1].exists_one(i.j, k, true)") == [(1, 17, "argument must be a simple name")]


# --- macro variable errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "error"), [
    # cel-go parser_test: `[1, 2].all(__result__, true)` -> 1:12.
    ("[1, 2].all(__result__, true)",
     (1, 12, "iteration variable overwrites accumulator variable")),
    ("[1].map(__result__,\n  1)", (1, 9, "iteration variable overwrites accumulator variable")),
    ("[].all(i, i, i < i)", (1, 11, "duplicate variable name: i")),
    ("[].all(__result__, i, true)", (1, 8, "iteration variable overwrites accumulator variable")),
    ("[].all(j, __result__, true)", (1, 11, "iteration variable overwrites accumulator variable")),
    ("[].all(i.j, k, true)", (1, 9, "argument must be a simple name")),
    ("{}.transformMap(j, i.k, j)", (1, 21, "argument must be a simple name")),
])
def test_macro_variable_errors_read_and_point_as_in_cel_go(
        expr: str, error: tuple[int, int, str]) -> None:
    assert errors(expr) == [error]


# --- calls with an arity no overload has ---------------------------------------------------------


@pytest.mark.parametrize(("expr", "message"), [
    ("'42'.indexOf('4', 0, 1) == 0",
     "found no matching overload for 'indexOf' applied to 'string.(string, int, int)'"),
    ("size(1, 2)", "found no matching overload for 'size' applied to '(int, int)'"),
    ("ip('a', 'b')", "found no matching overload for 'ip' applied to '(string, string)'"),
    ("'a'.ip()", "found no matching overload for 'ip' applied to 'string.()'"),
    ("quantity('1').add(1, 2)",
     "found no matching overload for 'add' applied to 'kubernetes.Quantity.(int, int)'"),
    ("[1].map(x, x.substring(1, 2, 3))",
     "found no matching overload for 'substring' applied to 'int.(int, int, int)'"),
])
def test_wrong_arity_reads_no_matching_overload(expr: str, message: str) -> None:
    assert [m for _, _, m in errors(expr)] == [message]


def _counting_probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from dra_affinity.policies.cel import compile as compile_module

    built: list[str] = []
    real = compile_module._probe_environment

    def counting(env: object, name: str, member: bool, arity: int) -> object:
        built.append(name)
        return real(env, name, member, arity)  # type: ignore[arg-type]

    monkeypatch.setattr(compile_module, "_probe_environment", counting)
    return built


def test_wrong_arity_probes_are_capped_per_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each probe builds a checking environment (~50 ms): 20 wrong-arity calls of distinct
    functions in one 500-byte expression cost a second at admission. At most
    `MAX_ARITY_PROBES` probes are made; the messages are cel-cpp's, as they were uncapped (with
    other errors in it the twin environment cannot check the expression either)."""
    from dra_affinity.policies.cel.compile import MAX_ARITY_PROBES

    built = _counting_probes(monkeypatch)
    names = ["indexOf", "charAt", "lastIndexOf", "substring", "split", "trim", "lowerAscii",
             "upperAscii", "replace", "join"]
    messages = [m for _, _, m in errors(" + ".join(f"'q'.{n}(1, 2, 3, 4)" for n in names))]
    assert len(built) < MAX_ARITY_PROBES
    assert messages[:3] == [f"undeclared reference to '{n}' (in container '')" for n in names[:3]]


def test_one_probe_serves_every_call_of_a_function(monkeypatch: pytest.MonkeyPatch) -> None:
    built = _counting_probes(monkeypatch)
    messages = [m for _, _, m in errors(" + ".join(["'q'.indexOf()"] * 12))]
    assert built == ["indexOf"]
    assert messages == ["found no matching overload for 'indexOf' applied to 'string.()'"] * 12


def test_unknown_functions_stay_undeclared() -> None:
    assert [m for _, _, m in errors("object.spec.foo(1)")] == [
        "undeclared reference to 'foo' (in container '')"]


def test_arity_error_keeps_the_call_position() -> None:
    assert errors("'42'.indexOf('4', 0, 1)")[0][:2] == (1, 13)


# --- string.format validation ------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "error"), [
    ('"%s %s".format(["abc"])', (1, 15, "index 1 out of range")),
    ('"%s %s".format(["abc", "def", "ghi"])',
     (1, 15, "too many arguments supplied to string.format (expected 2, got 3)")),
    ('"int is %d".format([1, 5.2])', None),  # too many, but %d sees the int first
    ('"%s and %d".format(["a", 5.2])',
     (1, 26, "error during formatting: decimal clause can only be used on integers, "
             "was given double")),
    ('"%s".format([[1, [optional.of(1)]]])',
     (1, 30, "error during formatting: string clause can only be used on strings, bools, "
             "bytes, ints, doubles, maps, lists, types, durations, and timestamps, "
             "was given optional_type")),
    ('"%é".format([1])',
     (1, 12, 'could not parse formatting clause: unrecognized formatting clause "Ã"')),
    ('"%.f".format([1.0])',
     (1, 13, "could not parse formatting clause: error while parsing precision: error while "
             'converting precision to integer: strconv.Atoi: parsing "": invalid syntax')),
])
def test_constant_format_calls_are_validated(expr: str,
                                             error: tuple[int, int, str] | None) -> None:
    result = compile_uncached(expr, KEY)
    if error is None:
        assert [e.message for e in result.errors] == [
            "too many arguments supplied to string.format (expected 1, got 2)"]
        return
    assert [(e.line, e.column, e.message, e.stage) for e in result.errors] == [
        (*error, ErrorStage.VALIDATE)]


@pytest.mark.parametrize("expr", [
    '"%d".format([object.x])',  # dyn passes any clause
    'object.kind.format([1])',  # not a literal format string
    '"%s %s".format(dyn(["a"]))',  # not a list literal
    '"%.3f and %e".format([1.5, "NaN"])',  # strings are allowed for NaN/Infinity
])
def test_format_calls_the_validator_leaves_alone(expr: str) -> None:
    assert compile_uncached(expr, KEY).ok


# --- constant conversions folded when the program is built ---------------------------------------


@pytest.mark.parametrize(("expr", "message", "column"), [
    ('int("x")', "type conversion error from 'string' to 'int'", 4),
    ('true ? 1 : int("x")', "type conversion error from 'string' to 'int'", 15),
    ('[1].map(x, int(" 5"))', "type conversion error from 'string' to 'int'", 15),
    ("uint(-1)", "unsigned integer overflow", 5),
    ("int(1e100)", "integer overflow", 4),
    ('int(string(1.5))', "type conversion error from 'string' to 'int'", 4),
    ('double("1e400")', "type conversion error from 'string' to 'double'", 7),
    ('string(b"\\xff")', "invalid UTF-8 in bytes, cannot convert to string", 7),
    ("string(int(dyn(true)))", "no such overload: int(bool)", 11),  # cel-go has no int(bool)
    ("int(dyn(false)) + 1", "no such overload: int(bool)", 4),
])
def test_failing_constant_conversions_fail_the_program(expr: str, message: str,
                                                       column: int) -> None:
    result = compile_uncached(expr, KEY)
    assert [(e.stage, e.message, e.line, e.column) for e in result.errors] == [
        (ErrorStage.PROGRAM, message, 1, column)]


@pytest.mark.parametrize("expr", [
    'duration("1µs") < duration("2us")',  # Go accepts µs; cel-cpp does not
    'double("0x1p4") == 16.0',
    'bool("True")',
    '{"a": 1, "a": 2}.size() == 1 || true',  # a failing literal folds to an error value
    "false ? int(object.x) : 1",
])
def test_conversions_cel_go_accepts_compile(expr: str) -> None:
    assert compile_uncached(expr, KEY).ok


@pytest.mark.parametrize(("function", "value", "verdict"), [
    ("int", "+5", None),
    ("int", "9223372036854775808", "type conversion error from 'string' to 'int'"),
    ("uint", "-0", "type conversion error from 'string' to 'uint'"),
    ("double", "inf", None),
    ("double", "1_000", "type conversion error from 'string' to 'double'"),
    ("bool", "yes", "type conversion error from 'string' to 'bool'"),
    ("duration", "1d", "type conversion error from 'string' to 'google.protobuf.Duration'"),
    ("timestamp", "2024-01-01T00:00:00z",
     "type conversion error from 'string' to 'google.protobuf.Timestamp'"),
    ("int", 9.2e18, None),
    ("int", 9.3e18, "integer overflow"),
    ("uint", -0.5, "unsigned integer overflow"),
    ("timestamp", 253402300800, "timestamp overflow"),
    ("string", 1, False),  # not decided here: cel-cpp's verdict stands
])
def test_conversion_verdicts_follow_go(function: str, value: object,
                                       verdict: str | bool | None) -> None:
    assert conversion_verdict(function, value) == verdict
