"""The parts of Go's net/url the URL and format libraries observe.

Go works on bytes, so this port does too: inputs are UTF-8 encoded, and
results that may hold bytes that are not UTF-8 (after %-unescaping) are
decoded with U+FFFD replacement. Behaviour follows the current Go release
(bracketed hosts must be IPv6 literals; for http/https a host may contain
only one colon, the port separator).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.cache import cached
from ._netip import NetipError, parse_addr
from ._types import from_go_bytes, go_quote, go_quote_bytes

ENCODE_PATH = 1
ENCODE_PATH_SEGMENT = 2
ENCODE_HOST = 3
ENCODE_ZONE = 4
ENCODE_USER_PASSWORD = 5
ENCODE_QUERY_COMPONENT = 6
ENCODE_FRAGMENT = 7

_UPPERHEX = b"0123456789ABCDEF"


class UrlError(Exception):
    """A parse failure; str() is Go's `*url.Error` text (`parse "...": why`)."""


class _Inner(Exception):
    """The wrapped error of a `*url.Error`."""


def _is_alnum(c: int) -> bool:
    return 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A or 0x30 <= c <= 0x39


def should_escape(c: int, mode: int) -> bool:
    if _is_alnum(c):
        return False
    if mode in (ENCODE_HOST, ENCODE_ZONE) and c in b"!$&'()*+,;=:[]<>\"":
        return False
    if c in b"-_.~":
        return False
    if c in b"$&+,/:;=?@":
        if mode == ENCODE_PATH:
            return c == 0x3F
        if mode == ENCODE_PATH_SEGMENT:
            return c in b"/;,?"
        if mode == ENCODE_USER_PASSWORD:
            return c in b"@/?:"
        if mode == ENCODE_QUERY_COMPONENT:
            return True
        if mode == ENCODE_FRAGMENT:
            return False
    return not (mode == ENCODE_FRAGMENT and c in b"!()*")


def _unhex(c: int) -> int:
    if 0x30 <= c <= 0x39:
        return c - 0x30
    if 0x61 <= c <= 0x66:
        return c - 0x61 + 10
    if 0x41 <= c <= 0x46:
        return c - 0x41 + 10
    return -1


def unescape(s: bytes, mode: int) -> bytes:
    n = 0
    has_plus = False
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # %
            n += 1
            if i + 2 >= len(s) or _unhex(s[i + 1]) < 0 or _unhex(s[i + 2]) < 0:
                raise _Inner("invalid URL escape " + go_quote_bytes(s[i : i + 3]))
            if mode == ENCODE_HOST and _unhex(s[i + 1]) < 8 and s[i : i + 3] != b"%25":
                raise _Inner("invalid URL escape " + go_quote_bytes(s[i : i + 3]))
            if mode == ENCODE_ZONE:
                v = _unhex(s[i + 1]) << 4 | _unhex(s[i + 2])
                if s[i : i + 3] != b"%25" and v != 0x20 and should_escape(v, ENCODE_HOST):
                    raise _Inner("invalid URL escape " + go_quote_bytes(s[i : i + 3]))
            i += 3
        elif c == 0x2B:  # +
            has_plus = mode == ENCODE_QUERY_COMPONENT
            i += 1
        else:
            if mode in (ENCODE_HOST, ENCODE_ZONE) and c < 0x80 and should_escape(c, mode):
                raise _Inner("invalid character " + go_quote_bytes(s[i : i + 1]) + " in host name")
            i += 1
    if n == 0 and not has_plus:
        return s
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:
            out.append(_unhex(s[i + 1]) << 4 | _unhex(s[i + 2]))
            i += 3
            continue
        if c == 0x2B and mode == ENCODE_QUERY_COMPONENT:
            out.append(0x20)
        else:
            out.append(c)
        i += 1
    return bytes(out)


def escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if c == 0x20 and mode == ENCODE_QUERY_COMPONENT:
            out.append(0x2B)
        elif should_escape(c, mode):
            out += bytes((0x25, _UPPERHEX[c >> 4], _UPPERHEX[c & 15]))
        else:
            out.append(c)
    return bytes(out)


@dataclass(frozen=True)
class Userinfo:
    username: bytes
    password: bytes = b""
    password_set: bool = False

    def encoded(self) -> bytes:
        out = escape(self.username, ENCODE_USER_PASSWORD)
        if self.password_set:
            out += b":" + escape(self.password, ENCODE_USER_PASSWORD)
        return out


@dataclass(frozen=True)
class URL:
    scheme: bytes = b""
    opaque: bytes = b""
    user: Userinfo | None = None
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    omit_host: bool = False
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""

    # Accessors the CEL library exposes ----------------------------------
    def hostname(self) -> bytes:
        return _split_host_port(self.host)[0]

    def port(self) -> bytes:
        return _split_host_port(self.host)[1]

    def escaped_path(self) -> bytes:
        if self.raw_path and _valid_encoded(self.raw_path, ENCODE_PATH):
            try:
                if unescape(self.raw_path, ENCODE_PATH) == self.path:
                    return self.raw_path
            except _Inner:
                pass
        if self.path == b"*":
            return b"*"
        return escape(self.path, ENCODE_PATH)

    def escaped_fragment(self) -> bytes:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, ENCODE_FRAGMENT):
            try:
                if unescape(self.raw_fragment, ENCODE_FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except _Inner:
                pass
        return escape(self.fragment, ENCODE_FRAGMENT)

    def query(self) -> dict[str, list[str]]:
        """URL.Query(): malformed pairs are dropped silently."""
        out: dict[str, list[str]] = {}
        q = self.raw_query
        while q:
            key, _, q = q.partition(b"&")
            if b";" in key or not key:
                continue
            k, _, v = key.partition(b"=")
            try:
                ku = unescape(k, ENCODE_QUERY_COMPONENT)
                vu = unescape(v, ENCODE_QUERY_COMPONENT)
            except _Inner:
                continue
            out.setdefault(from_go_bytes(ku), []).append(from_go_bytes(vu))
        return out

    def __bytes__(self) -> bytes:
        buf = bytearray()
        if self.scheme:
            buf += self.scheme + b":"
        if self.opaque:
            buf += self.opaque
        else:
            has_authority = self.scheme or self.host or self.user is not None
            omitted = self.omit_host and not self.host and self.user is None
            if has_authority and not omitted:
                if self.host or self.path or self.user is not None:
                    buf += b"//"
                if self.user is not None:
                    buf += self.user.encoded() + b"@"
                if self.host:
                    buf += escape(self.host, ENCODE_HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                buf += b"/"
            if not buf:
                segment = path.partition(b"/")[0]
                if b":" in segment:
                    buf += b"./"
            buf += path
        if self.force_query or self.raw_query:
            buf += b"?" + self.raw_query
        if self.fragment:
            buf += b"#" + self.escaped_fragment()
        return bytes(buf)

    def __str__(self) -> str:
        return from_go_bytes(bytes(self))


def _split_host_port(host: bytes) -> tuple[bytes, bytes]:
    port = b""
    colon = host.rfind(b":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    if port[:1] != b":":
        return False
    return all(0x30 <= b <= 0x39 for b in port[1:])


def _valid_encoded(s: bytes, mode: int) -> bool:
    for c in s:
        if c in b"!$&'()*+,;=:@[]%":
            continue
        if should_escape(c, mode):
            return False
    return True


def _valid_userinfo(s: bytes) -> bool:
    text = from_go_bytes(s)
    for ch in text:
        if ch.isascii() and (ch.isalnum() or ch in "-._:~!$&'()*+,;=%@"):
            continue
        return False
    return True


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:  # :
            if i == 0:
                raise _Inner("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    open_bracket = host.rfind(b"[")
    if open_bracket > 0:
        raise _Inner("invalid IP-literal")
    if open_bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise _Inner("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise _Inner(f"invalid port {go_quote_bytes(colon_port)} after host")
        unescaped_port = unescape(colon_port, ENCODE_HOST)
        hostname = host[1:close]
        zone = hostname.find(b"%25")
        if zone >= 0:
            unescaped_host = unescape(hostname[:zone], ENCODE_HOST) + unescape(hostname[zone:], ENCODE_ZONE)
        else:
            unescaped_host = unescape(hostname, ENCODE_HOST)
        try:
            addr = parse_addr(from_go_bytes(unescaped_host))
        except NetipError as err:
            raise _Inner(f"invalid host: {err}") from None
        if not addr.is6:
            raise _Inner("invalid IP-literal")
        return b"[" + unescaped_host + b"]" + unescaped_port
    first = host.find(b":")
    if first != -1:
        last = host.rfind(b":")
        if last != first and scheme not in (b"http", b"https"):
            first = last
        colon_port = host[first:]
        if not _valid_optional_port(colon_port):
            raise _Inner(f"invalid port {go_quote_bytes(colon_port)} after host")
    return unescape(host, ENCODE_HOST)


def _parse_authority(scheme: bytes, authority: bytes) -> tuple[Userinfo | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(scheme, authority[at + 1 :] if at >= 0 else authority)
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not _valid_userinfo(userinfo):
        raise _Inner("net/url: invalid userinfo")
    if b":" not in userinfo:
        return Userinfo(unescape(userinfo, ENCODE_USER_PASSWORD)), host
    username, _, password = userinfo.partition(b":")
    return (
        Userinfo(
            unescape(username, ENCODE_USER_PASSWORD),
            unescape(password, ENCODE_USER_PASSWORD),
            True,
        ),
        host,
    )


def _with_path(u: URL, p: bytes) -> URL:
    path = unescape(p, ENCODE_PATH)
    raw = b"" if escape(path, ENCODE_PATH) == p else p
    return replace(u, path=path, raw_path=raw)


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(b < 0x20 or b == 0x7F for b in raw):
        raise _Inner("net/url: invalid control character in URL")
    if not raw and via_request:
        raise _Inner("empty url")
    if raw == b"*":
        return URL(path=b"*")
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    u = URL(scheme=scheme)
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        u = replace(u, force_query=True)
        rest = rest[:-1]
    else:
        rest, _, query = rest.partition(b"?")
        u = replace(u, raw_query=query)
    if not rest.startswith(b"/"):
        if scheme:
            return replace(u, opaque=rest)
        if via_request:
            raise _Inner("invalid URI for request")
        segment = rest.partition(b"/")[0]
        if b":" in segment:
            raise _Inner("first path segment in URL cannot contain colon")
    if (scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        user, host = _parse_authority(scheme, authority)
        u = replace(u, user=user, host=host)
    elif scheme and rest.startswith(b"/"):
        u = replace(u, omit_host=True)
    return _with_path(u, rest)


@cached("cel.library.urls", 1024, lru=False)
def parse(raw: str) -> URL:
    """Go's url.Parse (fragment allowed). Cached: carriers are parsed on every call."""
    data = raw.encode("utf-8")
    head, _, frag = data.partition(b"#")
    try:
        u = _parse(head, False)
    except _Inner as err:
        raise UrlError(f"parse {go_quote_bytes(head)}: {err}") from None
    if not frag:
        return u
    try:
        fragment = unescape(frag, ENCODE_FRAGMENT)
    except _Inner as err:
        raise UrlError(f"parse {go_quote(raw)}: {err}") from None
    raw_fragment = b"" if escape(fragment, ENCODE_FRAGMENT) == frag else frag
    return replace(u, fragment=fragment, raw_fragment=raw_fragment)


@cached("cel.library.request_uris", 1024, lru=False)
def parse_request_uri(raw: str) -> URL:
    """Go's url.ParseRequestURI (absolute URI or absolute path, no fragment split)."""
    try:
        return _parse(raw.encode("utf-8"), True)
    except _Inner as err:
        raise UrlError(f"parse {go_quote(raw)}: {err}") from None
