"""Findings rendered the way the API server renders field errors, warnings and audit data.

The engine's error messages are already API-server field errors (`<field>: <Type>: <detail>`,
reference §4.1), so a denial is assembled exactly as `apierrors.NewInvalid` would: one
`Status` with code 422, reason `Invalid`, message
`ResourceSlice.resource.k8s.io "<name>" is invalid: [<err1>, <err2>]` and one
`details.causes[]` entry per error with the machine-readable `FieldValue…` reason, the body
and the field path. The API server keeps a webhook's `details`, so these reach `kubectl`.

Advisories become `warnings`, which the API server relays as HTTP `Warning` headers and
`kubectl` prints: the API asks for at most 120 characters each and ~4 KiB in all (beyond that
it truncates and then drops them), so we fit them ourselves and say when some were left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..policies.core.api import RESOURCE_GROUP
from ..policies.core.cache import cached
from ..policies.core.findings import Finding, Severity
from ..policies.rules.catalog import catalog

MAX_WARNING_CHARS = 120
MAX_WARNINGS_BYTES = 4096
SLICE_GROUP = RESOURCE_GROUP
SLICE_KIND = "ResourceSlice"

# Field-error type string (reference §4.1) → metav1.CauseType.
_CAUSE_REASONS = (
    ("Not found", "FieldValueNotFound"),
    ("Required value", "FieldValueRequired"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Invalid value", "FieldValueInvalid"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Internal error", "InternalError"),
)


def field_and_body(finding: Finding, object_name: str | None = None) -> tuple[str, str]:
    """The field path and the message without its `<field>: ` prefix.

    Pool findings point at several slices; the location on the slice being admitted is the
    one its author can act on.
    """
    location = finding.primary
    if object_name is not None:
        for candidate in finding.locations:
            if candidate.object is not None and candidate.object.name == object_name:
                location = candidate
                break
    path = location.field_path
    prefix = f"{path}: "
    body = finding.message[len(prefix):] if path and finding.message.startswith(prefix) else finding.message
    return path, body


def cause_reason(body: str) -> str:
    for prefix, reason in _CAUSE_REASONS:
        if body.startswith(prefix):
            return reason
    return "FieldValueInvalid"


def _causes(name: str, errors: Sequence[Finding]) -> tuple[list[dict[str, str]], str]:
    """One `details.causes[]` entry per error, and the errors joined as the API server joins
    them (one alone, several in brackets)."""
    causes = []
    rendered = []
    for finding in errors:
        path, body = field_and_body(finding, name)
        causes.append({"reason": cause_reason(body), "message": body, "field": path})
        rendered.append(f"{path}: {body}" if path else body)
    joined = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    return causes, joined


def invalid_status(name: str, errors: Sequence[Finding]) -> dict[str, Any]:
    """The `metav1.Status` of `apierrors.NewInvalid(ResourceSlice, name, errs)`."""
    causes, joined = _causes(name, errors)
    return {
        "metadata": {},
        "status": "Failure",
        "message": f'{SLICE_KIND}.{SLICE_GROUP} "{name}" is invalid: {joined}',
        "reason": "Invalid",
        "details": {"name": name, "group": SLICE_GROUP, "kind": SLICE_KIND, "causes": causes},
        "code": 422,
    }


MAX_BAD_REQUEST_CHARS = 1024
"""Characters of a 400 status message: the findings are clipped already, their sum is too."""


def bad_request_status(name: str, errors: Sequence[Finding]) -> dict[str, Any]:
    """The status of an object that cannot be read as a ResourceSlice (a wrongly typed or
    missing structural field): code 400, reason `BadRequest` — what controller-runtime answers
    when its decoder fails (`admission.Errored(http.StatusBadRequest, err)`), with the field
    paths in `details.causes` as for a denial."""
    causes, joined = _causes(name, errors)
    message = f'{SLICE_KIND}.{SLICE_GROUP} "{name}" cannot be decoded: {joined}'
    return {
        "metadata": {},
        "status": "Failure",
        "message": _clip(message, MAX_BAD_REQUEST_CHARS),
        "reason": "BadRequest",
        "details": {"name": name, "group": SLICE_GROUP, "kind": SLICE_KIND, "causes": causes},
        "code": 400,
    }


_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]+")


def _printable(text: str) -> str:
    """Warnings travel as HTTP header values: one line, ASCII, no control characters."""
    return " ".join(_NOT_PRINTABLE.sub(" ", text.replace("\u2026", "...")).split())


def _clip(text: str, limit: int = MAX_WARNING_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


@cached("webhook.warning_texts", 4096, lru=False)
def warning_text(finding: Finding) -> str:
    """`<rule> <field>: <message>`, or, when that is too long, the rule's one-line summary
    with a pointer to `dra-affinity rules <id>` for the full explanation."""
    path, body = field_and_body(finding)
    where = f" {path}" if path else ""
    if len(finding.rule) + len(where) + len(body) + 2 <= MAX_WARNING_CHARS:
        full = _printable(f"{finding.rule}{where}: {body}")
        if len(full) <= MAX_WARNING_CHARS:
            return full
    rule = catalog().get(finding.rule)
    summary = rule.summary if rule is not None else body
    short = _printable(f"{finding.rule}{where}: {summary} (see `dra-affinity rules {finding.rule}`)")
    if len(short) <= MAX_WARNING_CHARS:
        return short
    return _clip(_printable(f"{finding.rule}{where}: {summary}"))


def fit_warnings(texts: Iterable[str], budget: int = MAX_WARNINGS_BYTES) -> list[str]:
    """De-duplicated, in order, within `budget` bytes; the last one says how many were cut."""
    unique = list(dict.fromkeys(t for t in texts if t))
    out: list[str] = []
    used = 0
    for i, text in enumerate(unique):
        size = len(text.encode("utf-8"))
        remaining = len(unique) - i - 1
        note_room = 0 if remaining == 0 else 80  # room for the "N more" note after this one
        if used + size + note_room > budget:
            omitted = len(unique) - i
            out.append(f"{omitted} more warning(s) omitted; run `dra-affinity lint` on the slice for all")
            break
        out.append(text)
        used += size
    return out


def audit_annotations(decision: str, findings: Sequence[Finding], pool_check: str | None) -> dict[str, str]:
    """Rule ids per severity (no messages: audit logs are not for object contents).

    The API server prefixes each key with the webhook's name.
    """
    out = {"decision": decision}
    for severity in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        ids = sorted({f.rule for f in findings if f.severity is severity})
        if ids:
            out[f"{severity.label}-rules"] = ",".join(ids)
    if pool_check is not None:
        out["pool-check"] = pool_check
    return out
