"""The shared protobuf wire helpers: what the writers produce, the readers read back."""

from __future__ import annotations

import pytest
from dra_affinity.policies.cel.common.wire import (
    FIXED32,
    FIXED64,
    LEN,
    VARINT,
    WireError,
    field_spans,
    int_field,
    iter_fields,
    len_field,
    read_field,
    read_varint,
    varint,
)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16_383, 16_384, (1 << 63) - 1, (1 << 64) - 1])
def test_varint_round_trip(n: int) -> None:
    data = varint(n)
    assert read_varint(data, 0, len(data)) == (n, len(data))


def test_varint_known_encodings_and_negative_int64() -> None:
    assert varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1: ten bytes, as protobuf writes it
    assert read_varint(varint(-1), 0, 10) == ((1 << 64) - 1, 10)


def test_fields_read_back() -> None:
    message = (int_field(1, 7) + len_field(2, b"abc") + varint(3 << 3 | FIXED32) + b"\x01\x00\x00\x00"
               + varint(4 << 3 | FIXED64) + (2).to_bytes(8, "little") + len_field(5, b""))
    assert list(iter_fields(message)) == [
        (1, VARINT, 7), (2, LEN, b"abc"), (3, FIXED32, 1), (4, FIXED64, 2), (5, LEN, b"")]
    spans = list(field_spans(message, 0, len(message)))
    assert [(n, message[s:e], v) for n, s, e, v in spans] == [
        (1, b"", 7), (2, b"abc", 0), (5, b"", 0)]  # fixed-width fields are skipped


@pytest.mark.parametrize(("data", "message"), [
    (b"\x80", "truncated varint"),
    (b"\xff" * 11, "varint longer than 10 bytes"),
    (b"\x08", "truncated varint"),
    (b"\x12\x05ab", "truncated length-delimited field"),
    (b"\x0d\x01", "truncated fixed-width field"),
    (b"\x00\x00", "field number 0"),
    (b"\x0b", "unsupported wire type 3"),
])
def test_malformed_input_is_a_wire_error(data: bytes, message: str) -> None:
    with pytest.raises(WireError, match=message):
        read_field(data, 0, len(data))


def test_spans_stay_within_the_given_end() -> None:
    data = len_field(1, b"\x08\x96\x01")  # field 1 holds {1: 150}
    (number, start, end, _), = field_spans(data, 0, len(data))
    assert number == 1
    assert list(field_spans(data, start, end)) == [(1, end, end, 150)]
    with pytest.raises(WireError, match="truncated varint"):
        list(field_spans(data, start, end - 1))  # the value's last byte is past the end
