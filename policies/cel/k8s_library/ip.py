"""kubernetes.net.ip: `ip(string)`, `isIP`, `ip.isCanonical` and the `net.IP` members.

Carrier: the address's canonical text (Go's `Addr.String()`), so `string(ip)`
is the built-in identity conversion and `==` compares addresses exactly as
upstream's `netip.Addr` equality does (zones and IPv4-mapped addresses are
rejected at parse time, so the canonical text is unique per address).
"""

from __future__ import annotations

from cel_expr_python import cel

from ._netip import Addr, NetipError, parse_addr
from ._types import (
    BOOL,
    INT,
    STRING,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    carrier_decoder,
    go_quote,
    string_conversion,
    t,
    validity_check,
    want_str,
)

NAME = "kubernetes.net.ip"
IP_TYPE = t("net.IP")


def parse_ip(raw: str) -> Addr:
    """Upstream's parseIPAddr: netip rules, minus zones and IPv4-mapped IPv6."""
    try:
        addr = parse_addr(raw)
    except NetipError as err:
        raise CelError(
            f"IP Address {go_quote(raw)} parse error during conversion from string: {err}"
        ) from None
    if addr.zone:
        raise CelError(f"IP address {go_quote(raw)} with zone value is not allowed")
    if addr.is4in6():
        raise CelError(f"IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return addr


carrier_to_addr = carrier_decoder(parse_ip)
"""Decode a `net.IP` carrier; anything else is a dispatch mismatch."""
_to_ip = string_conversion(parse_ip)
_is_ip = validity_check(parse_ip)


def _is_canonical(raw: object) -> bool:
    text = want_str(raw)
    return str(parse_ip(text)) == text


def _family(value: object) -> int:
    return 6 if carrier_to_addr(value).is6 else 4


def _predicate(name: str) -> Runtime:
    method = getattr(Addr, _METHODS[name])

    def impl(value: object) -> bool:
        return bool(method(carrier_to_addr(value)))

    return Runtime(name, _IDS[name], (cel.Type.STRING,), cel.Type.BOOL, impl, member=True)


_METHODS = {
    "isUnspecified": "is_unspecified",
    "isLoopback": "is_loopback",
    "isLinkLocalMulticast": "is_link_local_multicast",
    "isLinkLocalUnicast": "is_link_local_unicast",
    "isGlobalUnicast": "is_global_unicast",
}
_IDS = {
    "isUnspecified": "ip_is_unspecified",
    "isLoopback": "ip_is_loopback",
    "isLinkLocalMulticast": "ip_is_link_local_multicast",
    "isLinkLocalUnicast": "ip_is_link_local_unicast",
    "isGlobalUnicast": "ip_is_global_unicast",
}

DECLARATIONS: tuple[Decl, ...] = (
    Decl("ip", "string_to_ip", (STRING,), IP_TYPE),
    Decl("family", "ip_family", (), INT, target=IP_TYPE),
    Decl("ip.isCanonical", "ip_is_canonical", (STRING,), BOOL),
    *(Decl(name, _IDS[name], (), BOOL, target=IP_TYPE) for name in _METHODS),
    Decl("isIP", "is_ip", (STRING,), BOOL),
    Decl("string", "ip_to_string", (IP_TYPE,), STRING),
)

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("ip", "string_to_ip", (cel.Type.STRING,), cel.Type.STRING, _to_ip),
        Runtime("family", "ip_family", (cel.Type.STRING,), cel.Type.INT, _family, member=True),
        Runtime("ip.isCanonical", "ip_is_canonical", (cel.Type.STRING,), cel.Type.BOOL, _is_canonical),
        *(_predicate(name) for name in _METHODS),
        Runtime("isIP", "is_ip", (cel.Type.STRING,), cel.Type.BOOL, _is_ip),
        # string(net.IP): the carrier is the canonical text, so the standard
        # string(string) identity already answers; nothing to register.
    ),
)
