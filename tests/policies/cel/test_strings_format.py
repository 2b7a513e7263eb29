"""cel-go's `string.format`, rendered on the cost walk's values.

Expectations are rows of cel-go `ext/formatting_test.go` TestStringFormat (@ 64e0a8ce, index id
1967724304) in the en_US locale, with the arguments written as the walk holds them. Rows with
timestamps or durations are where the renderer declines (None) and cel-cpp renders.
"""

from __future__ import annotations

import math

import pytest
from dra_affinity.policies.cel.common.jsonvalue import Duration, Opaque, OptionalValue, TypeValue, UInt
from dra_affinity.policies.cel.k8s_library.strings_format import FormatProblem, parse_format, render


@pytest.mark.parametrize(("text", "args", "output"), [
    ("no substitution", [], "no substitution"),
    ("%% and also %%", [], "% and also %"),
    ("%%%s%%", ["text"], "%text%"),
    ("%d %d %d, %s %s %s", [1, 2, 3, "A", "B", "C"], "1 2 3, A B C"),
    ("%.3f", [1.2345], "1.234"),
    ("this is -5 in binary: %b", [-5], "this is -5 in binary: -101"),
    ("unsigned 64 in binary: %b", [UInt(64)], "unsigned 64 in binary: 1000000"),
    ("bit set from bool: %b", [True], "bit set from bool: 1"),
    ("%o", [-11], "-13"),
    ("this is an unsigned octal: %o", [UInt(65535)], "this is an unsigned octal: 177777"),
    ("%x is -30 in hexadecimal", [-30], "-1e is -30 in hexadecimal"),
    ("%X is 6000 in hexadecimal", [UInt(6000)], "1770 is 6000 in hexadecimal"),
    ("%X", ["Hello world!"], "48656C6C6F20776F726C6421"),
    ("%x", [b"\x00\x00byte string\x00"], "00006279746520737472696e6700"),
    ("%.6e", [1052.032911275], "1.052033\u00d710\u2070\u00b3"),
    ("%f", [2.71828], "2.718280"),
    ("%e", [2.71828], "2.718280\u00d710\u2070\u2070"),
    ("%s", [2.71], "2.71"),
    ("%s", [[2.71]], "[2.710000]"),
    ("%s", [0.000000002], "2e-09"),
    ("%s", [[0.000000002]], "[0.000000]"),
    ("%f", ["NaN"], "NaN"),
    ("%f", ["Infinity"], "∞"),
    ("%f", ["-Infinity"], "-∞"),
    ("%s", [math.nan], "NaN"),
    ("%s", [math.inf], "+Inf"),
    ("%s", [-math.inf], "-Inf"),
    ("%s", [[math.nan, math.inf, -math.inf]], '["NaN", "+Inf", "-Inf"]'),
    ("%d", [UInt(64)], "64"),
    ("null: %s", [None], "null: null"),
    ("%s", [999999999999], "999999999999"),
    ("some bytes: %s", [b"xyz"], "some bytes: xyz"),
    ("type is %s", [TypeValue("string")], "type is string"),
    ("true bool: %s, false bool: %s", [True, False], "true bool: true, false bool: false"),
    ("dynIntStr: %s dynDoubleStr: %s", [32, 56.8], "dynIntStr: 32 dynDoubleStr: 56.8"),
    ("dynamic hex int: %x (unsigned)", [UInt(500)], "dynamic hex int: 1f4 (unsigned)"),
    ("dynamic double: %.3f", [4.5], "dynamic double: 4.500"),
    ("NaN: %f, infinity: %f", [math.nan, math.inf], "NaN: NaN, infinity: ∞"),
    ("dyntype list: %s", [[6, 4.2, "a string"]], 'dyntype list: [6, 4.200000, "a string"]'),
    ("msg.single_double: %.1f", [1.0], "msg.single_double: 1.0"),
    ("%s", [{"key1": b"xyz", "key5": None, "key4": True, "key3": 2.71828}],
     '{"key1":b"xyz", "key3":2.718280, "key4":true, "key5":null}'),
])
def test_rows_of_cel_go(text: str, args: list[object], output: str) -> None:
    assert render(text, args) == output


@pytest.mark.parametrize(("text", "args", "error"), [
    ("%a", [1], 'could not parse formatting clause: unrecognized formatting clause "a"'),
    ("%d %d %d", [0, 1], "index 2 out of range"),
    ("string is %b", ["abc"],
     "error during formatting: only integers and bools can be formatted as binary, "
     "was given string"),
    ("octal: %o", ["a string"],
     "error during formatting: octal clause can only be used on integers, was given string"),
    ("double is %x", [0.5],
     "error during formatting: only integers, byte buffers, and strings can be formatted as "
     "hex, was given double"),
    ("double is %E", [0.5], 'could not parse formatting clause: unrecognized formatting clause "E"'),
    ("null: %d", [None],
     "error during formatting: decimal clause can only be used on integers, was given null_type"),
    ("null: %e", [None],
     "error during formatting: scientific clause can only be used on doubles, was given "
     "null_type"),
    ("null: %f", [None],
     "error during formatting: fixed-point clause can only be used on doubles, was given "
     "null_type"),
    ("%s", [Opaque("net.IP", "1.2.3.4")],
     "error during formatting: string clause can only be used on strings, bools, bytes, ints, "
     "doubles, maps, lists, types, durations, and timestamps, was given net.IP"),
    ("%s", [[OptionalValue(1, True)]], "error during formatting: no formatting function for "
                                        "optional_type"),
    # At run time the missing argument is found before the end of the string.
    ("filler %", [], "index 0 out of range"),
])
def test_errors_of_cel_go(text: str, args: list[object], error: str) -> None:
    assert render(text, args) == FormatProblem(error)


def test_the_en_us_printer_groups_thousands_in_fixed_point() -> None:
    # golang.org/x/text/message with language.English: Sprintf("%f", 1_000_000.23456) prints
    # "1,000,000.234560" (the package's own documentation); cel-go's %f goes through it.
    assert render("%f", [1_000_000.23456]) == "1,000,000.234560"
    assert render("%.2f", [-1234.5]) == "-1,234.50"


def test_scientific_precision_is_a_width_as_in_cel_go() -> None:
    # cel-go builds the verb as `%<precision>e`, so `%.20e` pads to 20 and keeps six decimals.
    assert render("%.20e", [2.71828]) == "       2.718280×10\u2070\u2070"
    assert render("%e", [-0.00123]) == "-1.230000×10\u207b\u2070\u00b3"


def test_time_values_are_left_to_cel_cpp() -> None:
    assert render("%s", [Duration("7200s")]) is None
    assert render("%s", [{"k": [Duration("1s")]}]) is None


def test_bytes_that_are_not_utf8_fail_as_cel_go_converts_them() -> None:
    failure = render("%s", [b"\xff"])
    assert isinstance(failure, FormatProblem)
    assert failure.message == ("error during formatting: invalid UTF-8 in bytes, cannot convert "
                               "to string")


def test_checking_and_rendering_share_the_parser() -> None:
    seen: list[tuple[int, str, int | None]] = []

    def check(index: int, clause: str, precision: int | None) -> str:
        seen.append((index, clause, precision))
        return ""

    assert parse_format("%.2f and %s %%", 2, check, runtime=False) == (" and  %", 2)
    assert seen == [(0, "f", 2), (1, "s", None)]
    # The validator's argument list never fails, so the end of the string is reported first.
    assert parse_format("filler %", 0, check, runtime=False) == FormatProblem(
        "unexpected end of string")
