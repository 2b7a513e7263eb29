"""Protobuf wire format: the few readers and writers our CEL code needs.

Why: cel-expr-python exposes the checked AST only as serialized protobuf
(`Expression.serialize()`, a `google.protobuf.Any` wrapping `cel.expr.CheckedExpr`) and takes it
back the same way (`Env.deserialize`). No PyPI package ships the CEL message classes and we do not
depend on the `protobuf` runtime, so the modules that read the AST (`ast_decode`, the equality rewrite in
`k8s_library.equality`) or write one (`runtime`, `device`) use these helpers instead. They support
exactly what the CEL messages use: varint, fixed64, fixed32 and length-delimited fields.

`ast_decode._Decoder` inlines the common tags in its hot loop for speed and comes here for the rest.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = [
    "FIXED32",
    "FIXED64",
    "LEN",
    "VARINT",
    "WireError",
    "field_spans",
    "int_field",
    "iter_fields",
    "len_field",
    "read_field",
    "read_varint",
    "varint",
]

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
"""Wire types (the low three bits of a field's key)."""

_MASK_64 = (1 << 64) - 1


class WireError(ValueError):
    """The bytes are not well-formed protobuf. The engine produced them, so this signals a bug."""


# --- reading ------------------------------------------------------------------------------------


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """Read the varint at `pos`, which must end before `end`: (value mod 2**64, next pos)."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & _MASK_64, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def read_field(buf: bytes, pos: int, end: int) -> tuple[int, int, int | bytes, int]:
    """Read any one field at `pos`: (number, wire type, payload, next pos).

    The payload is an int, or a copy of the bytes of a length-delimited field.
    """
    key, pos = read_varint(buf, pos, end)
    number, wire = key >> 3, key & 7
    if number == 0:
        raise WireError("field number 0")
    if wire == VARINT:
        value, pos = read_varint(buf, pos, end)
        return number, wire, value, pos
    if wire in (FIXED64, FIXED32):
        width = 8 if wire == FIXED64 else 4
        if pos + width > end:
            raise WireError("truncated fixed-width field")
        return number, wire, int.from_bytes(buf[pos:pos + width], "little"), pos + width
    if wire == LEN:
        length, pos = read_varint(buf, pos, end)
        if pos + length > end:
            raise WireError("truncated length-delimited field")
        return number, wire, bytes(buf[pos:pos + length]), pos + length
    raise WireError(f"unsupported wire type {wire}")


def iter_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, payload) for one message; payload is int or bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        number, wire, value, pos = read_field(buf, pos, end)
        yield number, wire, value


def field_spans(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, value start, value end, varint value) of each field in buf[start:end].

    Length-delimited values are spans (no copy, for walking and rewriting big messages);
    varints come as their value with an empty span; fixed-width fields are skipped.
    """
    pos = start
    while pos < end:
        key, pos = read_varint(buf, pos, end)
        wire = key & 7
        if wire == VARINT:
            value, pos = read_varint(buf, pos, end)
            yield key >> 3, pos, pos, value
        elif wire == LEN:
            length, pos = read_varint(buf, pos, end)
            yield key >> 3, pos, pos + length, 0
            pos += length
        elif wire == FIXED64:
            pos += 8
        elif wire == FIXED32:
            pos += 4
        else:
            raise WireError(f"unsupported wire type {wire}")


# --- writing ------------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    """`n` as a varint (negative int64 values as their two's complement, as protobuf does)."""
    n &= _MASK_64
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def len_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a string, bytes or sub-message)."""
    return varint(number << 3 | LEN) + varint(len(payload)) + payload


def int_field(number: int, value: int) -> bytes:
    """A varint field (an int64, bool or enum)."""
    return varint(number << 3 | VARINT) + varint(value)
