"""json_text renders exactly what `json.dumps(value, indent=2)` does, for any JSON-able value."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from dra_affinity.lint.json_text import (
    ELEMENT_NEWLINE,
    Rendered,
    indented,
    members_text,
    write_indented,
    write_members,
)
from hypothesis import given, settings
from hypothesis import strategies as st

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.lists(inner, max_size=3).map(tuple)
                       | st.dictionaries(_KEYS, inner, max_size=4), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_any_value_renders_as_the_json_module_renders_it(value: Any) -> None:
    expected = json.dumps(value, indent=2)
    assert indented(value) == expected
    out = io.StringIO()
    write_indented(value, out.write)
    assert out.getvalue() == expected


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _VALUES, max_size=5))
def test_a_report_shaped_document_streams_the_same_text(doc: dict[str, Any]) -> None:
    out = io.StringIO()
    write_indented(doc, out.write)
    assert out.getvalue() == json.dumps(doc, indent=2)


def test_what_json_cannot_carry_is_refused_as_json_refuses_it() -> None:
    for bad in ({"a": object()}, {(1, 2): 1}, [b"bytes"]):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            indented(bad)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _VALUES, max_size=5))
def test_members_stream_iterators_as_lists_and_are_asked_for_in_order(doc: dict[str, Any]) -> None:
    """What `dry-run --format json` relies on: each member is asked for only once the ones
    before it are written (its findings follow its streamed results), and an iterator value
    reads as the list it yields, `[]` when it yields nothing."""
    out = io.StringIO()
    asked: list[str] = []

    def members() -> Any:
        for key, value in doc.items():
            asked.append(out.getvalue())
            yield key, (iter(value) if isinstance(value, list) else value)

    write_members(members(), out.write)
    expected = json.dumps(doc, indent=2)
    assert out.getvalue() == expected
    assert all(expected.startswith(prefix) for prefix in asked)
    assert [len(p) for p in asked] == sorted(len(p) for p in asked)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _VALUES, min_size=1, max_size=5),
       st.dictionaries(st.text(max_size=5), _VALUES, min_size=1, max_size=5))
def test_members_texts_splice_into_the_objects_text(head: dict[str, Any], tail: dict[str, Any]) -> None:
    """What dry-run's cached result tails rely on: an object's members rendered in two parts
    and joined read as the whole object, at any indentation."""
    head = {"h" + k: v for k, v in head.items()}  # disjoint keys: {**head, **tail} keeps both
    tail = {"t" + k: v for k, v in tail.items()}
    for newline in ("\n", "\n    "):
        inner = newline + "  "
        spliced = ("{" + inner + members_text(head.items(), newline) + "," + inner
                   + members_text(tail.items(), newline) + newline + "}")
        assert spliced == indented({**head, **tail}, newline)
    assert indented({**head, **tail}) == json.dumps({**head, **tail}, indent=2)


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES, max_size=300), _VALUES)
def test_rendered_elements_are_written_as_the_list_json_writes(elements: list[Any], after: Any) -> None:
    """A `Rendered` member (texts at `ELEMENT_NEWLINE`, written in batches) reads as the list
    of its elements, empty or longer than a batch, and the members after it follow."""
    out = io.StringIO()
    texts = (indented(e, ELEMENT_NEWLINE) for e in elements)
    write_members(iter([("results", Rendered(texts)), ("after", after)]), out.write)
    assert out.getvalue() == json.dumps({"results": elements, "after": after}, indent=2)


def test_rendered_lists_around_the_batch_size_close_where_json_closes_them() -> None:
    for n in (0, 1, 127, 128, 129, 256, 300):
        out = io.StringIO()
        write_members(iter([("xs", Rendered(str(i) for i in range(n))), ("n", n)]), out.write)
        assert out.getvalue() == json.dumps({"xs": list(range(n)), "n": n}, indent=2), n
