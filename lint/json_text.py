"""JSON reports as `json.dumps(value, indent=2)` writes them, written out in pieces.

A report's top-level lists (a cluster's devices, dry-run's results) are written element by
element, and a member whose value is an iterator is streamed as a list, so a command writes
its results as it decides them and the whole text is never held (`locks` at 100,000 claims,
`dry-run --format json` at 390 MB). Each element is `json.dumps`'s text, indented to its place
(a JSON text holds no raw newline but its indentation's), so the whole is json's text byte for
byte — `tests/lint/test_json_text.py` compares the two.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring_ascii as _string
from typing import Any


def indented(value: Any, newline: str = "\n") -> str:
    """`value` as `json.dumps(value, indent=2)` renders it at the indentation of `newline`."""
    return json.dumps(value, indent=2).replace("\n", newline)


def members_text(members: Iterable[tuple[object, Any]], newline: str = "\n") -> str:
    """The members of an object as `indented` writes them between its first indentation and
    its last newline: for a non-empty dict `d`, `indented(d, newline)` is
    `"{" + newline + "  " + members_text(d.items(), newline) + newline + "}"`. Two texts of
    members at one indentation join with `"," + newline + "  "`, so a caller can render the
    members its values share once and splice them (dry-run's results)."""
    inner = newline + "  "
    return ("," + inner).join([_key(k) + ": " + indented(v, inner) for k, v in members])


def _key(key: object) -> str:
    """A dict key as the json module writes it (it converts None, bool, int and float keys
    to their JSON text, quoted; others raise)."""
    if isinstance(key, str):
        return _string(key)
    return json.dumps({key: None})[1:-len(": null}")]


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
"""Elements joined per `write` call: a call per element is a visible share of dry-run's CPU time."""


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
