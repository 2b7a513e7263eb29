"""Kubernetes name validation (apimachinery `IsQualifiedName`, `IsDNS1123Subdomain`).

The messages are upstream's words, so a finding reads like the API server's reply. The grammars
(`*_FMT`, Go regular-expression syntax), their messages and `regex_error` are public: the VAP
fallback (`policies.rules.vap`) and the CEL `format` library (`k8s_library.format`, which runs them on
RE2 and counts bytes as its upstream checks do) build on the same definitions.
"""

from __future__ import annotations

import json
import re

QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(QNAME_FMT)
QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
QNAME_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
SUBDOMAIN_FMT = f"{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"
_SUBDOMAIN_RE = re.compile(SUBDOMAIN_FMT)
SUBDOMAIN_MAX = 253
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """validation.RegexError (its odd double space before "or" included)."""
    text = msg
    if examples:
        text += " (e.g. '" + "',  or '".join(examples) + "', regex used for validation is '" + fmt + "')"
    else:
        text += " (regex used for validation is '" + fmt + "')"
    return text


def utf8_len(value: str) -> int:
    """Go's `len` of a string: UTF-8 bytes (a lone surrogate counts as the 3 bytes of U+FFFD)."""
    return len(value.encode("utf-8", "surrogatepass"))


def max_len_error(limit: int, unit: str = "characters") -> str:
    """apimachinery's `MaxLenError` ("characters", util/validation) or the `content` package's
    ("bytes"); both measure bytes, as Go's `len` does."""
    return f"must be no more than {limit} {unit}"


def dns1123_subdomain_errors(value: str, unit: str = "characters") -> list[str]:
    errs = []
    if utf8_len(value) > SUBDOMAIN_MAX:
        errs.append(max_len_error(SUBDOMAIN_MAX, unit))
    if not _SUBDOMAIN_RE.fullmatch(value):  # Go's `^…$` has no newline exception
        errs.append(regex_error(SUBDOMAIN_MSG, SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name_errors(value: str, *, noun: str = "a qualified name",
                          unit: str = "characters") -> list[str]:
    """Every reason `value` is not a qualified name; empty when it is one.

    `noun`/`unit` select the wording: `IsQualifiedName` (the default) or the label-key
    check of apimachinery's `content` package (`"a valid label key"`, `"bytes"`), which
    the CEL format library reports with.
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain_errors(prefix, unit))
    else:
        return [
            f"{noun} "
            + regex_error(QNAME_MSG, QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif utf8_len(name) > QNAME_MAX:
        errs.append("name part " + max_len_error(QNAME_MAX, unit))
    if not _QNAME_RE.fullmatch(name):
        errs.append("name part " + regex_error(QNAME_MSG, QNAME_FMT, "MyName", "my.name", "123-abc"))
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
