"""The object model: views, List-free parsing, the trusted (post-API-server) fast path."""

from __future__ import annotations

import pytest
from dra_affinity.policies.model.resources import (
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    go_json_size,
    parse,
)

from tests.helpers import entry, slice_doc


def test_trusted_parse_builds_the_same_view_without_the_structural_check() -> None:
    doc = slice_doc([entry("subnet")], devices=None)
    assert parse(doc, trusted=True).obj == parse(doc).obj


def test_trusted_parse_falls_back_to_located_input_errors() -> None:
    doc = slice_doc([entry("subnet")])
    del doc["spec"]["pool"]
    for trusted in (False, True):
        result = parse(doc, trusted=trusted)
        assert result.obj is None
        assert [f.message for f in result.findings] == ["spec.pool: Required value"]


def test_kinds() -> None:
    assert isinstance(parse(slice_doc([entry("a")])).obj, ResourceSlice)
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": "t"}, "spec": {"spec": {"devices": {"requests": []}}}}
    parsed = parse(claim).obj
    assert isinstance(parsed, ResourceClaim)
    assert parsed.qualified_name == "default/t"
    assert parsed.spec_path == ("spec", "spec")
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "c"},
           "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    parsed_class = parse(cls).obj
    assert isinstance(parsed_class, DeviceClass)
    assert parsed_class.selectors[0].expression == "true"
    other = parse({"apiVersion": "v1", "kind": "ConfigMap"})
    assert other.obj is None and not other.recognised


def test_without_devices_keeps_their_presence_only() -> None:
    doc = slice_doc(None, devices=[{"name": "eth0", "allowMultipleAllocations": True}])
    full = parse(doc).obj
    light = parse(doc, trusted=True, with_devices=False).obj
    assert isinstance(full, ResourceSlice) and isinstance(light, ResourceSlice)
    assert len(full.devices) == 1 and light.devices == ()
    assert light.devices_set and full.devices_set


def test_a_claim_view_names_every_part_where_it_came_from() -> None:
    """Every field of the claim's views, by name: a constructor argument in the wrong place shows."""
    from dra_affinity.policies.model.resources import (
        AllocatedDevice,
        ClaimConfig,
        DeviceRequest,
        DeviceSelector,
        OpaqueConfig,
        Request,
    )

    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": "c", "namespace": "ns"},
           "spec": {"devices": {
               "requests": [
                   {"name": "nic", "exactly": {"deviceClassName": "nic.example.com", "count": 2,
                                               "allocationMode": "ExactCount",
                                               "selectors": [{"cel": {"expression": "true"}}],
                                               "capacity": {"requests": {"bw": "1Gi"}}}},
                   {"name": "gpu",
                    "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]}],
               "config": [{"requests": ["nic"], "opaque": {"driver": "nic.example.com",
                                                           "parameters": {"subnet": "a"}}}]}},
           "status": {"allocation": {"devices": {"results": [
               {"request": "nic", "driver": "nic.example.com", "pool": "p", "device": "eth0"}]}}}}
    claim = parse(doc).obj
    assert isinstance(claim, ResourceClaim)
    assert (claim.kind, claim.api_version, claim.namespace, claim.name, claim.spec_path, claim.raw) == (
        "ResourceClaim", "resource.k8s.io/v1", "ns", "c", ("spec",), doc)
    assert claim.requests == (
        Request(index=0, name="nic", exactly=DeviceRequest(
            name="nic", parent=None, device_class_name="nic.example.com",
            selectors=(DeviceSelector(index=0, expression="true"),), count=2, allocation_mode="ExactCount",
            capacity_requests={"bw": "1Gi"})),
        Request(index=1, name="gpu", exactly=None, first_available=(
            DeviceRequest(name="gpu/big", parent="gpu", device_class_name="gpu.example.com"),)))
    assert claim.configs == (ClaimConfig(index=0, requests=("nic",), opaque=OpaqueConfig(
        driver="nic.example.com", parameters={"subnet": "a"})),)
    assert claim.allocation == (AllocatedDevice(request="nic", driver="nic.example.com", pool="p",
                                                device="eth0"),)


def _claim_with_parameters(parameters: object, kind: str = "ResourceClaim") -> dict[str, object]:
    config = [{"requests": ["nic"], "opaque": {"driver": "nic.example.com", "parameters": parameters}}]
    devices = {"requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}], "config": config}
    if kind == "DeviceClass":
        return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": "nic"},
                "spec": {"config": [{"opaque": config[0]["opaque"]}]}}
    spec: dict[str, object] = {"devices": devices}
    if kind == "ResourceClaimTemplate":
        spec = {"spec": spec}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind,
            "metadata": {"name": "c", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize("kind", ["ResourceClaim", "ResourceClaimTemplate", "DeviceClass"])
def test_opaque_parameters_over_10_ki_are_what_the_api_server_refuses(kind: str) -> None:
    """`OpaqueParametersMaxLength`: 10,240 bytes of compact JSON pass, one more is refused,
    counted as Go writes it (`&` is `\\u0026`, six bytes)."""
    at_limit = {"s": "x" * (10 * 1024 - len('{"s":""}'))}
    assert go_json_size(at_limit) == 10 * 1024
    assert parse(_claim_with_parameters(at_limit, kind)).findings == ()
    over = {"s": "x" * (10 * 1024 - len('{"s":""}') - 5) + "&"}
    assert go_json_size(over) == 10 * 1024 + 1
    result = parse(_claim_with_parameters(over, kind))
    assert result.obj is None
    [finding] = result.findings
    assert finding.rule == "SA000"
    assert finding.message.endswith(
        "opaque.parameters: Too long: must have at most 10240 bytes (these are 10241)")
    assert finding.primary.field[-2:] == ("opaque", "parameters")
    assert parse(_claim_with_parameters(over, kind), trusted=True).findings == ()


def test_go_json_size_counts_what_go_escapes() -> None:
    assert go_json_size({"a": [1, True, None]}) == len('{"a":[1,true,null]}')
    assert go_json_size("é") == len('"é"'.encode())
    assert go_json_size("<>&") == len('"\\u003c\\u003e\\u0026"')
    assert go_json_size("\u2028") == len('"\\u2028"')
