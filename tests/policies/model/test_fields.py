"""Field names as the API server's strict field validation checks them (`schema.unknown_fields`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.model.schema import unknown_fields
from dra_affinity.sources.loader import load_text

from tests.policies.model import known_fields

SLICE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "meta", "labels": {"a": "b"}, "annotations": {"x": "y"}},
    "spec": {"driver": "d.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
             "sharingAffinity": [{"name": "subnet", "expression": "object.subnet"}]},
}
CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nic"}}]}},
}
TEMPLATE: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "t"},
    "spec": {"spec": copy.deepcopy(CLAIM["spec"])},
}
CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic"},
    "spec": {"selectors": [{"cel": {"expression": "true"}}]},
}


def test_the_checked_in_field_list_is_what_the_kubernetes_client_gives() -> None:
    """A client upgrade changes this: regenerate (`python -m tests.policies.model.known_fields`)."""
    assert Path(known_fields.TARGET).read_text(encoding="utf-8") == known_fields.render()


def test_valid_objects_of_every_kind_and_version_have_no_unknown_field() -> None:
    beta = copy.deepcopy(SLICE)
    beta["apiVersion"] = "resource.k8s.io/v1beta2"
    for doc in (SLICE, beta, CLAIM, TEMPLATE, CLASS):
        assert unknown_fields(doc["kind"], doc) == []
        assert not parse(doc).findings


@pytest.mark.parametrize(("doc", "path", "message"), [
    (SLICE, ("spec", "sharingAffnity"),
     'unknown field "spec.sharingAffnity" (did you mean "spec.sharingAffinity"?)'),
    (SLICE, ("spec", "sharingAffinity", 0, "expresion"),
     'unknown field "spec.sharingAffinity[0].expresion" '
     '(did you mean "spec.sharingAffinity[0].expression"?)'),
    (SLICE, ("metadata", "lables"), 'unknown field "metadata.lables" (did you mean "metadata.labels"?)'),
    (SLICE, ("spec", "pool", "zzz"), 'unknown field "spec.pool.zzz"'),
    (CLAIM, ("spec", "devices", "requests", 0, "exactly", "deviceClasName"),
     'unknown field "spec.devices.requests[0].exactly.deviceClasName" '
     '(did you mean "spec.devices.requests[0].exactly.deviceClassName"?)'),
    (TEMPLATE, ("spec", "spec", "devices", "request"),
     'unknown field "spec.spec.devices.request" (did you mean "spec.spec.devices.requests"?)'),
    (CLASS, ("spec", "selectors", 0, "cell"),
     'unknown field "spec.selectors[0].cell" (did you mean "spec.selectors[0].cel"?)'),
    (CLASS, ("status",), 'unknown field "status"'),  # a DeviceClass has none
    (CLAIM, ("sepc",), 'unknown field "sepc" (did you mean "spec"?)'),
])
def test_an_unknown_field_is_an_input_error_worded_as_the_api_server_words_it(
        doc: dict[str, Any], path: tuple[str | int, ...], message: str) -> None:
    bad = copy.deepcopy(doc)
    parent: Any = bad
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = "x"
    result = parse(bad)
    assert [(f.rule, f.message, f.locations[0].field) for f in result.findings] == [
        ("SA000", message, path)]
    assert result.obj is not None  # the rest of the object is still checked


def test_metadata_values_are_typed_as_kubectl_decodes_an_object_meta() -> None:
    for field, value, message in [
        ("annotations", ["a"], 'metadata.annotations: Invalid value: ["a"]: must be of type object '
         "(a map of strings)"),
        ("labels", "a=b", 'metadata.labels: Invalid value: "a=b": must be of type object (a map of strings)'),
        ("finalizers", "f", 'metadata.finalizers: Invalid value: "f": must be of type list'),
        ("generation", "1", 'metadata.generation: Invalid value: "1": must be of type integer'),
    ]:
        bad = copy.deepcopy(SLICE)
        bad["metadata"][field] = value
        result = parse(bad)
        assert result.obj is None
        assert [f.message for f in result.findings] == [message]
    bad = copy.deepcopy(SLICE)
    bad["metadata"]["annotations"] = {"ok": "x", "n": 5}
    assert [f.message for f in parse(bad).findings] == [
        "metadata.annotations.n: Invalid value: 5: must be of type string"]


def test_trusted_objects_keep_fields_this_tool_does_not_know() -> None:
    """The API server stored it: a field newer than this tool's list is not called unknown."""
    newer = copy.deepcopy(SLICE)
    newer["spec"]["someFutureField"] = True
    assert isinstance(parse(newer, trusted=True).obj, ResourceSlice)
    del newer["spec"]["pool"]
    assert [f.message for f in parse(newer, trusted=True).findings] == ["spec.pool: Required value"]


def test_an_int64_field_refuses_what_does_not_fit() -> None:
    text = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d.example.com
  pool: {name: p, generation: 9223372036854775808, resourceSliceCount: 0x1}
  sharingAffinity: [{name: a, expression: object.a}]
"""
    document = load_text(text).documents[0]
    result = parse(document.data, document.source)
    assert [(f.message, f.locations[0].position) for f in result.findings] == [
        ("spec.pool.generation: Invalid value: 9223372036854775808: must fit in a 64-bit integer "
         "(the API server cannot decode it into an int64)",
         document.source.key_positions[("spec", "pool", "generation")])]


def test_a_float_in_an_int64_field_is_refused_as_the_api_server_decoder_refuses_it() -> None:
    """The loader makes an int of every float kubectl sends as integer digits (`1e5`, `1.0`);
    what is left is sent with a fraction or past int64, which the decoder refuses."""
    for generation in ("2.5", "-9223372036854775809", "1e20"):
        text = SLICE_TEXT.format(generation=generation)
        document = load_text(text).documents[0]
        messages = [f.message for f in parse(document.data, document.source).findings]
        assert len(messages) == 1 and messages[0].startswith("spec.pool.generation: Invalid value: ")
        assert messages[0].endswith("must be of type integer"), messages
    for generation in ("1e5", "1.0", "0x1f"):
        document = load_text(SLICE_TEXT.format(generation=generation)).documents[0]
        assert not parse(document.data, document.source).findings


SLICE_TEXT = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: s}}
spec:
  driver: d.example.com
  nodeName: node-1
  pool: {{name: p, generation: {generation}, resourceSliceCount: 1}}
  sharingAffinity: [{{name: a, expression: object.a}}]
"""
