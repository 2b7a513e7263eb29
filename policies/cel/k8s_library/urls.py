"""kubernetes.urls: `url(string)`, `isURL` and the `kubernetes.URL` getters.

Carrier: Go's `URL.String()` of the parsed URL. Upstream compares URLs by
exactly that text, and converts a URL to a string the same way, so `==` and
returned values agree with upstream. Getters re-parse the carrier (with the
lenient `url.Parse`, as upstream's second parse does).
"""

from __future__ import annotations

from cel_expr_python import cel

from ._gourl import URL, UrlError, parse, parse_request_uri
from ._types import (
    BOOL,
    STRING,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    from_go_bytes,
    list_of,
    map_of,
    no_such_overload,
    t,
    want_str,
)

NAME = "kubernetes.urls"
URL_TYPE = t("kubernetes.URL")

_PARSE_ERROR = "URL parse error during conversion from string: "


def parse_url(raw: str) -> URL:
    """Upstream's stringToUrl: ParseRequestURI must accept it, Parse builds it."""
    try:
        parse_request_uri(raw)
        return parse(raw)
    except UrlError as err:
        raise CelError(_PARSE_ERROR + str(err)) from None


def carrier_to_url(value: object) -> URL:
    try:
        return parse(want_str(value))
    except UrlError:
        raise no_such_overload() from None


def _url(raw: object) -> str:
    return str(parse_url(want_str(raw)))


def _is_url(raw: object) -> bool:
    try:
        parse_request_uri(want_str(raw))
    except UrlError:
        return False
    return True


def _scheme(value: object) -> str:
    return from_go_bytes(carrier_to_url(value).scheme)


def _host(value: object) -> str:
    return from_go_bytes(carrier_to_url(value).host)


def _hostname(value: object) -> str:
    return from_go_bytes(carrier_to_url(value).hostname())


def _port(value: object) -> str:
    return from_go_bytes(carrier_to_url(value).port())


def _escaped_path(value: object) -> str:
    return from_go_bytes(carrier_to_url(value).escaped_path())


def _query(value: object) -> dict[str, list[str]]:
    return carrier_to_url(value).query()


DECLARATIONS: tuple[Decl, ...] = (
    Decl("url", "string_to_url", (STRING,), URL_TYPE),
    Decl("getScheme", "url_get_scheme", (), STRING, target=URL_TYPE),
    Decl("getHost", "url_get_host", (), STRING, target=URL_TYPE),
    Decl("getHostname", "url_get_hostname", (), STRING, target=URL_TYPE),
    Decl("getPort", "url_get_port", (), STRING, target=URL_TYPE),
    Decl("getEscapedPath", "url_get_escaped_path", (), STRING, target=URL_TYPE),
    Decl("getQuery", "url_get_query", (), map_of(STRING, list_of(STRING)), target=URL_TYPE),
    Decl("isURL", "is_url_string", (STRING,), BOOL),
)

_S = cel.Type.STRING

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("url", "string_to_url", (_S,), _S, _url),
        Runtime("getScheme", "url_get_scheme", (_S,), _S, _scheme, member=True),
        Runtime("getHost", "url_get_host", (_S,), _S, _host, member=True),
        Runtime("getHostname", "url_get_hostname", (_S,), _S, _hostname, member=True),
        Runtime("getPort", "url_get_port", (_S,), _S, _port, member=True),
        Runtime("getEscapedPath", "url_get_escaped_path", (_S,), _S, _escaped_path, member=True),
        Runtime(
            "getQuery",
            "url_get_query",
            (_S,),
            cel.Type.Map(cel.Type.STRING, cel.Type.List(cel.Type.STRING)),
            _query,
            member=True,
        ),
        Runtime("isURL", "is_url_string", (_S,), cel.Type.BOOL, _is_url),
    ),
)
