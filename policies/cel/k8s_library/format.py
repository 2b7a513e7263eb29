"""format: `format.named(string)`, `format.<name>()` and `<NamedFormat>.validate(string)`.

The validators reproduce the apimachinery / kube-openapi checks upstream
calls, with their messages (see `_VALIDATORS`). Their regular expressions
run on RE2, as Go's do (linear time, whatever the input).

Carriers: a format is the tagged list `[TAG_FORMAT, <name>]`; the optionals
these functions return are `[TAG_OPTIONAL]` (none) and `[TAG_OPTIONAL, v]`.
cel-expr-python cannot build a real CEL optional from Python, so this
library also registers `hasValue()` and `value()` for that carrier. The
evaluation's walk (`eval.runtime_cost`) turns the carrier into a real optional
as soon as `format.named` or `validate` returns it, so `orValue()`, `or()`,
`==` against `optional.none()` and the other optional functions behave as in
cel-go; the program alone (cel-cpp's built-in `or`/`orValue` accept only real
optionals) would not.
"""

from __future__ import annotations

from collections.abc import Callable

from cel_expr_python import cel

from ...core.k8s_names import (
    DNS1123_LABEL_FMT,
    QNAME_FMT,
    SUBDOMAIN_FMT,
    dns1123_subdomain_errors,
    max_len_error,
    qualified_name_errors,
    regex_error,
    utf8_len,
)
from ._gourl import UrlError, parse_request_uri
from ._re2 import compile_re2
from ._types import (
    STRING,
    TAG_FORMAT,
    TAG_OPTIONAL,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    list_of,
    no_such_overload,
    optional_none,
    optional_of,
    optional_some,
    t,
    unwrap_tagged,
    want_str,
)

NAME = "format"
FORMAT_TYPE = t("kubernetes.NamedFormat")

# --------------------------------------------------------------------------
# apimachinery validation helpers (messages as upstream words them)

_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_VALUE_FMT = "(" + QNAME_FMT + ")?"

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)

# Upstream matches "^" + fmt + "$"; `fullmatch` anchors both ends the same way.
_DNS1123_LABEL_RE = compile_re2(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = compile_re2(SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = compile_re2(_DNS1035_LABEL_FMT)
_LABEL_VALUE_RE = compile_re2(_LABEL_VALUE_FMT)
_UUID_RE = compile_re2("[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_BASE64_RE = compile_re2("(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})")
_DATE_RE = compile_re2("[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME_RE = compile_re2("([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")




def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if utf8_len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    return dns1123_subdomain_errors(value)


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if utf8_len(value) > 63:
        errs.append(max_len_error(63))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """content.IsLabelKey (what validation.IsQualifiedName now is): its wording, same grammar."""
    return qualified_name_errors(value, noun="a valid label key", unit="bytes")


def is_label_value(value: str) -> list[str]:
    errs = []
    if utf8_len(value) > 63:
        errs.append(max_len_error(63, "bytes"))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    """apimachinery's maskTrailingDash, which drops *two* bytes before adding "a"."""
    if not name.endswith("-"):
        return name
    data = name.encode("utf-8")
    if len(data) < 2:
        # Go slices name[:len(name)-2] and panics; cel-go reports the panic.
        raise CelError("internal error: runtime error: slice bounds out of range [:-1]")
    return data[:-2].decode("utf-8", errors="replace") + "a"


def _prefixed(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda s: check(_mask_trailing_dash(s))


def _uri(s: str) -> list[str]:
    try:
        parse_request_uri(s)
    except UrlError as err:
        return [str(err)]
    return []


def _days_in(month: int, year: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def is_date(s: str) -> bool:
    """time.Parse("2006-01-02", s) == nil."""
    if not _DATE_RE.fullmatch(s):
        return False
    year, month, day = int(s[0:4]), int(s[5:7]), int(s[8:10])
    return 1 <= month <= 12 and 1 <= day <= _days_in(month, year)


def is_datetime(s: str) -> bool:
    """kube-openapi strfmt.IsDateTime."""
    if len(s.encode("utf-8")) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME_RE.fullmatch(parts[1])
    if m is None:
        return False
    return m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


def _flag(ok: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda s: [] if ok(s) else [message]


_VALIDATORS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": _prefixed(is_dns1123_label),
    "dns1123SubdomainPrefix": _prefixed(is_dns1123_subdomain),
    "dns1035LabelPrefix": _prefixed(is_dns1035_label),
    "labelValue": is_label_value,
    "uri": _uri,
    "uuid": _flag(lambda s: _UUID_RE.fullmatch(s) is not None, "does not match the UUID format"),
    "byte": _flag(lambda s: _BASE64_RE.fullmatch(s) is not None, "invalid base64"),
    "date": _flag(is_date, "invalid date"),
    "datetime": _flag(is_datetime, "invalid datetime"),
}

FORMAT_NAMES: tuple[str, ...] = tuple(_VALIDATORS)


def _named(raw: object) -> list[object]:
    name = want_str(raw)
    if name in _VALIDATORS:
        return optional_some([TAG_FORMAT, name])
    return optional_none()


def _validate(fmt: object, raw: object) -> list[object]:
    name = unwrap_tagged(fmt, TAG_FORMAT)
    check = _VALIDATORS.get(name) if isinstance(name, str) else None
    if check is None:
        raise no_such_overload()
    errors = check(want_str(raw))
    return optional_some(errors) if errors else optional_none()


def _constant(name: str) -> Callable[[], list[str]]:
    return lambda: [TAG_FORMAT, name]


def _optional_parts(value: object) -> list[object]:
    if type(value) is not list or not value or value[0] != TAG_OPTIONAL or len(value) > 2:
        raise no_such_overload()
    return value


def _has_value(value: object) -> bool:
    return len(_optional_parts(value)) == 2


def _value(value: object) -> object:
    parts = _optional_parts(value)
    if len(parts) != 2:
        raise CelError("optional.none() dereference")
    return parts[1]


DECLARATIONS: tuple[Decl, ...] = (
    Decl("validate", "format-validate", (STRING,), optional_of(list_of(STRING)), target=FORMAT_TYPE),
    Decl("format.named", "format-named", (STRING,), optional_of(FORMAT_TYPE)),
    *(Decl(f"format.{name}", f"format.{name}", (), FORMAT_TYPE) for name in FORMAT_NAMES),
)

_L = cel.Type.LIST

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("validate", "format-validate", (_L, cel.Type.STRING), _L, _validate, member=True),
        Runtime("format.named", "format-named", (cel.Type.STRING,), _L, _named),
        *(Runtime(f"format.{name}", f"format.{name}", (), _L, _constant(name)) for name in FORMAT_NAMES),
        # The optional carrier's accessors (see module docstring).
        Runtime("hasValue", "k8s_optional_has_value", (_L,), cel.Type.BOOL, _has_value, True),
        Runtime("value", "k8s_optional_value", (_L,), cel.Type.DYN, _value, True),
    ),
)
