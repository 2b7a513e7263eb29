"""kubernetes.Semver (library version 1): `semver`, `isSemver` and the Semver members.

Parsing follows github.com/blang/semver/v4 (`Parse`), including its error
texts, and upstream's `normalizeAndParse` for the two-argument forms.

Carrier: a tagged list `[TAG_SEMVER, Version.String()]`. A list (not a
string) keeps `compareTo`/`isLessThan`/`isGreaterThan` apart from the
Quantity overloads, whose carrier is a string. The carrier keeps the build
metadata (a conversion to string shows it); upstream's `==` ignores it
(`Version.EQ`), and so does ours, through `equality`.
"""

from __future__ import annotations

from dataclasses import dataclass

from cel_expr_python import cel

from ...core.cache import cached
from ._types import (
    BOOL,
    INT,
    STRING,
    TAG_SEMVER,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    go_quote,
    no_such_overload,
    t,
    unwrap_tagged,
    want_bool,
    want_str,
)

NAME = "kubernetes.Semver"
SEMVER_TYPE = t("kubernetes.Semver")

_NUMBERS = "0123456789"
_ALPHANUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-" + _NUMBERS
_UINT64_MAX = (1 << 64) - 1


class SemverError(Exception):
    """A parse failure with blang/semver's error text."""


@dataclass(frozen=True)
class PRVersion:
    text: str
    num: int | None  # set when the identifier is numeric

    def compare(self, other: PRVersion) -> int:
        if self.num is not None and other.num is not None:
            return (self.num > other.num) - (self.num < other.num)
        if self.num is not None:
            return -1
        if other.num is not None:
            return 1
        return (self.text > other.text) - (self.text < other.text)


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: tuple[PRVersion, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, o: Version) -> int:
        for a, b in ((self.major, o.major), (self.minor, o.minor), (self.patch, o.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre and not o.pre:
            return 0
        if not self.pre:
            return 1
        if not o.pre:
            return -1
        for a_pre, b_pre in zip(self.pre, o.pre, strict=False):
            c = a_pre.compare(b_pre)
            if c:
                return c
        return (len(self.pre) > len(o.pre)) - (len(self.pre) < len(o.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(p.text if p.num is None else str(p.num) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _contains_only(s: str, chars: str) -> bool:
    return all(c in chars for c in s)


def _has_leading_zeroes(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def _parse_uint(s: str) -> int:
    """strconv.ParseUint(s, 10, 64) on a string already known to be digits."""
    if not s:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(s)
    if value > _UINT64_MAX:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(s)}: value out of range")
    return value


@cached("cel.library.semvers", 1024, lru=False)
def parse(s: str) -> Version:
    """blang/semver/v4 Parse."""
    if not s:
        raise SemverError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    numbers = []
    for label, part in (("major", parts[0]), ("minor", parts[1])):
        if not _contains_only(part, _NUMBERS):
            raise SemverError(f"Invalid character(s) found in {label} number {go_quote(part)}")
        if _has_leading_zeroes(part):
            raise SemverError(f"{label.capitalize()} number must not contain leading zeroes {go_quote(part)}")
        numbers.append(_parse_uint(part))
    patch_str = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    plus = patch_str.find("+")
    if plus != -1:
        build = patch_str[plus + 1 :].split(".")
        patch_str = patch_str[:plus]
    dash = patch_str.find("-")
    if dash != -1:
        prerelease = patch_str[dash + 1 :].split(".")
        patch_str = patch_str[:dash]
    if not _contains_only(patch_str, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in patch number {go_quote(patch_str)}")
    if _has_leading_zeroes(patch_str):
        raise SemverError(f"Patch number must not contain leading zeroes {go_quote(patch_str)}")
    patch = _parse_uint(patch_str)
    pre = tuple(_parse_pr(p) for p in prerelease)
    for b in build:
        if not b:
            raise SemverError("Build meta data is empty")
        if not _contains_only(b, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(b)}")
    return Version(numbers[0], numbers[1], patch, pre, tuple(build))


def _parse_pr(s: str) -> PRVersion:
    if not s:
        raise SemverError("Prerelease is empty")
    if _contains_only(s, _NUMBERS):
        if _has_leading_zeroes(s):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(s)}")
        return PRVersion(s, _parse_uint(s))
    if _contains_only(s, _ALPHANUM):
        return PRVersion(s, None)
    raise SemverError(f"Invalid character(s) found in prerelease {go_quote(s)}")


def normalize_and_parse(s: str) -> Version:
    """Upstream's normalizeAndParse: drop one "v", trim leading zeros, pad to x.y.z."""
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in _NUMBERS:
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _to_int64(v: int) -> int:
    """types.Int(uint64): Go's conversion wraps."""
    return v - (1 << 64) if v >= (1 << 63) else v


def _parse_arg(raw: object, normalize: bool) -> Version:
    text = want_str(raw)
    try:
        return normalize_and_parse(text) if normalize else parse(text)
    except SemverError as err:
        raise CelError(str(err)) from None


def _carrier(v: Version) -> list[str]:
    return [TAG_SEMVER, str(v)]


def decode(value: object) -> Version:
    try:
        return parse(want_str(unwrap_tagged(value, TAG_SEMVER)))
    except SemverError:
        raise no_such_overload() from None


def _semver(raw: object) -> list[str]:
    return _carrier(_parse_arg(raw, False))


def _semver_normalize(raw: object, normalize: object) -> list[str]:
    return _carrier(_parse_arg(raw, want_bool(normalize)))


def _is_semver(raw: object) -> bool:
    return _is_semver_normalize(raw, False)


def _is_semver_normalize(raw: object, normalize: object) -> bool:
    try:
        _parse_arg(raw, want_bool(normalize))
    except CelError:
        return False
    return True


DECLARATIONS: tuple[Decl, ...] = (
    Decl("semver", "string_to_semver", (STRING,), SEMVER_TYPE),
    Decl("semver", "string_bool_to_semver", (STRING, BOOL), SEMVER_TYPE),
    Decl("isSemver", "is_semver_string", (STRING,), BOOL),
    Decl("isSemver", "is_semver_string_bool", (STRING, BOOL), BOOL),
    Decl("isGreaterThan", "semver_is_greater_than", (SEMVER_TYPE,), BOOL, target=SEMVER_TYPE),
    Decl("isLessThan", "semver_is_less_than", (SEMVER_TYPE,), BOOL, target=SEMVER_TYPE),
    Decl("compareTo", "semver_compare_to", (SEMVER_TYPE,), INT, target=SEMVER_TYPE),
    Decl("major", "semver_major", (), INT, target=SEMVER_TYPE),
    Decl("minor", "semver_minor", (), INT, target=SEMVER_TYPE),
    Decl("patch", "semver_patch", (), INT, target=SEMVER_TYPE),
)

_S = cel.Type.STRING
_L = cel.Type.LIST
_B = cel.Type.BOOL
_I = cel.Type.INT

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("semver", "string_to_semver", (_S,), _L, _semver),
        Runtime("semver", "string_bool_to_semver", (_S, _B), _L, _semver_normalize),
        Runtime("isSemver", "is_semver_string", (_S,), _B, _is_semver),
        Runtime("isSemver", "is_semver_string_bool", (_S, _B), _B, _is_semver_normalize),
        Runtime(
            "isGreaterThan",
            "semver_is_greater_than",
            (_L, _L),
            _B,
            lambda a, b: decode(a).compare(decode(b)) == 1,
            True,
        ),
        Runtime(
            "isLessThan",
            "semver_is_less_than",
            (_L, _L),
            _B,
            lambda a, b: decode(a).compare(decode(b)) == -1,
            True,
        ),
        Runtime(
            "compareTo",
            "semver_compare_to",
            (_L, _L),
            _I,
            lambda a, b: decode(a).compare(decode(b)),
            True,
        ),
        Runtime("major", "semver_major", (_L,), _I, lambda v: _to_int64(decode(v).major), True),
        Runtime("minor", "semver_minor", (_L,), _I, lambda v: _to_int64(decode(v).minor), True),
        Runtime("patch", "semver_patch", (_L,), _I, lambda v: _to_int64(decode(v).patch), True),
    ),
)
