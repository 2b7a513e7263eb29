"""CEL result values as reports print them (JSON documents, text lines).

Why one place: `cel check` and `dry-run` both show what an expression returned, and a result can
be anything CEL has — a timestamp, bytes, a library value carried in an internal form. Both
reports must show it the same way, and JSON must never fail on it.
"""

from __future__ import annotations

from typing import Any


def json_value(value: object) -> Any:
    """A result as users know it (`k8s_library.display_value`), then JSON-friendly: bytes as
    UTF-8 text (invalid sequences replaced), anything else unknown as its string."""
    from ..policies.cel.k8s_library import display_value

    return _json_friendly(display_value(value))


def _json_friendly(value: object) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): _json_friendly(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_friendly(v) for v in value]
    return str(value)
