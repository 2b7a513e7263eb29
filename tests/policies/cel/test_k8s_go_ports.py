"""The Go behaviours the Kubernetes CEL libraries inherit, checked without CEL.

Each expectation is Go's documented (or source-evident) behaviour of the
function upstream calls: net/netip, net/url, apimachinery's resource.Quantity,
regexp (RE2 syntax, on RE2 itself), blang/semver and strconv.Quote.
"""

from __future__ import annotations

import itertools
import time

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.k8s_library._gourl import UrlError, parse, parse_request_uri
from dra_affinity.policies.cel.k8s_library._netip import NetipError, parse_addr, parse_prefix
from dra_affinity.policies.cel.k8s_library._re2 import Re2Error, compile_re2, find, find_all, pattern_error
from dra_affinity.policies.cel.k8s_library._resource import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    QuantityError,
    go_pow10,
    parse_quantity,
)
from dra_affinity.policies.cel.k8s_library._types import go_quote
from dra_affinity.policies.cel.k8s_library.semver import SemverError, normalize_and_parse
from dra_affinity.policies.cel.k8s_library.semver import parse as parse_semver

# ---------------------------------------------------------------------------
# strconv.Quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("abc", '"abc"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("\n\t", '"\\n\\t"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("é☺", '"é☺"'),
        ("\u200b", '"\\u200b"'),
    ],
)
def test_go_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


# ---------------------------------------------------------------------------
# net/netip


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1.2.3.4", "1.2.3.4"),
        ("::", "::"),
        ("::1", "::1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("1:0:0:0:0:0:0:0", "1::"),
        ("::ffff:1.2.3.4", "::ffff:1.2.3.4"),
        ("64:ff9b::1.2.3.4", "64:ff9b::102:304"),
        ("fe80::1%eth0", "fe80::1%eth0"),
    ],
)
def test_netip_canonical_text(text: str, canonical: str) -> None:
    assert str(parse_addr(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'ParseAddr(""): unable to parse IP'),
        ("abc", 'ParseAddr("abc"): unable to parse IP'),
        ("%eth0", 'ParseAddr("%eth0"): missing IPv6 address'),
        ("1.2.3", 'ParseAddr("1.2.3"): IPv4 address too short'),
        ("1.2.3.4.5", 'ParseAddr("1.2.3.4.5"): IPv4 address too long'),
        ("1..2.3", 'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
        ("1.2.3.x", 'ParseAddr("1.2.3.x"): unexpected character (at "x")'),
        ("1.2.3.04", 'ParseAddr("1.2.3.04"): IPv4 field has octet with leading zero'),
        ("12345::1", 'ParseAddr("12345::1"): each group must have 4 or less digits (at "12345::1")'),
        ("1::2::3", 'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
        ("1:2", 'ParseAddr("1:2"): address string too short'),
        ("fe80::1%", 'ParseAddr("fe80::1%"): zone must be a non-empty string'),
        ("1:2:3:4:5:6:7:8:9", 'ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address (at "9")'),
        (
            "1:2:3:4:5:6:7::8",
            'ParseAddr("1:2:3:4:5:6:7::8"): the :: must expand to at least one field of zeros',
        ),
        (
            "1:2::1.2.3.256",
            'ParseAddr("1:2::1.2.3.256"): IPv4 field has value >255',
        ),
        (
            "1.2.3.4:1",
            'ParseAddr("1.2.3.4:1"): unexpected character (at ":1")',
        ),
    ],
)
def test_netip_parse_errors(text: str, message: str) -> None:
    with pytest.raises(NetipError) as err:
        parse_addr(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10.0.0.0", "netip.ParsePrefix(\"10.0.0.0\"): no '/'"),
        ("10.0.0.0/33", 'netip.ParsePrefix("10.0.0.0/33"): prefix length out of range'),
        ("10.0.0.0/08", 'netip.ParsePrefix("10.0.0.0/08"): bad bits after slash: "08"'),
        ("10.0.0.0/+8", 'netip.ParsePrefix("10.0.0.0/+8"): bad bits after slash: "+8"'),
        (
            "fe80::1%eth0/64",
            'netip.ParsePrefix("fe80::1%eth0/64"): IPv6 zones cannot be present in a prefix',
        ),
        ("999/8", 'netip.ParsePrefix("999/8"): ParseAddr("999"): unable to parse IP'),
    ],
)
def test_netip_prefix_errors(text: str, message: str) -> None:
    with pytest.raises(NetipError) as err:
        parse_prefix(text)
    assert str(err.value) == message


def test_netip_prefix_mask_and_contains() -> None:
    prefix = parse_prefix("10.1.2.3/8")
    assert str(prefix) == "10.1.2.3/8"
    assert str(prefix.masked()) == "10.0.0.0/8"
    assert prefix.contains(parse_addr("10.255.0.1"))
    assert not prefix.contains(parse_addr("11.0.0.1"))
    assert not prefix.contains(parse_addr("::ffff:10.0.0.1"))
    assert parse_prefix("0.0.0.0/0").contains(parse_addr("255.255.255.255"))
    assert str(parse_prefix("2001:db8::1/127").masked()) == "2001:db8::/127"


# ---------------------------------------------------------------------------
# resource.Quantity


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0", "0"),
        ("1", "1"),
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1024Mi", "1Gi"),
        ("1000Mi", "1000Mi"),
        ("1000k", "1M"),
        ("0.1m", "100u"),
        ("0.0000000001", "1n"),  # rounded up to the smallest representable amount
        ("-0.0000000001", "-1n"),  # ... away from zero
        ("1e3", "1e3"),
        ("1000e0", "1e3"),
        ("12e6", "12e6"),
        ("+1k", "+1k"),  # canonical inputs are kept verbatim, sign included
        ("1.500k", "1.500k"),
        ("100Ki", "100Ki"),
        ("0.5Ki", "512"),
        ("10000000000000000000Ei", "9223372036854775807"),  # BinarySI caps at int64
    ],
)
def test_quantity_text(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("1", DECIMAL_SI),
        ("1Ki", BINARY_SI),
        ("1e3", DECIMAL_EXPONENT),
        ("0.5Ki", BINARY_SI),  # displayed as "512" but still binary
        ("0.0001Ki", DECIMAL_SI),  # a binary amount below one becomes decimal
    ],
)
def test_quantity_format(text: str, fmt: str) -> None:
    assert parse_quantity(text).fmt == fmt


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "quantities must match the regular expression"),
        ("1,3G", "quantities must match the regular expression"),
        ("Three", "quantities must match the regular expression"),
        ("1.2.3", "quantities must match the regular expression"),
        ("200K", "unable to parse quantity's suffix"),
        ("1e", "unable to parse quantity's suffix"),
        ("1ee3", "unable to parse quantity's suffix"),
    ],
)
def test_quantity_parse_errors(text: str, message: str) -> None:
    with pytest.raises(QuantityError, match=message.replace(".", r"\.")):
        parse_quantity(text)


def test_quantity_arithmetic_keeps_upstream_representation() -> None:
    a = parse_quantity("1.5")  # int64 15e-1
    assert a.add(parse_quantity("0.5")).as_int64() is None  # 20e-1: not an integer upstream
    assert parse_quantity("1").add(parse_quantity("1")).as_int64() == 2
    big = parse_quantity("9223372036854775807")
    total = big.add(parse_quantity("1"))
    assert total.dec and str(total) == "9223372036854775808"
    zero = parse_quantity("0")
    assert str(zero.add(parse_quantity("1Ki"))) == "1Ki"  # a zero takes the other's format
    assert str(parse_quantity("1Ki").sub(parse_quantity("1Ki"))) == "0"


def test_go_pow10_is_table_based() -> None:
    assert go_pow10(0) == 1.0
    assert go_pow10(-1) == 0.1
    assert go_pow10(22) == 1e22
    assert go_pow10(400) == float("inf")
    assert go_pow10(-400) == 0.0


# ---------------------------------------------------------------------------
# regexp (RE2 syntax, Go semantics)


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a(b", "missing closing ): `a(b`"),
        ("a)b", "unexpected ): `a)b`"),
        ("[a", "missing closing ]: `[a`"),
        ("*a", "missing argument to repetition operator: `*`"),
        ("a|*", "missing argument to repetition operator: `*`"),
        ("a**", "invalid nested repetition operator: `**`"),
        ("a*?*", "invalid nested repetition operator: `*?*`"),
        ("a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
        ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
        ("(?!a)", "invalid or unsupported Perl syntax: `(?!`"),
        ("(?P=n)", "invalid or unsupported Perl syntax: `(?P`"),
        ("(?i-)", "invalid or unsupported Perl syntax: `(?i-)`"),
        ("(?<=a)b", "invalid named capture: `(?<=a)b`"),
        ("(?P<a-b>x)", "invalid named capture: `(?P<a-b>`"),
        ("\\1", "invalid escape sequence: `\\1`"),
        ("\\C", "invalid escape sequence: `\\C`"),
        ("\\q", "invalid escape sequence: `\\q`"),
        ("[\\b]", "invalid escape sequence: `\\b`"),
        ("\\x{110000}", "invalid escape sequence: `\\x{110000`"),
        ("a{2,1}", "invalid repeat count: `{2,1}`"),
        ("a{1001}", "invalid repeat count: `{1001}`"),
        ("[z-a]", "invalid character class range: `z-a`"),
        ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
        ("\\pX", "invalid character class range: `\\pX`"),
        ("a\\", "trailing backslash at end of expression: ``"),
    ],
)
def test_re2_syntax_errors(pattern: str, message: str) -> None:
    with pytest.raises(Re2Error) as err:
        compile_re2(pattern)
    assert str(err.value) == f"error parsing regexp: {message}"


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        # RE2 accepts these; Go does not.
        ("a\\Cb", "invalid escape sequence: `\\C`"),
        ("(\\C", "invalid escape sequence: `\\C`"),  # found before the missing )
        ("(?P<é>a)", "invalid named capture: `(?P<é>`"),  # Go: [A-Za-z0-9_] only
        ("(?<név>a)(", "invalid named capture: `(?<név>`"),
        # Both reject lookbehind; Go reads `(?<` as a named capture.
        ("(?<!a)", "invalid named capture: `(?<!a)`"),
        ("x(?<=a)>b", "invalid named capture: `(?<=a)>`"),
        # An earlier error wins over a later Go-only one.
        ("x**\\C", "invalid nested repetition operator: `**`"),
        ("a)\\C", "unexpected ): `a)\\C`"),
        ("(?i\\C)", "invalid or unsupported Perl syntax: `(?i\\`"),
        ("a{1001}(?<=b)", "invalid repeat count: `{1001}`"),
        # The product of nested counts is limited too (Go's repeatIsValid).
        ("(a{1000}){1000}", "invalid repeat count: `{1000}`"),
        ("((((((((((a{2}){2}){2}){2}){2}){2}){2}){2}){2}){2}", "invalid repeat count: `{2}`"),
    ],
)
def test_re2_go_only_rules(pattern: str, message: str) -> None:
    assert pattern_error(pattern) == f"error parsing regexp: {message}"


@pytest.mark.parametrize(
    "pattern",
    [
        "\\Q\\C\\E",  # a literal backslash and C
        "[\\\\C]",
        "(?P<n>a)(?P<n>b)",  # Go allows a name twice
        "(?P<_9>a)",
        "\\p{Greek}+\\P{Han}",  # Unicode scripts
        "\\pL{100}",
    ],
)
def test_re2_accepts_what_go_accepts(pattern: str) -> None:
    assert pattern_error(pattern) is None


def test_re2_size_limit_is_reported_in_go_words() -> None:
    # Beyond RE2's memory budget; Go would accept it (see the module docstring), cel-cpp's
    # `matches` rejects it too.
    assert pattern_error("\\pL{1000}") == "error parsing regexp: expression too large: `\\pL{1000}`"


def test_re2_errors_are_not_printed(capfd: pytest.CaptureFixture[str]) -> None:
    assert pattern_error("(unclosed-for-the-stderr-test") is not None
    assert capfd.readouterr().err == ""


def test_re2_matching_is_linear_on_catastrophic_patterns() -> None:
    regex = compile_re2("(a+)+$")
    start = time.perf_counter()
    assert find(regex, "a" * 30 + "b") == ""
    assert find_all(regex, "a" * 5000 + "b", -1) == []
    assert time.perf_counter() - start < 0.5  # backtracking would take minutes


_CPP_MATCHES = cel.NewEnv(variables={"s": cel.Type.STRING, "p": cel.Type.STRING}).compile(
    "s.matches(p)")


@pytest.mark.parametrize(
    "pattern",
    [
        "^[a-z]+(-[a-z0-9]+)*$", "a|ab", "(?i)K", "\\bab\\b", "\\d+$", "(?s)a.b", "(?m)^b",
        "[[:alpha:]]+", "\\pL\\p{Greek}", "x{2,}", "(?U)a+", "", "\\Qa.b\\E",
        "(", "a)", "[z-a]", "x**", "(?=a)", "\\q", "a{1001}", "(a{1000}){1000}",
        "(?P<é>a)", "a\\Cb",
    ],
)
def test_cel_cpp_matches_agrees_with_re2(pattern: str) -> None:
    """cel-cpp's `matches` runs RE2 too: same verdict on every pattern, same matches.

    The deliberate differences are Go's rules (`\\C`, capture names outside ASCII).
    """
    go_error = pattern_error(pattern)
    go_only = pattern in ("(?P<é>a)", "a\\Cb")
    for text in ("", "ab", "xx-12 ab", "a\nb", "Kk", "αβγ", "a.b", "aaa", "a\xffb"):
        value = _CPP_MATCHES.eval(data={"s": text, "p": pattern})
        if value.type().name() == "ERROR":
            assert go_error is not None and not go_only, (pattern, value.value())
            continue
        assert (go_error is not None) == go_only, pattern
        if go_only:
            continue
        assert value.value() == (compile_re2(pattern).search(text) is not None), (pattern, text)


@pytest.mark.parametrize(
    ("pattern", "text", "match"),
    [
        ("a{,2}", "a{,2}", "a{,2}"),  # `{` that is not a repeat is a literal
        ("x{2}", "xxx", "xx"),
        ("a$", "a\n", ""),  # `$` is end of text without (?m)
        ("(?m)a$", "a\nb", "a"),
        ("^b", "a\nb", ""),
        ("(?s)a.b", "a\nb", "a\nb"),
        ("a.b", "a\nb", ""),
        ("\\d+", "x٣٤12", "12"),  # ASCII digits only
        ("\\w+", "é_ab", "_ab"),
        ("\\bab\\b", "éab ab", "ab"),
        ("(?i)k", "K", "K"),
        ("(?U)a+", "aaa", "a"),  # ungreedy by default
        ("(?U)a+?", "aaa", "aaa"),
        ("[^a]", "\n", "\n"),  # negated classes match newline
        ("[[:digit:]x]+", "x12y", "x12"),
        ("\\pL+", "12héllo", "héllo"),
        ("\\Qa.b\\E", "axb a.b", "a.b"),
        ("\\x41\\x{263a}", "A☺", "A☺"),
        ("\\101", "A", "A"),
        ("(?P<name>a)(?<other>b)", "ab", "ab"),
        ("a|ab", "ab", "a"),  # leftmost-first, not leftmost-longest
    ],
)
def test_re2_semantics(pattern: str, text: str, match: str) -> None:
    assert find(compile_re2(pattern), text) == match


@pytest.mark.parametrize(
    ("pattern", "text", "n", "matches"),
    [
        ("[0-9]*", "123 abc 456", -1, ["123", "", "", "", "", "456"]),
        ("a*", "baaac", -1, ["", "aaa", ""]),
        ("x*", "ab", -1, ["", "", ""]),
        ("a|", "baa", -1, ["", "a", "a"]),
        ("[0-9]+", "1 2 3", 2, ["1", "2"]),
        ("[0-9]+", "1 2 3", 0, []),
    ],
)
def test_re2_find_all_follows_go_empty_match_rules(
    pattern: str, text: str, n: int, matches: list[str]
) -> None:
    assert find_all(compile_re2(pattern), text, n) == matches


# ---------------------------------------------------------------------------
# net/url


def test_url_parse_components() -> None:
    u = parse("HTTPS://user:p%40ss@Example.com:8080/a%2Fb%20c?x=1&y=2&x=3#frag")
    assert u.scheme == b"https"
    assert u.host == b"Example.com:8080"
    assert u.hostname() == b"Example.com" and u.port() == b"8080"
    assert u.path == b"/a/b c" and u.escaped_path() == b"/a%2Fb%20c"
    assert u.query() == {"x": ["1", "3"], "y": ["2"]}
    # A raw path that is not a valid encoding is ignored in favour of escaping the path.
    assert parse("http://x/a%2Fb c").escaped_path() == b"/a/b%20c"
    assert str(u) == "https://user:p%40ss@Example.com:8080/a%2Fb%20c?x=1&y=2&x=3#frag"
    assert parse("mailto:someone@example.com").opaque == b"someone@example.com"
    assert parse("http://[fe80::1%25en0]:80/").host == b"[fe80::1%en0]:80"
    assert parse("http://a@b@c/").user is not None
    assert parse_request_uri("*").path == b"*"
    assert parse("http://x/?a=1;b=2&c=3").query() == {"c": ["3"]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'parse "": empty url'),
        ("../x", 'parse "../x": invalid URI for request'),
        (":foo", 'parse ":foo": missing protocol scheme'),
        ("http://x/\n", 'parse "http://x/\\n": net/url: invalid control character in URL'),
        ("http://x/%zz", 'parse "http://x/%zz": invalid URL escape "%zz"'),
        ("http://[::1/", "parse \"http://[::1/\": missing ']' in host"),
        ("http://[::1]x/", 'parse "http://[::1]x/": invalid port "x" after host'),
        ("http://[1.2.3.4]/", 'parse "http://[1.2.3.4]/": invalid IP-literal'),
        ("http://a[::1]/", 'parse "http://a[::1]/": invalid IP-literal'),
        ("http://a:b:80/", 'parse "http://a:b:80/": invalid port ":b:80" after host'),
        ("http://a b/", 'parse "http://a b/": invalid character " " in host name'),
        ("http://us er@x/", 'parse "http://us er@x/": net/url: invalid userinfo'),
    ],
)
def test_url_request_uri_errors(text: str, message: str) -> None:
    with pytest.raises(UrlError) as err:
        parse_request_uri(text)
    assert str(err.value) == message


def test_url_colons_in_host_are_allowed_outside_http() -> None:
    # Go only enforces a single colon for http and https hosts.
    assert parse("postgres://h1:5432,h2:5433/db").host == b"h1:5432,h2:5433"


# ---------------------------------------------------------------------------
# blang/semver


def test_semver_precedence_follows_the_spec() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    versions = [parse_semver(v) for v in ordered]
    for low, high in itertools.pairwise(versions):
        assert low.compare(high) == -1 and high.compare(low) == 1


@pytest.mark.parametrize(
    ("text", "normalized"),
    [("v1.2.3", "1.2.3"), ("1", "1.0.0"), ("1.2", "1.2.0"), ("01.002.0003", "1.2.3"), ("v0.0.0", "0.0.0")],
)
def test_semver_normalization(text: str, normalized: str) -> None:
    assert str(normalize_and_parse(text)) == normalized


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.0.x", 'Invalid character(s) found in patch number "x"'),
        ("1.x.0", 'Invalid character(s) found in minor number "x"'),
        ("1.00.0", 'Minor number must not contain leading zeroes "00"'),
        ("1.0.0-a..b", "Prerelease is empty"),
        ("1.0.0-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.0.0+a_b", 'Invalid character(s) found in build meta data "a_b"'),
        ("1..0", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("18446744073709551616.0.0", 'strconv.ParseUint: parsing "18446744073709551616": value out of range'),
    ],
)
def test_semver_errors(text: str, message: str) -> None:
    with pytest.raises(SemverError) as err:
        parse_semver(text)
    assert str(err.value) == message
