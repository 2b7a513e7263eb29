"""`json.dumps(value, indent=2)`, twice as fast, and written out in pieces.

The json module has no C encoder for indented output (CPython 3.11 falls back to a Python
generator yielding one small chunk per token): for `locks --format json` of a 100,000-claim
cluster (25 MB) that was 1.2 of its ~8 CPU seconds, and the joined chunks 170 MB of its peak
RSS. Here each value is rendered by one recursive function that joins strings with the C
string encoder, and the top-level lists are written element by element. The text is the
json module's, byte for byte (ASCII-escaped strings, `NaN`/`Infinity`, keys of the types
json converts; tuples are lists) — `tests/lint/test_json_text.py` compares the two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii as _string
from typing import Any

_INF = float("inf")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INF:
        return "Infinity"
    if value == -_INF:
        return "-Infinity"
    return float.__repr__(value)


def _key(key: object) -> str:
    """A dict key as the json module writes it: the scalar types it converts, as their JSON
    text in quotes (none of those texts needs escaping); others raise."""
    if isinstance(key, str):
        return _string(key)
    if key is None or isinstance(key, (int, float)):  # bool is an int
        return '"' + _scalar(key) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def indented(value: Any, newline: str = "\n") -> str:
    """`value` as `json.dumps(value, indent=2)` renders it at the indentation of `newline`."""
    if type(value) is str:
        return _string(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{" + newline + "  " + members_text(value.items(), newline) + newline + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        inner = newline + "  "
        return "[" + inner + ("," + inner).join([indented(v, inner) for v in value]) + newline + "]"
    return _scalar(value)


def members_text(members: Iterable[tuple[object, Any]], newline: str = "\n") -> str:
    """The members of an object as `indented` writes them between its first indentation and
    its last newline: for a non-empty dict `d`, `indented(d, newline)` is
    `"{" + newline + "  " + members_text(d.items(), newline) + newline + "}"`. Two texts of
    members at one indentation join with `"," + newline + "  "`, so a caller can render the
    members its values share once and splice them (dry-run's results)."""
    inner = newline + "  "
    return ("," + inner).join([_key(k) + ": " + indented(v, inner) for k, v in members])


ELEMENT_NEWLINE = "\n    "
"""The indentation of an element of a list member of the top-level object (`write_members`):
what `Rendered` texts are rendered at."""


class Rendered:
    """A list member whose elements come as their text, each already what
    `indented(element, ELEMENT_NEWLINE)` gives: `write_members` writes them as they are. For
    a command that renders its elements faster than the generic walk (dry-run's results,
    whose shared parts are rendered once)."""

    __slots__ = ("texts",)

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = texts


def write_indented(value: Any, write: Callable[[str], object]) -> None:
    """`write(json.dumps(value, indent=2))`, with a top-level dict's list values written one
    element at a time (the devices of a cluster report), so the whole text is never held."""
    if not isinstance(value, dict) or not value:
        write(indented(value))
        return
    write_members(value.items(), write)


def write_members(members: Iterable[tuple[object, Any]], write: Callable[[str], object]) -> None:
    """`write_indented` of the object made of `members`, taken one at a time: a member is only
    asked for once the ones before it are written, and a member whose value is an iterator
    (not a list) is streamed as a list, so a command can write its results as it decides them
    and compute what follows them (its findings) afterwards; a `Rendered` member's texts are
    written as they come. The text is still json's."""
    write("{")
    empty = True
    for key, item in members:
        write(("\n  " if empty else ",\n  ") + _key(key) + ": ")
        empty = False
        if isinstance(item, Rendered):
            _write_elements(item.texts, write)
        elif isinstance(item, Iterator) or (isinstance(item, (list, tuple)) and item):
            _write_elements((indented(element, ELEMENT_NEWLINE) for element in item), write)
        else:
            write(indented(item, "\n  "))
    write("}" if empty else "\n}")


_BATCH = 128
"""Elements joined per `write` call: a call per element was a tenth of dry-run's CPU time."""


def _write_elements(texts: Iterable[str], write: Callable[[str], object]) -> None:
    """A list member from its elements' texts, written a batch of elements at a time."""
    separator = "," + ELEMENT_NEWLINE
    started = False
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == _BATCH:
            write(("," if started else "[") + ELEMENT_NEWLINE + separator.join(batch))
            started, batch = True, []
    if batch:
        write(("," if started else "[") + ELEMENT_NEWLINE + separator.join(batch))
        started = True
    write("\n  ]" if started else "[]")
