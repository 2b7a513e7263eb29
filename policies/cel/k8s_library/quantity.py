"""kubernetes.quantity: `quantity(string)`, `isQuantity`, `sign` and the Quantity members.

Carrier: the quantity's `String()` (what upstream's conversion to string
yields), so most carriers are plain canonical strings and `==` between them
compares canonical forms. When re-parsing that text would not give back the
same internal state (e.g. "1000m" is stored as 1000e-3, not 1e0, and so is
not an integer upstream), the state is appended after a private-use marker so
`isInteger`, `asInteger` and `asApproximateFloat` keep upstream's answers.
Equal values can thus have different carriers ("1Ki" and "1024", "1000m" and
"1"); `equality` makes `==`, `!=` and `in` compare values, as upstream's
`Quantity.Equal` does.
"""

from __future__ import annotations

import math

from cel_expr_python import cel

from ...core.cache import cached
from ._resource import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    Quantity,
    QuantityError,
    QuantityRangeError,
    new_quantity,
    parse_quantity,
)
from ._types import (
    BOOL,
    DOUBLE,
    INT,
    STRING,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    no_such_overload,
    t,
    want_int,
    want_str,
)

NAME = "kubernetes.quantity"
QUANTITY_TYPE = t("kubernetes.Quantity")

STATE_MARK = "\ue001"
_FORMATS = frozenset({BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI})


@cached("cel.library.quantity_carriers", 1024, lru=False)
def encode(q: Quantity) -> str:
    """The carrier text of a quantity (see module docstring)."""
    text = str(q)
    try:
        reparsed = parse_quantity(text)
    except QuantityError:
        reparsed = None
    if reparsed is not None and _observably_same(q, reparsed):
        return text
    kind = "d" if q.dec else "i"
    return f"{text}{STATE_MARK}{kind}|{q.unscaled}|{q.scale}|{q.fmt}"


def _observably_same(a: Quantity, b: Quantity) -> bool:
    """Whether no quantity function (now or after arithmetic) can tell a from b.

    Beyond the value: the representation (a decimal is never an integer, and
    stays a decimal through arithmetic), the sign of an int64 scale (a negative
    scale is never an integer, and arithmetic keeps the finer scale), the float
    `asApproximateFloat` computes from unscaled and scale, and the format
    (which shapes the text of arithmetic results). A zero's format never shows.
    """
    if a.dec != b.dec or a.cmp(b) != 0:
        return False
    if not a.dec and (a.scale < 0) != (b.scale < 0):
        return False
    if not a.is_zero() and a.fmt != b.fmt:
        return False
    fa, fb = a.as_approximate_float64(), b.as_approximate_float64()
    return fa == fb or (math.isnan(fa) and math.isnan(fb))


def decode(value: object) -> Quantity:
    """A Quantity from its carrier; anything else is a dispatch mismatch."""
    q = _decode_text(want_str(value))
    if q is None:
        raise no_such_overload()
    return q


def _decode_text(text: str) -> Quantity | None:
    head, mark, state = text.partition(STATE_MARK)
    try:
        if not mark:
            return parse_quantity(text)
        kind, unscaled, scale, fmt = state.split("|")
    except (QuantityError, ValueError):
        return None
    if kind not in ("i", "d") or fmt not in _FORMATS:
        return None
    try:
        q = Quantity(kind == "d", int(unscaled), int(scale), fmt)
    except ValueError:
        return None
    return q if str(q) == head else None


def native_string(text: str) -> str:
    """What upstream's conversion to string gives for `text`.

    A Quantity carrier with a state suffix loses the suffix; any other string
    is returned as it is.
    """
    if STATE_MARK in text and _decode_text(text) is not None:
        return text.partition(STATE_MARK)[0]
    return text


def _quantity(raw: object) -> str:
    try:
        return encode(parse_quantity(want_str(raw)))
    except QuantityError as err:
        raise CelError(str(err)) from None


def _is_quantity(raw: object) -> bool:
    try:
        parse_quantity(want_str(raw))
    except QuantityRangeError as err:  # not "not a quantity": one too large to compute
        raise CelError(str(err)) from None
    except QuantityError:
        return False
    return True


def _sign(value: object) -> int:
    return decode(value).sign()


def _is_greater_than(value: object, other: object) -> bool:
    return decode(value).cmp(decode(other)) == 1


def _is_less_than(value: object, other: object) -> bool:
    return decode(value).cmp(decode(other)) == -1


def _compare_to(value: object, other: object) -> int:
    return decode(value).cmp(decode(other))


def _as_approximate_float(value: object) -> float:
    return decode(value).as_approximate_float64()


def _as_integer(value: object) -> int:
    result = decode(value).as_int64()
    if result is None:
        raise CelError("cannot convert value to integer")
    return result


def _is_integer(value: object) -> bool:
    return decode(value).as_int64() is not None


def _add(value: object, other: object) -> str:
    return encode(decode(value).add(decode(other)))


def _add_int(value: object, other: object) -> str:
    return encode(decode(value).add(new_quantity(want_int(other), DECIMAL_EXPONENT)))


def _sub(value: object, other: object) -> str:
    return encode(decode(value).sub(decode(other)))


def _sub_int(value: object, other: object) -> str:
    return encode(decode(value).sub(new_quantity(want_int(other), DECIMAL_EXPONENT)))


Q = QUANTITY_TYPE

DECLARATIONS: tuple[Decl, ...] = (
    Decl("quantity", "string_to_quantity", (STRING,), Q),
    Decl("isQuantity", "is_quantity_string", (STRING,), BOOL),
    Decl("sign", "quantity_sign", (Q,), INT),
    Decl("isGreaterThan", "quantity_is_greater_than", (Q,), BOOL, target=Q),
    Decl("isLessThan", "quantity_is_less_than", (Q,), BOOL, target=Q),
    Decl("compareTo", "quantity_compare_to", (Q,), INT, target=Q),
    Decl("asApproximateFloat", "quantity_get_float", (), DOUBLE, target=Q),
    Decl("asInteger", "quantity_get_int", (), INT, target=Q),
    Decl("isInteger", "quantity_is_integer", (), BOOL, target=Q),
    Decl("add", "quantity_add", (Q,), Q, target=Q),
    Decl("add", "quantity_add_int", (INT,), Q, target=Q),
    Decl("sub", "quantity_sub", (Q,), Q, target=Q),
    Decl("sub", "quantity_sub_int", (INT,), Q, target=Q),
)

_S = cel.Type.STRING
_B = cel.Type.BOOL
_I = cel.Type.INT

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("quantity", "string_to_quantity", (_S,), _S, _quantity),
        Runtime("isQuantity", "is_quantity_string", (_S,), _B, _is_quantity),
        Runtime("sign", "quantity_sign", (_S,), _I, _sign),
        Runtime("isGreaterThan", "quantity_is_greater_than", (_S, _S), _B, _is_greater_than, True),
        Runtime("isLessThan", "quantity_is_less_than", (_S, _S), _B, _is_less_than, True),
        Runtime("compareTo", "quantity_compare_to", (_S, _S), _I, _compare_to, True),
        Runtime(
            "asApproximateFloat",
            "quantity_get_float",
            (_S,),
            cel.Type.DOUBLE,
            _as_approximate_float,
            True,
        ),
        Runtime("asInteger", "quantity_get_int", (_S,), _I, _as_integer, True),
        Runtime("isInteger", "quantity_is_integer", (_S,), _B, _is_integer, True),
        Runtime("add", "quantity_add", (_S, _S), _S, _add, True),
        Runtime("add", "quantity_add_int", (_S, _I), _S, _add_int, True),
        Runtime("sub", "quantity_sub", (_S, _S), _S, _sub, True),
        Runtime("sub", "quantity_sub_int", (_S, _I), _S, _sub_int, True),
    ),
)
