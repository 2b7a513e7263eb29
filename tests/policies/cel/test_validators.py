"""Kubernetes' compile-time checks cel-cpp lacks: homogeneous literals, literal arguments.

Vectors marked "cel-go" are cel-go's own `cel/validator_test.go` cases.
"""

from __future__ import annotations

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.check.env import CelEnvironment, EnvKey, EnvMode, build_environment, get_env
from dra_affinity.policies.cel.check.validators import (
    MAX_UNIX_TIME,
    MIN_UNIX_TIME,
    format_go_type,
    go_regexp_error,
    is_equivalent_type,
    parse_go_duration,
    parse_go_rfc3339,
)
from dra_affinity.policies.cel.common.errors import ErrorStage
from dra_affinity.policies.cel.common.types import (
    BOOL,
    DURATION,
    DYN,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    list_of,
    map_of,
    optional_of,
)
from dra_affinity.policies.cel.compile import compile_in

NEW_1_37 = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)


@pytest.fixture(scope="module")
def x_env() -> CelEnvironment:
    """cel-go's validator tests declare `x: string`; our variables are a parameter."""
    return build_environment((1, 37), EnvMode.NEW_EXPRESSIONS, {"x": cel.Type.STRING})


@pytest.fixture(scope="module")
def name_env() -> CelEnvironment:
    return build_environment((1, 37), EnvMode.NEW_EXPRESSIONS, {"name": cel.Type.STRING})


def errors_of(env: CelEnvironment, expression: str) -> str:
    result = compile_in(env, expression)
    assert not result.ok
    return result.error_text


def accepted(env: CelEnvironment, expression: str) -> bool:
    result = compile_in(env, expression)
    return result.ok


# ------------------------------------------------------------------------------------------------
# Homogeneous aggregate literals
# ------------------------------------------------------------------------------------------------

HOMOGENEOUS_ERRORS = [  # cel-go
    ("name in ['hello', 0]",
     "ERROR: <input>:1:19: expected type 'string' but found 'int'\n"
     " | name in ['hello', 0]\n"
     " | ..................^"),
    ("{'hello':'world', 1:'!'}",
     "ERROR: <input>:1:19: expected type 'string' but found 'int'\n"
     " | {'hello':'world', 1:'!'}\n"
     " | ..................^"),
    ("name in {'hello':'world', 'goodbye':true}",
     "ERROR: <input>:1:37: expected type 'string' but found 'bool'\n"
     " | name in {'hello':'world', 'goodbye':true}\n"
     " | ....................................^"),
]


@pytest.mark.parametrize(("expression", "expected"), HOMOGENEOUS_ERRORS)
def test_mixed_literals_fail_like_cel_go(name_env: CelEnvironment, expression: str,
                                         expected: str) -> None:
    assert errors_of(name_env, expression) == expected


HOMOGENEOUS_OK = [  # cel-go, plus format exemption and nested empty literals
    "name in ['hello', 'world']",
    "name in ['hello', ?optional.ofNonZeroValue('')]",
    "name in [?optional.ofNonZeroValue(''), 'hello', ?optional.of('')]",
    "name in {'hello': false, 'world': true}",
    "{'hello': false, ?'world': optional.ofNonZeroValue(true)}",
    "{?'hello': optional.ofNonZeroValue(false), 'world': true}",
    '"%s is %d".format([name, 1])',
    '"%s".format([[1, "a"]])',
    "[[], [1]].size() > 0",
    "[{}, {'a': 1}].size() > 0",
    "[name, name + 'x']",
]


@pytest.mark.parametrize("expression", HOMOGENEOUS_OK)
def test_homogeneous_literals_pass(name_env: CelEnvironment, expression: str) -> None:
    assert accepted(name_env, expression)


@pytest.mark.parametrize(("expression", "message"), [
    ('[1, dyn("a")]', "expected type 'int' but found 'dyn'"),
    ('["a", object.x]', "expected type 'string' but found 'dyn'"),
    ("[1, 1u]", "expected type 'int' but found 'uint'"),
    ("[1, 2.0]", "expected type 'int' but found 'double'"),
    ("[1, null]", "expected type 'int' but found 'null_type'"),
    ("[[1], ['a']]", "expected type 'list(int)' but found 'list(string)'"),
    ("[{'a': 1}, {'a': 'b'}]", "expected type 'map(string, int)' but found 'map(string, string)'"),
    ("[timestamp(1), duration('1s')]",
     "expected type 'google.protobuf.Timestamp' but found 'google.protobuf.Duration'"),
])
def test_dyn_and_nested_elements_are_not_equivalent(expression: str, message: str) -> None:
    result = compile_in(get_env(NEW_1_37), expression)
    assert not result.ok
    assert result.errors[0].message == message
    assert result.errors[0].stage is ErrorStage.VALIDATE


def test_lists_stop_at_first_mismatch_maps_report_each() -> None:
    env = get_env(NEW_1_37)
    assert len(compile_in(env, "[1, 'a', 2.0]").errors) == 1
    result = compile_in(env, "{'a': 1, 2: 'x', 'c': true}")
    assert [e.message for e in result.errors] == [
        "expected type 'string' but found 'int'",
        "expected type 'int' but found 'string'",
        "expected type 'int' but found 'bool'",
    ]


def test_homogeneous_check_applies_at_every_version() -> None:
    for version in ((1, 24), (1, 30), (1, 37)):
        for mode in EnvMode:
            result = compile_in(get_env(EnvKey(version, mode)), '[1, "a"]')
            assert result.errors[0].message == "expected type 'int' but found 'string'"


# ------------------------------------------------------------------------------------------------
# duration / timestamp / regex literals
# ------------------------------------------------------------------------------------------------


def test_extended_validations_report_like_cel_go(x_env: CelEnvironment) -> None:
    # cel-go TestExtendedValidations, byte for byte (tabs shown as spaces in snippets).
    expression = ("x in ['hello', 0] \n"
                  "\t\t\t&& duration(x) < duration('1d') \n"
                  "\t\t\t&& timestamp(x) != timestamp('1000-01-00T00:00:00Z')\n"
                  "\t\t\t&& x.matches('x++')")
    assert errors_of(x_env, expression) == (
        "ERROR: <input>:1:16: expected type 'string' but found 'int'\n"
        " | x in ['hello', 0] \n"
        " | ...............^\n"
        "ERROR: <input>:2:30: invalid duration argument\n"
        " |    && duration(x) < duration('1d') \n"
        " | .............................^\n"
        "ERROR: <input>:3:33: invalid timestamp argument\n"
        " |    && timestamp(x) != timestamp('1000-01-00T00:00:00Z')\n"
        " | ................................^\n"
        "ERROR: <input>:4:17: invalid matches argument\n"
        " |    && x.matches('x++')\n"
        " | ................^")


@pytest.mark.parametrize(("expression", "expected"), [  # cel-go
    ("duration('1')",
     "ERROR: <input>:1:10: invalid duration argument\n | duration('1')\n | .........^"),
    ("duration('1d')",
     "ERROR: <input>:1:10: invalid duration argument\n | duration('1d')\n | .........^"),
    ("duration('1us')\n < duration('1nns')",
     "ERROR: <input>:2:13: invalid duration argument\n |  < duration('1nns')\n"
     " | ............^"),
    ("timestamp('1000-00-00T00:00:00Z')",
     "ERROR: <input>:1:11: invalid timestamp argument\n"
     " | timestamp('1000-00-00T00:00:00Z')\n | ..........^"),
    ("timestamp('1000-01-01T00:00:00ZZ')",
     "ERROR: <input>:1:11: invalid timestamp argument\n"
     " | timestamp('1000-01-01T00:00:00ZZ')\n | ..........^"),
    ("timestamp(-62135596801)",
     "ERROR: <input>:1:11: invalid timestamp argument\n | timestamp(-62135596801)\n"
     " | ..........^"),
    ("'hello'.matches('x++')",
     "ERROR: <input>:1:17: invalid matches argument\n | 'hello'.matches('x++')\n"
     " | ................^"),
    ("'hello'.matches('(?<name%>el*)')",
     "ERROR: <input>:1:17: invalid matches argument\n"
     " | 'hello'.matches('(?<name%>el*)')\n | ................^"),
    ("'hello'.matches('??el*')",
     "ERROR: <input>:1:17: invalid matches argument\n | 'hello'.matches('??el*')\n"
     " | ................^"),
])
def test_literal_arguments_fail_like_cel_go(x_env: CelEnvironment, expression: str,
                                            expected: str) -> None:
    assert errors_of(x_env, expression) == expected


@pytest.mark.parametrize("expression", [  # cel-go, plus a few more valid spellings
    "duration('2h3m4s5us')", "duration(x)", "duration('-1.5h')", "duration('0')",
    "duration('1µs') < duration('1μs')",
    "timestamp('1000-01-01T00:00:00Z')", "timestamp(-6213559680)", "timestamp(x)",
    "timestamp(253402300799)", "timestamp('2024-02-29T23:59:59.999999999+01:00')",
    "'hello'.matches('el*')", "'hello'.matches(x)", "'hello'.matches('(?i)^h[a-z]+$')",
])
def test_valid_literal_arguments_compile(x_env: CelEnvironment, expression: str) -> None:
    assert accepted(x_env, expression)


def test_literal_validators_start_at_1_29() -> None:
    # duration('1d') fails when cel-go builds the program (OptOptimize folds the constant
    # conversion) before 1.29, and is a validator error from 1.29 (compat 1.29).
    before = compile_in(get_env(EnvKey((1, 29), EnvMode.NEW_EXPRESSIONS)), "duration('1d')")
    assert [(e.stage, e.message) for e in before.errors] == [
        (ErrorStage.PROGRAM, "type conversion error from 'string' to 'google.protobuf.Duration'")]
    for key in (EnvKey((1, 30), EnvMode.NEW_EXPRESSIONS), EnvKey((1, 29),
                                                                   EnvMode.STORED_EXPRESSIONS)):
        after = compile_in(get_env(key), "duration('1d')")
        assert [(e.stage, e.message) for e in after.errors] == [
            (ErrorStage.VALIDATE, "invalid duration argument")]


def test_global_matches_checks_its_first_argument_like_cel_go() -> None:
    # cel-go's validator inspects argument 0, i.e. the *string* of the global form; the
    # pattern is then compiled when the program is built.
    env = get_env(NEW_1_37)
    first = compile_in(env, "matches('(', 'a')")
    assert first.errors[0].message == "invalid matches argument"
    second = compile_in(env, "matches('a', '(')")
    assert second.stage is ErrorStage.PROGRAM
    assert second.error_text == "error parsing regexp: missing closing ): `(`"


@pytest.mark.parametrize(("text", "nanos"), [
    ("0", 0), ("+0", 0), ("-0", 0), ("1ns", 1), ("1.5h", 5_400_000_000_000),
    ("2h3m4s5us", 7_384_000_005_000), ("1.s", 1_000_000_000), (".5s", 500_000_000),
    ("-1m", -60_000_000_000), ("1µs", 1000), ("1μs", 1000), ("1h1m1s1ms1us1ns", 3_661_001_001_001),
    ("9223372036854775807ns", 9223372036854775807),
    ("-9223372036854775808ns", -9223372036854775808),
])
def test_go_duration_parser_accepts(text: str, nanos: int) -> None:
    assert parse_go_duration(text) == nanos


@pytest.mark.parametrize("text", [
    "", "1", "1d", "1nns", "1h1", ".s", "s", "1 s", "- 1s", "1e3s", "9223372036854775808ns",
    "2562048h", "++1s", "1.5.5s",
])
def test_go_duration_parser_rejects(text: str) -> None:
    assert isinstance(parse_go_duration(text), str)


@pytest.mark.parametrize(("text", "unix"), [
    ("1970-01-01T00:00:00Z", 0),
    ("1970-01-01T01:00:00+01:00", 0),
    ("2020-01-01T00:00:00.123456789123Z", 1577836800),
    ("2020-01-01T00:00:00,5Z", 1577836800),  # Go's general parser accepts a comma
    ("2020-01-01T1:00:00Z", 1577840400),  # ... and a one-digit hour
    ("0001-01-01T00:00:00Z", MIN_UNIX_TIME),
    ("9999-12-31T23:59:59Z", MAX_UNIX_TIME),
    ("0000-12-31T23:00:00-01:00", MIN_UNIX_TIME),
    ("2024-02-29T00:00:00Z", 1709164800),
])
def test_go_rfc3339_parser_accepts(text: str, unix: int) -> None:
    assert parse_go_rfc3339(text) == unix


@pytest.mark.parametrize("text", [
    "2020-01-01t00:00:00Z", "2020-01-01T00:00:00z", "2020-01-01T00:00:60Z",
    "2020-02-30T00:00:00Z", "2023-02-29T00:00:00Z", "2020-13-01T00:00:00Z",
    "2020-01-01T24:00:00Z", "2020-01-01T00:00:00", "2020-01-01 00:00:00Z",
    "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "2020-01-01T00:00:00+25:00",
    "20-01-01T00:00:00Z", "２０２０-01-01T00:00:00Z",
])
def test_go_rfc3339_parser_rejects(text: str) -> None:
    assert parse_go_rfc3339(text) is None


def test_regex_check_uses_re2_and_go_wording() -> None:
    check = get_env(NEW_1_37).regex_error
    assert check("^[a-z]+(-[a-z0-9]+)*$") is None
    assert check("(?P<n>a)|(?<m>b)") is None
    assert check("(") == "error parsing regexp: missing closing ): `(`"
    assert check("x++") == "error parsing regexp: invalid nested repetition operator: `++`"
    assert check("[z-a]") == "error parsing regexp: invalid character class range: `z-a`"
    assert check("(?=a)") == "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    assert check("a{1001}") == "error parsing regexp: invalid repeat count: `{1001}`"
    # RE2 (C++) accepts \C, Go does not.
    assert check("a\\Cb") == "error parsing regexp: invalid escape sequence: `\\C`"
    assert check("a\\\\Cb") is None


def test_go_regexp_error_mapping() -> None:
    assert go_regexp_error("a)", "invalid regular expression: unexpected ): a)") == (
        "error parsing regexp: unexpected ): `a)`")
    assert go_regexp_error("a\\", "trailing \\") == (
        "error parsing regexp: trailing backslash at end of expression: ``")
    assert go_regexp_error("abc", None) is None


# ------------------------------------------------------------------------------------------------
# Types as cel-go prints them
# ------------------------------------------------------------------------------------------------


def test_format_go_type() -> None:
    assert format_go_type(list_of(INT)) == "list(int)"
    assert format_go_type(map_of(STRING, DYN)) == "map(string, dyn)"
    assert format_go_type(optional_of(BOOL)) == "optional_type(bool)"
    assert format_go_type(NULL) == "null_type"
    assert format_go_type(TIMESTAMP) == "google.protobuf.Timestamp"
    assert format_go_type(DURATION) == "google.protobuf.Duration"


def test_equivalence_is_strict() -> None:
    assert is_equivalent_type(list_of(INT), list_of(INT))
    assert not is_equivalent_type(INT, DYN)
    assert not is_equivalent_type(list_of(INT), list_of(DYN))
    assert not is_equivalent_type(map_of(STRING, INT), map_of(STRING, STRING))
