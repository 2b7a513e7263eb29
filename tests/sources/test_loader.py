"""The CLI loader: documents, positions, List unpacking and input errors (SA000)."""

from __future__ import annotations

import codecs
import io
import json
import os
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import dra_affinity.sources.loader as loader_module
import pytest
import yaml
from dra_affinity.policies.core.findings import Finding, Location, Severity
from dra_affinity.policies.core.source import FieldPath, Position
from dra_affinity.sources.loader import LoadedDocument, LoadResult, load_paths, load_text
from dra_affinity.sources.yaml_positions import allowed_alias_ratio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: meta
spec:
  driver: networking.example.com
  pool:
    name: node-a
    generation: 7
    resourceSliceCount: 2
  sharingAffinity:
    - name: subnet
      expression: |
        object.kind == "NICConfig" ? object.subnetID : ""
    - name: pkey
      expression: 'object.?ibPKey.orValue("")'
"""


def where(text: str, needle: str, nth: int = 0) -> Position:
    """1-based line and column of the `nth` occurrence of `needle` in `text`."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(text.count("\n", 0, offset) + 1, offset - line_start + 1)


def only_doc(result: LoadResult) -> LoadedDocument:
    assert not result.findings, [f.message for f in result.findings]
    assert len(result.documents) == 1
    return result.documents[0]


def messages(result: LoadResult) -> list[str]:
    return [f.message for f in result.findings]


def sa000(result: LoadResult) -> list[Finding]:
    assert all(f.rule == "SA000" and f.severity is Severity.ERROR for f in result.findings)
    return result.findings


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- values and positions ------------------------------------------------------------------


def test_positions_of_nested_list_items_point_at_value_and_key() -> None:
    doc = only_doc(load_text(SLICE, name="s.yaml"))
    src = doc.source
    expr: FieldPath = ("spec", "sharingAffinity", 1, "expression")
    assert src.positions[expr] == where(SLICE, "'object.?ibPKey")
    assert src.key_positions[expr] == where(SLICE, "expression", 1)
    assert src.positions[("spec", "sharingAffinity", 0)] == where(SLICE, "name: subnet")
    assert ("spec", "sharingAffinity", 0) not in src.key_positions  # list items have no key
    assert src.positions[("spec", "sharingAffinity", 0, "expression")] == where(SLICE, "|")
    assert src.key_positions[("spec", "pool", "generation")] == where(SLICE, "generation")
    assert src.positions[()] == Position(1, 1)
    assert doc.data["spec"]["sharingAffinity"][0]["expression"].startswith("object.kind ==")
    assert (doc.kind, doc.api_version, doc.item, src.file, src.document) == (
        "ResourceSlice", "resource.k8s.io/v1", None, "s.yaml", 0,
    )  # fmt: skip


def test_location_of_a_missing_field_falls_back_to_its_parent_key() -> None:
    doc = only_doc(load_text(SLICE, name="s.yaml"))
    location = Location.at(doc.source, ("spec", "sharingAffinity", 0, "missing"))
    assert location.position == where(SLICE, "name: subnet")
    assert location.file == "s.yaml"
    assert location.field_path == "spec.sharingAffinity[0].missing"


def test_flow_style_positions() -> None:
    text = "a: {b: [1, {c: x}], d: 'q'}\n"
    doc = only_doc(load_text(text))
    assert doc.source.positions[("a", "b", 1, "c")] == where(text, "x")
    assert doc.source.key_positions[("a", "d")] == where(text, "d:")
    assert doc.data == {"a": {"b": [1, {"c": "x"}], "d": "q"}}


def test_multi_document_positions_are_absolute_and_documents_are_numbered() -> None:
    text = f"{SLICE}---\n# comment\n\n---\n{SLICE}...\n---\n{SLICE}"
    result = load_text(text, name="multi.yaml")
    assert not result.findings
    assert [d.source.document for d in result.documents] == [0, 2, 3]
    path: FieldPath = ("spec", "sharingAffinity", 1, "name")
    for nth, doc in enumerate(result.documents):
        assert doc.source.positions[path] == where(text, "pkey", nth)


def test_scalar_types_follow_kubectl_not_yaml_1_1() -> None:
    """What `kubectl annotate --local -f - x=y -o json` printed for this text (kubectl 1.37):
    go-yaml v2's typing, then the JSON kubectl sends (`1e5` → 100000, `1.0e+3` → 1000)."""
    text = """\
int: 42
neg: -7
hex: 0x1F
octal: 017
octal_o: 0o17
under: 1_000
sexagesimal: 1:30
float: 1.5
exp: 1.0e+3
bool: true
y1: yes
y2: y
n2: N
o1: Off
odd: yEs
null1: ~
null2:
str: "42"
exp_plain: 1e5
big: 9223372036854775808
huge: 1e400
bin: 0b-101
date: 2024-01-02
stamp: 2024-01-02T03:04:05Z
set: !!set {a, b}
custom: !mine value
forced: !!str 12
tagged: !!float 3
1e6: key
0.1: key2
"""
    data = only_doc(load_text(text)).data
    assert data == {
        "int": 42, "neg": -7, "hex": 31, "octal": 15, "octal_o": 15, "under": 1000,
        "sexagesimal": "1:30", "float": 1.5, "exp": 1000, "bool": True, "y1": True, "y2": True,
        "n2": False, "o1": False, "odd": "yEs", "null1": None, "null2": None, "str": "42",
        "exp_plain": 100000, "big": 9223372036854775808, "huge": "1e400", "bin": -5,
        "date": "2024-01-02", "stamp": "2024-01-02T03:04:05Z", "set": {"a": None, "b": None},
        "custom": "value", "forced": "12", "tagged": 3, "1e+06": "key", "0.1": "key2",
    }  # fmt: skip
    assert [type(data[k]) for k in ("exp", "exp_plain", "tagged", "float")] == [int, int, int, float]


def test_values_kubectl_cannot_send_are_reported_at_their_position() -> None:
    text = "a: .inf\nb: -.Inf\nc: .nan\n~: null key\n18446744073709551615: uint64 key\nok: 1\n"
    result = load_text(text)
    found = {(f.locations[0].position.line, f.message.split(" (")[0]) for f in sa000(result)}
    assert found == {
        (1, '".inf" cannot be sent as JSON'), (2, '"-.Inf" cannot be sent as JSON'),
        (3, '".nan" cannot be sent as JSON'),
        (4, "unsupported map key of type <nil>"), (5, "unsupported map key of type uint64"),
    }
    assert "json: unsupported value: -Inf" in messages(result)[1]


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def _as_sent(value: object) -> object:
    """A value as the API server receives it from kubectl (`yaml_positions.sent_number`)."""
    if isinstance(value, dict):
        return {k: _as_sent(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_sent(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        digits = int(Decimal(repr(value)))  # the shortest digits, as Go writes them
        return digits if -(2**63) <= digits < 2**63 else value
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=5))
def test_built_values_are_what_kubectl_sends_and_every_path_has_a_position(
        data: dict[str, Any]) -> None:
    """Every scalar written with its tag (`!!int "5"`, `"y"`): the value is the data itself as
    sent; written plain in flow style, only positions are compared (a plain `y` is a boolean
    to kubectl: `test_kubectl_typing.py` compares those with kubectl itself)."""
    for text in (
        yaml.safe_dump(data, sort_keys=False, default_style='"'),
        yaml.safe_dump(data, sort_keys=False, default_flow_style=True),
    ):
        doc = only_doc(load_text(text))
        if text.startswith('"'):
            assert doc.data == _as_sent(data)

        def paths(value: object, prefix: FieldPath) -> list[FieldPath]:
            out = [prefix]
            if isinstance(value, dict):
                for key, child in value.items():
                    out += paths(child, (*prefix, key))
            elif isinstance(value, list):
                for index, child in enumerate(value):
                    out += paths(child, (*prefix, index))
            return out

        lines = text.count("\n") + 1
        for path in paths(doc.data, ()):
            position = doc.source.positions[path]
            assert 1 <= position.line <= lines
            if path and isinstance(path[-1], str):
                assert path in doc.source.key_positions


def test_json_file_positions_and_json_number_semantics(tmp_path: Path) -> None:
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "spec": {"sharingAffinity": [{"name": "a", "expression": "x"}], "n": 1e5, "m": 3},
    }
    text = json.dumps(obj, indent=2).replace("100000.0", "1e5")
    path = write(tmp_path / "slice.json", text)
    doc = only_doc(load_paths([str(path)]))
    # kubectl re-sends a JSON float that has no fraction as integer digits.
    assert doc.data == obj and isinstance(doc.data["spec"]["n"], int)
    assert doc.source.positions[("spec", "sharingAffinity", 0, "expression")] == where(text, '"x"')
    assert doc.source.key_positions[("spec", "m")] == where(text, '"m"')

    minified = json.dumps(obj, separators=(",", ":"))
    doc = only_doc(load_text(minified))  # sniffed as JSON on stdin
    assert doc.data == obj
    assert doc.source.positions[("spec", "m")] == where(minified, "3")


def test_json_numbers_are_what_kubectl_sends(tmp_path: Path) -> None:
    """kubectl decodes JSON into Go values and sends them again: `1.0` and `1e5` travel as
    integers, and a number past float64 refuses the document (kubectl 1.37: "json: cannot
    unmarshal number 1e400 into Go value of type float64")."""
    path = write(tmp_path / "n.json", '{"kind": "X", "a": 1.0, "b": 1e5, "c": 0.5}')
    assert only_doc(load_paths([str(path)])).data == {"kind": "X", "a": 1, "b": 100000, "c": 0.5}
    path = write(tmp_path / "big.json", '{"kind": "X",\n "a": 1e400}')
    (finding,) = sa000(load_paths([str(path)]))
    assert finding.message.startswith("json: cannot unmarshal number 1e400 into Go value of type float64")
    assert finding.primary.position == Position(2, 7)


def test_json_syntax_error_is_reported_with_the_json_decoder_position(tmp_path: Path) -> None:
    text = '{\n  "kind": "ResourceSlice",\n  "spec": {"a": 1,}\n}\n'
    result = load_paths([str(write(tmp_path / "bad.json", text))])
    (finding,) = sa000(result)
    assert finding.message.startswith("invalid JSON: ")
    assert finding.primary.position == where(text, "}\n}")
    assert finding.primary.file == str(tmp_path / "bad.json")
    assert result.documents == [] and result.files == 1


def test_json_that_yaml_cannot_read_falls_back_to_the_json_decoder(tmp_path: Path) -> None:
    text = '\n{"kind": "ResourceSlice", "metadata": {"name": "\\ud83d\\ude00"}}\n{"kind": "X"}'
    result = load_paths([str(write(tmp_path / "emoji.json", text))])
    assert not result.findings
    first, second = result.documents
    assert first.data["metadata"]["name"] == "\U0001f600"
    assert first.source.locate(("metadata", "name")) == Position(2, 1)
    assert (second.kind, second.source.document) == ("X", 1)
    assert second.source.locate(()) == Position(3, 1)


def test_json_is_decoded_by_the_json_module_and_composed_only_for_positions(tmp_path: Path) -> None:
    """A `kubectl get -o json` list: values from the json module, positions composed the first
    time one is asked for, equal to what the YAML parser gives; a repeated key or `NaN` still
    goes through the YAML path (SA000 at its line; NaN is a string to YAML)."""
    items = [{"metadata": {"name": f"c{i}"}, "spec": {"n": i, "f": 1.5}} for i in range(3)]
    text = json.dumps({"kind": "ResourceClaimList", "apiVersion": "resource.k8s.io/v1",
                       "items": items}, indent=2)
    docs = load_paths([str(write(tmp_path / "list.json", text))]).documents
    as_yaml = [d for d in load_text(text.replace('"kind"', "kind", 1), name="l.yaml").documents]
    assert [d.data for d in docs] == [d.data for d in as_yaml]
    assert [dict(d.source.positions) for d in docs] == [dict(d.source.positions) for d in as_yaml]
    assert [dict(d.source.key_positions) for d in docs] == [dict(d.source.key_positions) for d in as_yaml]
    assert docs[2].source.locate(("spec", "f")) == Position(text.count("\n", 0, text.rindex('"f"')) + 1, 9)

    one = only_doc(load_text('\n {"kind": "X", "n": NaN}', name="n.json"))
    assert one.data["n"] == "NaN" and one.source.positions[()] == Position(2, 2)
    duplicate = load_text('{"kind": "X",\n "a": 1,\n "a": 2}', name="d.json")
    (finding,) = sa000(duplicate)
    assert finding.message.startswith('duplicate field "a" (first at line 2)')
    assert finding.primary.position == Position(3, 2)


def test_lazy_positions_are_composed_once_per_file_and_equal_the_eager_ones(tmp_path: Path) -> None:
    """`load_paths(lazy_positions=True)` (simulate, dry-run): a document keeps its start; its
    other positions come from composing the file again on first use, the same as eager ones."""
    text = SLICE + "---\nkind: List\nitems:\n  - {kind: X, a: [1, 2]}\n  - kind: Y\n    b: {c: 1}\n"
    path = str(write(tmp_path / "s.yaml", text))
    eager, lazy = load_paths([path]), load_paths([path], lazy_positions=True)
    assert [d.data for d in lazy.documents] == [d.data for d in eager.documents]
    assert [d.source.positions.get(()) for d in lazy.documents] == [
        d.source.positions.get(()) for d in eager.documents]
    assert all(d.source.positions._table is None for d in lazy.documents)  # type: ignore[attr-defined]
    assert [dict(d.source.positions) for d in lazy.documents] == [
        dict(d.source.positions) for d in eager.documents]
    assert [dict(d.source.key_positions) for d in lazy.documents] == [
        dict(d.source.key_positions) for d in eager.documents]
    assert lazy.documents[-1].source.locate(("b", "c")) == Position(text.count("\n") - 0, 9)


def test_yaml_file_that_looks_like_yaml_flow_is_not_forced_into_json(tmp_path: Path) -> None:
    result = load_paths([str(write(tmp_path / "flow.yaml", "{kind: X, num: 1e5, n: 1}\n"))])
    assert only_doc(result).data == {"kind": "X", "num": 100000, "false": 1}  # `n` is false


# -- List unpacking -------------------------------------------------------------------------


LIST = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSliceList
metadata:
  resourceVersion: "42"
items:
- metadata:
    name: first
  spec:
    driver: d
- 7
- apiVersion: resource.k8s.io/v1beta2
  kind: ResourceSlice
  metadata:
    name: second
  spec:
    sharingAffinity:
    - name: k
      expression: x
"""


def test_typed_list_items_are_unpacked_with_positions_relative_to_themselves() -> None:
    result = load_text(LIST, name="dump.yaml")
    (finding,) = sa000(result)
    expected = "item 1 of the ResourceSliceList is not an object: found a scalar ('7')"
    assert finding.message == expected
    assert finding.primary.position == where(LIST, "7")
    first, second = result.documents
    assert (first.item, second.item) == (0, 2)
    assert first.data["kind"] == "ResourceSlice" and first.kind == "ResourceSlice"
    assert first.api_version == "resource.k8s.io/v1"  # from the list
    assert second.api_version == "resource.k8s.io/v1beta2"  # its own
    assert first.source.positions[("metadata", "name")] == where(LIST, "first")
    assert first.source.positions[()] == where(LIST, "metadata:\n    name: first")
    expr: FieldPath = ("spec", "sharingAffinity", 0, "expression")
    assert second.source.positions[expr] == where(LIST, "x\n")
    assert second.source.key_positions[("metadata",)] == where(LIST, "metadata", 2)
    assert all(path[0] != "items" for path in second.source.positions if path)


def test_kind_list_keeps_each_items_kind_and_rejects_non_list_items() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- {kind: A}\n- {apiVersion: v9}\n"
    result = load_text(text)
    assert [(d.kind, d.api_version, d.item) for d in result.documents] == [
        ("A", None, 0), (None, "v9", 1),
    ]  # fmt: skip
    bad = load_text("kind: List\nitems: {a: 1}\n")
    assert messages(bad) == ["List items must be a list"]
    assert load_text("kind: List\nitems: []\n").documents == []


def test_json_list_fallback_still_unpacks_items(tmp_path: Path) -> None:
    text = '{"kind": "ResourceSliceList", "apiVersion": "v1", "items": [{"x": "\\ud83d\\ude00"}]}'
    (doc,) = load_paths([str(write(tmp_path / "l.json", text))]).documents
    assert (doc.kind, doc.api_version, doc.item, doc.data["x"]) == (
        "ResourceSlice", "v1", 0, "\U0001f600",
    )  # fmt: skip


# -- content errors -------------------------------------------------------------------------


def test_syntax_error_in_one_document_does_not_hide_the_others() -> None:
    broken = "kind: Broken\nspec:\n  a: [1, 2\n  b: 3\n"
    text = f"{SLICE}---\n{broken}---\n{SLICE}"
    result = load_text(text, name="m.yaml")
    (finding,) = sa000(result)
    assert finding.message.startswith("YAML syntax error: ")
    assert finding.primary.file == "m.yaml"
    error_line = finding.primary.position.line if finding.primary.position else 0
    first_broken = where(text, "kind: Broken").line
    assert first_broken <= error_line < where(text, "apiVersion", 1).line
    assert [d.source.document for d in result.documents] == [0, 2]
    path: FieldPath = ("spec", "sharingAffinity", 1, "name")
    assert result.documents[1].source.positions[path] == where(text, "pkey", 1)


def test_a_control_character_loses_only_its_own_document() -> None:
    """libyaml checks characters a buffer at a time: a form feed in the fourth document must
    not take the three before it along (kubectl splits at `---` and sends them)."""
    parts = [f"kind: K\nmetadata:\n  name: d{i}\n" for i in range(5)]
    for bad in ("\x0c", "\x0b", "\x1b"):
        broken = parts.copy()
        broken[3] = broken[3].replace("name: d3", f"name: d{bad}3")
        result = load_text("---\n".join(broken), name="m.yaml")
        assert [(d.source.document, d.data["metadata"]["name"]) for d in result.documents] == [
            (0, "d0"), (1, "d1"), (2, "d2"), (4, "d4")]
        (finding,) = sa000(result)
        assert finding.primary.position == Position(15, 10)
        assert finding.message.startswith(f"unacceptable character #x{ord(bad):04x}")


_MUTATIONS = ["\x0c", "\x0b", "\x1b", "\x07", '"', "'", "[", "{", "]", "}", ": :", "\t", "- ",
              "*x", "&", "!", "%", "@", "`", "|", ">", "? ", ",", "#", "\\", "\u0085", "\ufeff"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=2, max_value=7), st.data())
def test_mutated_multi_document_files_lose_no_document(count: int, data: st.DataObject) -> None:
    """Every document of a mutated stream is either built or reported at a line inside it;
    every document left intact is built exactly once, and nothing is reported in it. (A
    mutated one may yield more than one: NEL is a line break to libyaml, as to go-yaml.)"""
    parts = [f"kind: Thing\nmetadata:\n  name: d{i}\nspec:\n  v: {i}\n  s: text {i}\n"
             for i in range(count)]
    mutated = data.draw(st.sets(st.integers(min_value=0, max_value=count - 1), min_size=1))
    for i in mutated:
        for _ in range(data.draw(st.integers(min_value=1, max_value=2))):
            at = data.draw(st.integers(min_value=0, max_value=len(parts[i]) - 1))
            parts[i] = parts[i][:at] + data.draw(st.sampled_from(_MUTATIONS)) + parts[i][at:]
    lead = data.draw(st.booleans())
    text = ("---\n" if lead else "") + "---\n".join(parts)
    first_line, line = [], 1 + lead
    for part in parts:
        first_line.append(line)
        line += part.count("\n") + 1
    result = load_text(text, name="m.yaml")

    def document_at(row: int) -> int:
        return max(i for i, start in enumerate(first_line) if start - 1 <= row)

    built: dict[int, list[dict[str, Any]]] = {}
    for document in result.documents:
        start = document.source.positions.get(())
        assert start is not None
        built.setdefault(document_at(start.line), []).append(document.data)
    reported = {document_at(f.primary.position.line) for f in sa000(result) if f.primary.position}
    for i in range(count):
        assert i in built or i in reported, (i, text, messages(result))
        if i not in mutated:
            assert i not in reported, (i, text, messages(result))
            assert built[i] == [{"kind": "Thing", "metadata": {"name": f"d{i}"},
                                 "spec": {"v": i, "s": f"text {i}"}}]


def test_duplicate_keys_are_reported_and_the_last_value_wins() -> None:
    text = "kind: K\nspec:\n  a: 1\n  b: 2\n  a: 3\n"
    result = load_text(text)
    (finding,) = sa000(result)
    assert finding.message.startswith('duplicate field "spec.a" (first at line 3)')
    assert finding.primary.position == Position(5, 3)
    assert finding.primary.field_path == "spec.a"
    assert finding.primary.object is not None and finding.primary.object.kind == "K"
    (doc,) = result.documents
    assert doc.data["spec"] == {"a": 3, "b": 2}
    assert doc.source.positions[("spec", "a")] == Position(5, 6)


def test_anchors_aliases_and_merge_keys_are_resolved() -> None:
    text = """\
base: &base
  driver: d
  pool: {name: p}
other: &other {driver: o, extra: 1}
spec:
  <<: [*base, *other]
  pool: {name: q}
copy: *base
"""
    doc = only_doc(load_text(text))
    assert doc.data["spec"] == {"pool": {"name": "q"}, "driver": "d", "extra": 1}
    assert doc.data["copy"] == {"driver": "d", "pool": {"name": "p"}}
    assert doc.source.positions[("spec", "pool", "name")] == where(text, "q}")
    assert doc.source.positions[("spec", "driver")] == where(text, "d\n")
    assert doc.source.positions[("copy", "pool", "name")] == where(text, "p}")


def test_billion_laughs_is_refused_quickly() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    text = "kind: Bomb\n" + "\n".join(lines) + "\n---\nkind: After\n"
    started = time.perf_counter()
    result = load_text(text)
    assert time.perf_counter() - started < 5
    (finding,) = sa000(result)
    assert "excessive aliasing" in finding.message
    assert [d.kind for d in result.documents] == ["After"]


def test_alias_ratio_follows_the_kubernetes_decoder() -> None:
    assert allowed_alias_ratio(1000) == 0.99
    assert allowed_alias_ratio(4_000_000) == pytest.approx(0.10)
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    # A modest, legitimate reuse of an anchor is fine.
    text = "d: &d {a: 1, b: 2}\n" + "".join(f"k{i}: *d\n" for i in range(50))
    assert only_doc(load_text(text)).data["k49"] == {"a": 1, "b": 2}


@pytest.mark.parametrize(("text", "reported", "kept"), [
    pytest.param("---\n- a\n---\n\n---\njust text\n---\n~\n---\nkind: K\n",
                 [("document is not an object: found a list", Position(2, 1)),
                  ("document is not an object: found a scalar ('just text')", Position(6, 1))],
                 [{"kind": "K"}], id="not-objects-and-empty-documents-are-dropped"),
    pytest.param("kind: K\na: &a [1, *a]\n",
                 [("recursive YAML alias: a node contains itself", Position(2, 4))],
                 [], id="recursive-alias-is-refused"),
    pytest.param("v: !!int abc\nb: !!bool maybe\n? [x]\n: 1\n1: one\ntrue: t\nm:\n  <<: 3\n",
                 [("cannot decode !!str `abc` as a !!int", Position(1, 4)),
                  ("cannot decode !!str `maybe` as a !!bool", Position(2, 4)),
                  ("a mapping key must be a string, found a list", Position(3, 3)),
                  ("merge key (<<) needs a mapping or a list of mappings, found a scalar", Position(8, 7))],
                 [{"v": "abc", "b": "maybe", "1": "one", "true": "t", "m": {}}],
                 id="bad-tags-keys-and-merges-keep-the-document"),
])
def test_what_cannot_be_decoded_is_reported_where_it_stands_and_the_rest_is_kept(
    text: str, reported: list[tuple[str, Position]], kept: list[dict[str, Any]]
) -> None:
    result = load_text(text)
    assert [(f.message, f.primary.position) for f in sa000(result)] == reported
    assert [d.data for d in result.documents] == kept


def test_too_deep_nesting_is_a_finding() -> None:
    result = load_text("a: " + "[" * 1200 + "]" * 1200 + "\n")
    (finding,) = sa000(result)
    assert "nesting depth" in finding.message
    deep = load_text("a: " + "[" * 900 + "]" * 900 + "\n")
    assert messages(deep) == ["document is nested too deeply to load"]


def test_control_characters_and_tabs_are_reported_with_positions() -> None:
    result = load_text("kind: K\nname: a\x07b\n")
    (finding,) = sa000(result)
    assert finding.message.startswith("unacceptable character #x0007")
    assert finding.primary.position == Position(2, 8)
    tabs = load_text("kind: K\nspec:\n\tdriver: d\n")
    assert sa000(tabs)[0].primary.position == Position(3, 1)


# -- bytes ----------------------------------------------------------------------------------


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    binary = tmp_path / "blob.yaml"
    binary.write_bytes(b"kind: K\n\x00\x01\x02")
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("kind: K\nmetadata:\n  name: caf\u00e9\n".encode("latin-1"))
    result = load_paths([str(binary), str(latin1)])
    first, second = sa000(result)
    assert first.message.startswith("binary file (NUL byte at offset 8)")
    assert first.primary.position == Position(1, 1)
    assert second.message == "file is not UTF-8 text: invalid byte 0xE9"
    assert second.primary.position == Position(3, 12)
    assert result.documents == [] and result.files == 2 and not result.usage_errors


def test_byte_order_marks(tmp_path: Path) -> None:
    utf8 = tmp_path / "bom8.yaml"
    utf8.write_bytes(codecs.BOM_UTF8 + b"kind: K\nname: x\n")
    utf16 = tmp_path / "bom16.yaml"
    utf16.write_bytes("kind: L\nname: y\n".encode("utf-16"))
    result = load_paths([str(utf8), str(utf16)])
    assert not result.findings
    assert [d.kind for d in result.documents] == ["K", "L"]
    assert result.documents[0].source.positions[("name",)] == Position(2, 7)


def test_five_megabyte_file(tmp_path: Path) -> None:
    parts: list[str] = []
    size = index = 0
    while size < 5_000_000:
        parts.append(SLICE.replace("name: meta", f"name: meta-{index}") + "---\n")
        size += len(parts[-1])
        index += 1
    text = "".join(parts)
    result = load_paths([str(write(tmp_path / "big.yaml", text))])
    assert not result.findings and len(result.documents) == index
    last = result.documents[-1]
    assert last.data["metadata"]["name"] == f"meta-{index - 1}"
    assert last.source.positions[("metadata", "name")] == where(text, f"meta-{index - 1}")


# -- paths, directories, stdin --------------------------------------------------------------


def test_directories_are_walked_recursively_sorted_and_filtered(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", "kind: B\n")
    write(tmp_path / "a.yml", "kind: A\n")
    write(tmp_path / "sub" / "c.json", '{"kind": "C"}')
    write(tmp_path / "sub" / "deeper" / "d.YAML", "kind: D\n")
    write(tmp_path / "notes.txt", "kind: Ignored\n")
    write(tmp_path / "z.yaml", "kind: [unclosed\n")
    (tmp_path / "dir.yaml").mkdir()
    write(tmp_path / "dir.yaml" / "inner.yaml", "kind: Inner\n")
    result = load_paths([str(tmp_path)])
    assert [d.kind for d in result.documents] == ["A", "B", "Inner", "C", "D"]
    assert result.documents[0].source.file == str(tmp_path / "a.yml")
    (finding,) = sa000(result)
    assert finding.primary.file == str(tmp_path / "z.yaml")
    assert result.files == 6 and not result.usage_errors
    explicit = load_paths([str(tmp_path / "notes.txt")])
    assert [d.kind for d in explicit.documents] == ["Ignored"]


def test_symlink_loops_are_reported_and_files_are_read_once(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "kind: A\n")
    os.symlink(".", tmp_path / "loop")
    os.symlink("self.yaml", tmp_path / "self.yaml")
    os.symlink("a.yaml", tmp_path / "same.yaml")
    result = load_paths([str(tmp_path), str(tmp_path / "a.yaml")])
    assert [d.kind for d in result.documents] == ["A"]
    assert sorted(messages(result)) == [
        "cannot read file: Too many levels of symbolic links",
        "symlink loop: this directory contains itself; not walked again",
    ]
    assert result.files == 1


def test_unreadable_entries_inside_a_directory_are_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ok.yaml", "kind: Ok\n")
    secret = write(tmp_path / "secret.yaml", "kind: Secret\n")
    os.mkfifo(tmp_path / "pipe.yaml")
    real_open = open

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(secret):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(loader_module, "open", guarded_open, raising=False)
    result = load_paths([str(tmp_path)])
    assert [d.kind for d in result.documents] == ["Ok"]
    assert [(f.primary.file, f.message) for f in sa000(result)] == [
        (str(tmp_path / "pipe.yaml"), "not a regular file (a FIFO, socket or device); skipped"),
        (str(secret), "cannot read file: Permission denied"),
    ]
    assert not result.usage_errors

    explicit = load_paths([str(secret), str(tmp_path / "missing.yaml")])
    assert explicit.usage_errors == [
        f"{secret}: Permission denied",
        f"{tmp_path / 'missing.yaml'}: No such file or directory",
    ]
    assert explicit.findings == [] and explicit.files == 0


def test_stdin_text_and_bytes() -> None:
    result = load_paths(["-"], stdin=io.StringIO(SLICE))
    doc = only_doc(result)
    assert doc.source.file == "<stdin>" and result.files == 1
    raw = io.TextIOWrapper(io.BytesIO(codecs.BOM_UTF8 + SLICE.encode()), encoding="utf-8")
    assert only_doc(load_paths(["-"], stdin=raw)).data == doc.data
    bad = io.TextIOWrapper(io.BytesIO(b"kind: K\nx: \xff\n"), encoding="utf-8")
    (finding,) = sa000(load_paths(["-"], stdin=bad))
    assert finding.primary.file == "<stdin>" and finding.primary.position == Position(2, 4)


def test_files_and_stdin_mix_in_argument_order(tmp_path: Path) -> None:
    path = write(tmp_path / "x.yaml", "kind: File\n")
    result = load_paths([str(path), "-"], stdin=io.StringIO("kind: Stdin\n"))
    assert [(d.kind, d.source.file) for d in result.documents] == [
        ("File", str(path)), ("Stdin", "<stdin>"),
    ]  # fmt: skip
    assert result.files == 2


def test_undecodable_file_names_are_printable(tmp_path: Path) -> None:
    raw_dir = os.fsencode(tmp_path)
    with open(os.path.join(raw_dir, b"caf\xe9.yaml"), "wb") as handle:
        handle.write(b"kind: K\n")
    (doc,) = load_paths([str(tmp_path)]).documents
    assert doc.source.file == str(tmp_path / "caf\ufffd.yaml")
    assert doc.source.file is not None and doc.source.file.isprintable()


def test_benchmark_generator_is_deterministic_and_loads_cleanly(tmp_path: Path) -> None:
    from bench.gen_slices import generate

    first = generate(40, tmp_path / "a", seed=3)
    second = generate(40, tmp_path / "b", seed=3)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    result = load_paths([str(tmp_path / "a")])
    assert not result.findings and len(result.documents) == 40
    pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for doc in result.documents:
        spec = doc.data["spec"]
        pools.setdefault((spec["driver"], spec["pool"]["name"]), []).append(spec)
        assert ("devices" in spec) != ("sharingAffinity" in spec)
        assert 1 <= len(spec.get("devices", spec.get("sharingAffinity"))) <= 128
        assert len(spec.get("sharingAffinity", [])) <= 8
    for slices in pools.values():
        assert {s["pool"]["resourceSliceCount"] for s in slices} == {len(slices)}


def test_each_file_is_read_once_and_its_text_serves_suppressions_and_positions(tmp_path: Path) -> None:
    """The loader keeps every file's text (stdin too): suppressions and in-expression positions
    come from it, so they still resolve after the file is gone from disk — nothing reads it twice."""
    from dra_affinity.lint.commands.lint_cmd import check_input
    from dra_affinity.lint.config import Config
    from dra_affinity.lint.inputs import load_input
    from dra_affinity.lint.suppressions import audit
    from dra_affinity.policies.rules.engine import EngineOptions
    from dra_affinity.sources.loader import STDIN_NAME, load_paths

    text = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec:\n  driver: d.example.com\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
        "  sharingAffinity:\n  - name: k\n"
        "    expression: 'object.x'  # dra-affinity: ignore SA202 -- one schema only\n"
    )
    path = tmp_path / "slice.yaml"
    path.write_text(text, encoding="utf-8")
    inputs = load_input((str(path),))
    assert inputs.texts == {str(path): text}
    path.unlink()  # from here on, only the loaded text exists
    findings, _ = check_input(inputs, EngineOptions())
    unguarded = [f for f in findings if f.rule == "SA201"]
    assert [(f.primary.position.line, f.primary.position.column) for f in unguarded
            if f.primary.position] == [(9, 18)]  # `object.x` inside the quoted scalar
    checked = audit(findings, inputs.documents, Config(), texts=inputs.texts, ran=lambda rule: True)
    assert [s.finding.rule for s in checked.suppressed] == ["SA202"]

    from_stdin = load_paths(["-"], stdin=io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))
    assert from_stdin.texts == {STDIN_NAME: text}
