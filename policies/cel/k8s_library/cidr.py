"""net.cidr: `cidr(string)`, `isCIDR` and the `net.CIDR` members.

Carrier: Go's `Prefix.String()` (address as written, not masked, then the
length), which is what `string(cidr)` and upstream's conversion to string give.
The string and the typed overloads of `containsIP`/`containsCIDR` share one
runtime implementation because both carriers are strings; their error
behaviour still follows upstream: a bad IP string turns into "no such
overload", a bad CIDR string into the CIDR parse error.
"""

from __future__ import annotations

from cel_expr_python import cel

from ._netip import NetipError, Prefix, parse_prefix
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
    no_such_overload,
    string_conversion,
    t,
    validity_check,
    want_str,
)
from .ip import IP_TYPE, parse_ip

NAME = "net.cidr"
CIDR_TYPE = t("net.CIDR")

_PARSE_ERROR = "network address parse error during conversion from string: "


def parse_cidr(raw: str) -> Prefix:
    """Upstream's stringToCIDR: the parse-error prefix really does appear twice."""
    try:
        prefix = parse_prefix(raw)
    except NetipError as err:
        raise CelError(_PARSE_ERROR + _PARSE_ERROR + str(err)) from None
    if prefix.addr.is4in6():
        raise CelError(_PARSE_ERROR + f"IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return prefix


carrier_to_prefix = carrier_decoder(parse_cidr)
_to_cidr = string_conversion(parse_cidr)
_is_cidr = validity_check(parse_cidr)


def _contains_ip(value: object, other: object) -> bool:
    prefix = carrier_to_prefix(value)
    try:
        addr = parse_ip(want_str(other))
    except CelError:
        # Upstream passes the parse error on as an argument, where the type
        # assertion fails and reports "no such overload" instead.
        raise no_such_overload() from None
    return prefix.contains(addr)


def _contains_cidr(value: object, other: object) -> bool:
    prefix = carrier_to_prefix(value)
    inner = parse_cidr(want_str(other))
    # Upstream compares the masked receiver with the *unmasked* address of the
    # argument at the receiver's length (netip.PrefixFrom does not mask).
    masked = prefix.masked()
    same_network = (
        masked.addr.is6 == inner.addr.is6
        and masked.addr.value == inner.addr.value
        and prefix.bits <= inner.addr.bit_len
    )
    return same_network and prefix.bits <= inner.bits


def _ip(value: object) -> str:
    return str(carrier_to_prefix(value).addr)


def _prefix_length(value: object) -> int:
    return carrier_to_prefix(value).bits


def _masked(value: object) -> str:
    return str(carrier_to_prefix(value).masked())


DECLARATIONS: tuple[Decl, ...] = (
    Decl("cidr", "string_to_cidr", (STRING,), CIDR_TYPE),
    Decl("containsIP", "cidr_contains_ip_string", (STRING,), BOOL, target=CIDR_TYPE),
    Decl("containsIP", "cidr_contains_ip_ip", (IP_TYPE,), BOOL, target=CIDR_TYPE),
    Decl("containsCIDR", "cidr_contains_cidr_string", (STRING,), BOOL, target=CIDR_TYPE),
    Decl("containsCIDR", "cidr_contains_cidr", (CIDR_TYPE,), BOOL, target=CIDR_TYPE),
    Decl("ip", "cidr_ip", (), IP_TYPE, target=CIDR_TYPE),
    Decl("prefixLength", "cidr_prefix_length", (), INT, target=CIDR_TYPE),
    Decl("masked", "cidr_masked", (), CIDR_TYPE, target=CIDR_TYPE),
    Decl("isCIDR", "is_cidr", (STRING,), BOOL),
    Decl("string", "cidr_to_string", (CIDR_TYPE,), STRING),
)

_S = cel.Type.STRING

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("cidr", "string_to_cidr", (_S,), _S, _to_cidr),
        Runtime("containsIP", "cidr_contains_ip", (_S, _S), cel.Type.BOOL, _contains_ip, True),
        Runtime("containsCIDR", "cidr_contains_cidr", (_S, _S), cel.Type.BOOL, _contains_cidr, True),
        Runtime("ip", "cidr_ip", (_S,), _S, _ip, member=True),
        Runtime("prefixLength", "cidr_prefix_length", (_S,), cel.Type.INT, _prefix_length, True),
        Runtime("masked", "cidr_masked", (_S,), _S, _masked, member=True),
        Runtime("isCIDR", "is_cidr", (_S,), cel.Type.BOOL, _is_cidr),
    ),
)
