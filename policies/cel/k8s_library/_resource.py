"""Kubernetes `resource.Quantity`, reproduced closely enough for the CEL library.

Upstream's quantity functions observe more than a quantity's value: whether
it is held as a scaled int64 or as an arbitrary-precision decimal decides
`isInteger`/`asInteger` ("1000m" and "1.5Gi" are *not* integers upstream), the
scale decides `asApproximateFloat`'s last bits, and the format decides the
canonical text. So the state kept here is the same as apimachinery's:
representation, unscaled value, base-10 exponent, format, and the input text
that parsing keeps when it was already canonical.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...core.cache import cached
from ._types import INT64_MAX, INT64_MIN

DECIMAL_EXPONENT = "DecimalExponent"
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"

NANO = -9
_MAX_INT64_FACTORS = 18

ERR_FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {v: k for k, v in _DEC_SUFFIXES.items()}
_BIN_BY_EXP = {v: k for k, v in _BIN_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")


class QuantityError(Exception):
    """A parse failure with apimachinery's error text."""


class QuantityRangeError(QuantityError):
    """A quantity this tool refuses to compute: apimachinery parses `1e1000000000` exactly (a
    number of a billion digits, minutes of CPU and gigabytes in the scheduler); here a decimal
    exponent or a numeric part beyond `MAX_QUANTITY_EXPONENT` / `MAX_QUANTITY_DIGITS` is an
    error, so every evaluation stays bounded."""


MAX_QUANTITY_EXPONENT = 1000
"""Largest decimal exponent (either sign) of a quantity that is computed: far beyond any
resource amount (int64 holds 10^18, float64 10^308), and cheap to compute exactly."""

MAX_QUANTITY_DIGITS = 1000
"""Longest numeric part (digits before and after the point) of a quantity that is computed."""


def _fits(v: int) -> bool:
    return INT64_MIN <= v <= INT64_MAX


def _is_digit(ch: str) -> bool:
    return "0" <= ch <= "9"


@dataclass(frozen=True)
class Quantity:
    """A quantity's observable state.

    `dec` selects the representation (inf.Dec rather than int64Amount); the
    value is `unscaled * 10**scale` either way. `cached` is the input text kept
    by parsing when it was canonical; String() returns it verbatim.
    """

    dec: bool
    unscaled: int
    scale: int
    fmt: str
    cached: str | None = None

    # Value --------------------------------------------------------------
    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def is_zero(self) -> bool:
        return self.unscaled == 0

    def _fraction(self) -> tuple[int, int]:
        """The value as numerator / denominator."""
        if self.scale >= 0:
            return self.unscaled * 10**self.scale, 1
        return self.unscaled, 10 ** (-self.scale)

    def cmp(self, other: Quantity) -> int:
        an, ad = self._fraction()
        bn, bd = other._fraction()
        left, right = an * bd, bn * ad
        return (left > right) - (left < right)

    # Conversions --------------------------------------------------------
    def as_int64(self) -> int | None:
        """AsInt64: only the int64 representation at a non-negative scale converts."""
        if self.dec or self.scale < 0:
            return None
        value = self.unscaled * 10**self.scale
        return value if _fits(value) else None

    def as_approximate_float64(self) -> float:
        try:
            base = float(self.unscaled)
        except OverflowError:
            base = math.copysign(math.inf, self.unscaled)
        if self.scale == 0:
            return base
        return base * go_pow10(self.scale)

    # Arithmetic (values are immutable: each returns a new quantity) -------
    def add(self, y: Quantity) -> Quantity:
        fmt = self.fmt
        if not self.dec and not y.dec:
            if self.unscaled == 0:
                fmt = y.fmt
            fast = _int_add(self.unscaled, self.scale, y.unscaled, y.scale)
            if fast is not None:
                return Quantity(False, fast[0], fast[1], fmt)
        elif self.is_zero():
            fmt = y.fmt
        unscaled, scale = _dec_add(self.unscaled, self.scale, y.unscaled, y.scale)
        return Quantity(True, unscaled, scale, fmt)

    def sub(self, y: Quantity) -> Quantity:
        fmt = y.fmt if self.is_zero() else self.fmt
        if not self.dec and not y.dec and y.unscaled != INT64_MIN:
            fast = _int_add(self.unscaled, self.scale, -y.unscaled, y.scale)
            if fast is not None:
                return Quantity(False, fast[0], fast[1], fmt)
        unscaled, scale = _dec_add(self.unscaled, self.scale, -y.unscaled, y.scale)
        return Quantity(True, unscaled, scale, fmt)

    # Text ---------------------------------------------------------------
    def __str__(self) -> str:
        if self.cached is not None:
            return self.cached
        number, suffix = self._canonicalize()
        return number + suffix

    def _canonicalize(self) -> tuple[str, str]:
        if self.is_zero():
            return "0", ""
        fmt = self.fmt
        if fmt == BINARY_SI:
            num, den = self._fraction()
            if -1024 * den < num < 1024 * den or num % den != 0:
                fmt = DECIMAL_SI
        elif fmt not in (DECIMAL_SI, DECIMAL_EXPONENT):
            fmt = DECIMAL_EXPONENT
        if fmt == BINARY_SI:
            num, den = self._fraction()
            amount, times = _remove_factors(num // den, 1024, not self.dec)
            return str(amount), _BIN_BY_EXP.get(times * 10, "")
        amount, times = _remove_factors(self.unscaled, 10, not self.dec)
        exponent = self.scale + times
        while exponent % 3 != 0:
            amount *= 10
            exponent -= 1
        if fmt == DECIMAL_EXPONENT:
            return str(amount), ("" if exponent == 0 else f"e{exponent}")
        return str(amount), _DEC_BY_EXP.get(exponent, "")


def _remove_factors(value: int, base: int, int64_path: bool) -> tuple[int, int]:
    """removeInt64Factors / removeBigIntFactors (Go cannot negate INT64_MIN)."""
    if value == 0 or (int64_path and value == INT64_MIN):
        return value, 0
    negative = value < 0
    result = -value if negative else value
    times = 0
    while result >= base and result % base == 0:
        result //= base
        times += 1
    return (-result if negative else result), times


def _int_add(a: int, ascale: int, b: int, bscale: int) -> tuple[int, int] | None:
    """int64Amount.Add: None when the int64 fast path overflows."""
    if b == 0:
        return a, ascale
    if a == 0:
        return b, bscale
    if ascale == bscale:
        total = a + b
        return (total, ascale) if _fits(total) else None
    if ascale > bscale:
        scaled = a * 10 ** (ascale - bscale)
        if not _fits(scaled) or not _fits(scaled + b):
            return None
        return scaled + b, bscale
    scaled = b * 10 ** (bscale - ascale)
    if not _fits(scaled) or not _fits(a + scaled):
        return None
    return a + scaled, ascale


def _dec_add(a: int, ascale: int, b: int, bscale: int) -> tuple[int, int]:
    """inf.Dec addition: the result takes the finer of the two scales."""
    scale = min(ascale, bscale)
    return a * 10 ** (ascale - scale) + b * 10 ** (bscale - scale), scale


def new_quantity(value: int, fmt: str) -> Quantity:
    """resource.NewQuantity."""
    return Quantity(False, value, 0, fmt)


# --------------------------------------------------------------------------
# Parsing


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, numerator, denominator, suffix)."""
    positive = True
    pos = 0
    end = len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] == "+"
        pos += 1
    i = pos
    while True:
        if i >= end:
            return positive, "0", "0", "", ""
        if s[i] != "0":
            break
        pos += 1
        i += 1
    i = pos
    while i < end and _is_digit(s[i]):
        i += 1
    if i >= end:
        return positive, s, s[pos:], "", ""
    num = s[pos:i] or "0"
    pos = i
    denom = ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and _is_digit(s[i]):
            i += 1
        if i >= end:
            return positive, s, num, s[pos:], ""
        denom = s[pos:i]
        pos = i
    value = s[:pos]
    suffix_start = pos
    i = pos
    while i < end and s[i] in _SUFFIX_CHARS:
        i += 1
    if i >= end:
        return positive, value, num, denom, s[suffix_start:]
    pos = i
    if s[pos] in "+-":
        pos += 1
    i = pos
    while i < end and _is_digit(s[i]):
        i += 1
    if i >= end:
        return positive, value, num, denom, s[suffix_start:]
    raise QuantityError(ERR_FORMAT_WRONG)


def _interpret(suffix: str) -> tuple[int, int, str]:
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        exp = _parse_int64(suffix[1:])
        if exp is None:
            raise QuantityError(ERR_SUFFIX)
        exp = ((exp + (1 << 31)) % (1 << 32)) - (1 << 31)  # Go's int32(...) wraps
        return 10, exp, DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _parse_int64(s: str) -> int | None:
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not all(_is_digit(c) for c in body):
        return None
    v = int(s)
    return v if _fits(v) else None


@cached("cel.library.quantities", 1024, lru=False)
def parse_quantity(s: str) -> Quantity:
    """resource.ParseQuantity (cached: carriers are parsed on every call)."""
    if not s:
        raise QuantityError(ERR_FORMAT_WRONG)
    if s == "0":
        return Quantity(False, 0, 0, DECIMAL_SI, cached=s)
    positive, value, num, denom, suffix = _scan(s)
    base, exponent, fmt = _interpret(suffix)
    if abs(exponent) > MAX_QUANTITY_EXPONENT or len(num) + len(denom) > MAX_QUANTITY_DIGITS:
        raise QuantityRangeError(
            f"quantity out of the range this tool evaluates (a decimal exponent within "
            f"±{MAX_QUANTITY_EXPONENT} and at most {MAX_QUANTITY_DIGITS} digits)")

    precision = 0
    scale = 0
    mantissa = 1
    if fmt in (DECIMAL_EXPONENT, DECIMAL_SI):
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
    else:
        precision = -1

    if precision >= 0:
        scale -= len(denom)
        if scale >= NANO:
            shifted = num + denom
            parsed = _parse_int64(shifted)
            if parsed is None:
                raise QuantityError(ERR_NUMERIC)
            product = parsed * mantissa
            if _fits(product):
                result = product if positive else -product
                if fmt == BINARY_SI:
                    canonical = exponent % 10 == 0 and (parsed & 0x07) != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(False, result, scale, fmt, cached=s if canonical else None)

    unscaled, inf_scale = _dec_from_string(value)
    if base == 10:
        inf_scale -= exponent
    else:
        unscaled <<= exponent
    sign = -1 if unscaled < 0 else 1
    unscaled = abs(unscaled)
    if unscaled != 0:
        unscaled, inf_scale = _round_up(unscaled, inf_scale, -NANO)
    if fmt == BINARY_SI and _dec_cmp(unscaled, inf_scale, INT64_MAX, 0) > 0:
        unscaled, inf_scale = INT64_MAX, 0
    if fmt == BINARY_SI and unscaled > 0 and _dec_cmp(unscaled, inf_scale, 1, 0) < 0:
        fmt = DECIMAL_SI
    return Quantity(True, sign * unscaled, -inf_scale, fmt)


def _dec_from_string(value: str) -> tuple[int, int]:
    """inf.Dec.SetString on the numeric part: (unscaled, digits after the point)."""
    body = value[1:] if value[:1] in "+-" else value
    if not any(_is_digit(c) for c in body):
        raise QuantityError(ERR_NUMERIC)
    whole, _, frac = body.partition(".")
    unscaled = int((whole + frac) or "0")
    return (-unscaled if value.startswith("-") else unscaled), len(frac)


def _round_up(unscaled: int, inf_scale: int, target: int) -> tuple[int, int]:
    """inf.Dec.Round(x, target, RoundUp) for a non-negative x."""
    if inf_scale <= target:
        return unscaled * 10 ** (target - inf_scale), target
    div = 10 ** (inf_scale - target)
    q, r = divmod(unscaled, div)
    return (q + 1 if r else q), target


def _dec_cmp(a: int, ascale: int, b: int, bscale: int) -> int:
    scale = max(ascale, bscale)
    left = a * 10 ** (scale - ascale)
    right = b * 10 ** (scale - bscale)
    return (left > right) - (left < right)


# --------------------------------------------------------------------------
# math.Pow10 as Go computes it (two table lookups, not a correctly rounded pow)

_POW10_TAB = [float(f"1e{i}") for i in range(32)]
_POW10_POS32 = [float(f"1e{32 * i}") for i in range(10)]
_POW10_NEG32 = [float(f"1e-{32 * i}") for i in range(11)]


def go_pow10(n: int) -> float:
    if 0 <= n <= 308:
        return _POW10_POS32[n // 32] * _POW10_TAB[n % 32]
    if -323 <= n <= 0:
        return _POW10_NEG32[(-n) // 32] / _POW10_TAB[(-n) % 32]
    return math.inf if n > 0 else 0.0
