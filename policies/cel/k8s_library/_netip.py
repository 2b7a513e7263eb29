"""The parts of Go's net/netip that the IP, CIDR and URL libraries observe.

Upstream parses with netip and prints its error texts verbatim, so the
parser here follows the same scanning order and produces the same messages
(including which unparsed remainder is quoted after "at"). Behaviour follows
the Go releases current Kubernetes builds with (a group of more than four hex
digits is rejected; prefix bits must not have a sign or leading zero).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.cache import cached
from ._types import go_quote

_V4_MAPPED_PREFIX = 0xFFFF << 32


class NetipError(Exception):
    """A parse failure, worded as Go's netip words it."""


def _addr_error(whole: str, msg: str, at: str = "") -> NetipError:
    text = f"ParseAddr({go_quote(whole)}): {msg}"
    if at:
        text += f" (at {go_quote(at)})"
    return NetipError(text)


@dataclass(frozen=True)
class Addr:
    """An IPv4 (32-bit) or IPv6 (128-bit) address; IPv6 may carry a zone."""

    is6: bool
    value: int
    zone: str = ""

    # Family -------------------------------------------------------------
    @property
    def bit_len(self) -> int:
        return 128 if self.is6 else 32

    def is4in6(self) -> bool:
        return self.is6 and (self.value >> 32) == 0xFFFF

    def unmap(self) -> Addr:
        if self.is4in6():
            return Addr(False, self.value & 0xFFFFFFFF)
        return self

    def as128(self) -> int:
        """The 128-bit form (IPv4 as IPv4-mapped), as Go stores every Addr."""
        return self.value if self.is6 else _V4_MAPPED_PREFIX | self.value

    # Classification (Go's Addr.Is* methods) -----------------------------
    def is_unspecified(self) -> bool:
        return self.value == 0 and not self.zone

    def is_loopback(self) -> bool:
        ip = self.unmap()
        if not ip.is6:
            return (ip.value >> 24) == 127
        return ip.value == 1

    def is_multicast(self) -> bool:
        ip = self.unmap()
        if not ip.is6:
            return (ip.value >> 28) == 0xE
        return (ip.value >> 120) == 0xFF

    def is_link_local_multicast(self) -> bool:
        ip = self.unmap()
        if not ip.is6:
            return (ip.value >> 8) == 0xE00000
        return ((ip.value >> 112) & 0xFF0F) == 0xFF02

    def is_link_local_unicast(self) -> bool:
        ip = self.unmap()
        if not ip.is6:
            return (ip.value >> 16) == 0xA9FE
        return ((ip.value >> 112) & 0xFFC0) == 0xFE80

    def is_global_unicast(self) -> bool:
        ip = self.unmap()
        if not ip.is6 and ip.value in (0, 0xFFFFFFFF):
            return False
        if ip.is6 and ip.value == 0 and not ip.zone:
            return False
        return not (ip.is_loopback() or ip.is_multicast() or ip.is_link_local_unicast())

    # Text ---------------------------------------------------------------
    def __str__(self) -> str:
        if not self.is6:
            return _string4(self.value)
        mapped = self.is4in6()
        text = "::ffff:" + _string4(self.value & 0xFFFFFFFF) if mapped else _string6(self.value)
        return text + ("%" + self.zone if self.zone else "")


def _string4(v: int) -> str:
    return ".".join(str((v >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def _string6(v: int) -> str:
    groups = [(v >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    best_start, best_end = 255, 255
    i = 0
    while i < 8:
        j = i
        while j < 8 and groups[j] == 0:
            j += 1
        if j - i >= 2 and j - i > best_end - best_start:
            best_start, best_end = i, j
        i += 1
    parts: list[str] = []
    i = 0
    while i < 8:
        if i == best_start:
            parts.append("::")
            i = best_end
            if i >= 8:
                break
        elif i > 0:
            parts.append(":")
        parts.append(format(groups[i], "x"))
        i += 1
    return "".join(parts)


# --------------------------------------------------------------------------
# Parsing


@cached("cel.library.ip_addresses", 1024, lru=False)
def parse_addr(s: str) -> Addr:
    """Go's netip.ParseAddr (results cached: carriers are parsed again on every call)."""
    for ch in s:
        if ch == ".":
            return _parse_ipv4(s)
        if ch == ":":
            return _parse_ipv6(s)
        if ch == "%":
            raise _addr_error(s, "missing IPv6 address")
    raise _addr_error(s, "unable to parse IP")


def _parse_ipv4_fields(whole: str, part: str) -> list[int]:
    fields: list[int] = []
    val = 0
    dig_len = 0
    for i, ch in enumerate(part):
        if "0" <= ch <= "9":
            if dig_len == 1 and val == 0:
                raise _addr_error(whole, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(ch) - 48
            dig_len += 1
            if val > 255:
                raise _addr_error(whole, "IPv4 field has value >255")
        elif ch == ".":
            if i == 0 or i == len(part) - 1 or part[i - 1] == ".":
                raise _addr_error(whole, "IPv4 field must have at least one digit", part[i:])
            if len(fields) == 3:
                raise _addr_error(whole, "IPv4 address too long")
            fields.append(val)
            val = 0
            dig_len = 0
        else:
            raise _addr_error(whole, "unexpected character", part[i:])
    if len(fields) < 3:
        raise _addr_error(whole, "IPv4 address too short")
    fields.append(val)
    return fields


def _parse_ipv4(s: str) -> Addr:
    a, b, c, d = _parse_ipv4_fields(s, s)
    return Addr(False, (a << 24) | (b << 16) | (c << 8) | d)


def _hex(ch: str) -> int:
    if "0" <= ch <= "9":
        return ord(ch) - 48
    if "a" <= ch <= "f":
        return ord(ch) - 87
    if "A" <= ch <= "F":
        return ord(ch) - 55
    return -1


def _parse_ipv6(whole: str) -> Addr:
    s = whole
    zone = ""
    pct = s.find("%")
    if pct != -1:
        s, zone = s[:pct], s[pct + 1 :]
        if not zone:
            raise _addr_error(whole, "zone must be a non-empty string")
    ip = [0] * 16
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return Addr(True, 0, zone)
    i = 0
    while i < 16:
        off = 0
        acc = 0
        while off < len(s):
            v = _hex(s[off])
            if v < 0:
                break
            acc = (acc << 4) + v
            if off > 3:
                raise _addr_error(whole, "each group must have 4 or less digits", s)
            off += 1
        if off == 0:
            raise _addr_error(whole, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(
                    whole, "embedded IPv4 address must replace the final 2 fields of the address", s
                )
            if i + 4 > 16:
                raise _addr_error(
                    whole, "too many hex fields to fit an embedded IPv4 at the end of the address", s
                )
            ip[i : i + 4] = _parse_ipv4_fields(whole, s)
            s = ""
            i += 4
            break
        ip[i] = acc >> 8
        ip[i + 1] = acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(whole, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(whole, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(whole, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        raise _addr_error(whole, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(whole, "address string too short")
        n = 16 - i
        ip = ip[:ellipsis] + [0] * n + ip[ellipsis:i]
    elif ellipsis >= 0:
        raise _addr_error(whole, "the :: must expand to at least one field of zeros")
    return Addr(True, int.from_bytes(bytes(ip), "big"), zone)


@dataclass(frozen=True)
class Prefix:
    """An address and a prefix length; the address is not masked."""

    addr: Addr
    bits: int

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"

    def masked(self) -> Prefix:
        width = self.addr.bit_len
        mask = ((1 << width) - 1) ^ ((1 << (width - self.bits)) - 1)
        return Prefix(Addr(self.addr.is6, self.addr.value & mask), self.bits)

    def contains(self, ip: Addr) -> bool:
        if ip.zone or ip.is6 != self.addr.is6:
            return False
        shift = self.addr.bit_len - self.bits
        return (ip.value >> shift) == (self.addr.value >> shift)


def _prefix_error(whole: str, msg: str) -> NetipError:
    return NetipError(f"netip.ParsePrefix({go_quote(whole)}): {msg}")


@cached("cel.library.cidr_prefixes", 1024, lru=False)
def parse_prefix(s: str) -> Prefix:
    """Go's netip.ParsePrefix (the address is kept as written)."""
    slash = s.rfind("/")
    if slash < 0:
        raise _prefix_error(s, "no '/'")
    try:
        addr = parse_addr(s[:slash])
    except NetipError as err:
        raise _prefix_error(s, str(err)) from None
    if addr.is6 and addr.zone:
        raise _prefix_error(s, "IPv6 zones cannot be present in a prefix")
    bits_str = s[slash + 1 :]
    bad_bits = _prefix_error(s, "bad bits after slash: " + go_quote(bits_str))
    if len(bits_str) > 1 and not ("1" <= bits_str[0] <= "9"):
        raise bad_bits
    bits = _go_atoi(bits_str)
    if bits is None:
        raise bad_bits
    if bits < 0 or bits > addr.bit_len:
        raise _prefix_error(s, "prefix length out of range")
    return Prefix(addr, bits)


def _go_atoi(s: str) -> int | None:
    """strconv.Atoi: optional sign, ASCII digits, int64 range."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or any(not ("0" <= c <= "9") for c in body):
        return None
    value = int(s)
    if value < -(1 << 63) or value > (1 << 63) - 1:
        return None
    return value
