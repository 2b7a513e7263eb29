"""Bounded echoes of untrusted input: what a message, a reply or a log line may quote.

Why one place: a client may send a 6 MiB `kind` or a 100 KB uid, and a message quoting it
whole would echo it in the webhook's 400 body and every log line that names it. Whatever a
user or a client sent is quoted through
these helpers, so no message grows with its input.
"""

from __future__ import annotations

import json

MAX_ECHO_CHARS = 256
"""Characters of one quoted input value (Kubernetes clips field values in its errors too)."""

_ELLIDED = "...(truncated, {n} characters in all)"


def clip_text(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` itself when short, else its start and how long it was."""
    if len(text) <= limit:
        return text
    return text[:limit] + _ELLIDED.format(n=len(text))


def clip_value(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """A decoded JSON value as JSON text (strings quoted), clipped to `limit` characters.

    The value is rendered only as far as needed: a huge list is not serialised whole first.
    """
    if isinstance(value, str):
        return json.dumps(clip_text(value, limit))
    encoder = json.JSONEncoder(ensure_ascii=False, default=repr)
    parts: list[str] = []
    size = 0
    for chunk in encoder.iterencode(value):
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return "".join(parts)[:limit] + "...(truncated)"
    return "".join(parts)
