"""Kubernetes name validation (apimachinery `IsQualifiedName`, `IsDNS1123Subdomain`).

The messages are upstream's words, so a finding reads like the API server's reply.
"""

from __future__ import annotations

import json
import re

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(_QNAME_FMT)
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QNAME_MAX = 63
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = f"{_LABEL_FMT}(\\.{_LABEL_FMT})*"
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MAX = 253
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    text = msg
    if examples:
        text += " (e.g. '" + "',  or '".join(examples) + "', regex used for validation is '" + fmt + "')"
    else:
        text += " (regex used for validation is '" + fmt + "')"
    return text


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > _SUBDOMAIN_MAX:
        errs.append(f"must be no more than {_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN_RE.fullmatch(value):  # Go's `^…$` has no newline exception
        errs.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """Every reason `value` is not a qualified name; empty when it is one."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > _QNAME_MAX:
        errs.append(f"name part must be no more than {_QNAME_MAX} characters")
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


_SURROGATE = re.compile("[\ud800-\udfff]")


def go_string(value: str) -> str:
    """The string Go's JSON decoder would hold: lone UTF-16 surrogates become U+FFFD.

    Python's `json` keeps them, and they cannot be encoded as UTF-8; the API server never
    sends one, so every string rules measure or compile goes through this first.
    """
    return value if value.isascii() else _SURROGATE.sub("\ufffd", value)


def go_quote(value: str) -> str:
    """Go's `%q` for the common cases (field errors quote string values with it)."""
    return json.dumps(value, ensure_ascii=False)
