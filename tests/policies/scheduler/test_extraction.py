"""SPEC §5 extraction outcomes, on the KEP's examples and every error kind."""

from __future__ import annotations

from typing import Any

import pytest
from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.model.resources import Extractor, ResourceClaim, parse
from dra_affinity.policies.scheduler.extraction import (
    ExtractionPool,
    Outcome,
    PoolExtractor,
    device_requests,
    extract,
    in_scope_configs,
    request_names,
)

DRIVER = "networking.example.com"
KEP_SUBNET = (
    'object.apiVersion == "networking.example.com/v1"\n  && object.kind == "NICConfig"\n'
    '  ? object.subnetID : ""'
)
KEP_PKEY = KEP_SUBNET.replace("subnetID", "ibPKey")
NIC = {"apiVersion": "networking.example.com/v1", "kind": "NICConfig", "vendor": "acme",
       "subnetID": "subnet-A", "ibPKey": "0x8001", "qos": "gold", "mtu": 9000, "vlanTag": 100}


def pool(*extractors: tuple[str, str], **kw: Any) -> ExtractionPool:
    return ExtractionPool(
        ref=PoolRef(DRIVER, "node-a"),
        generation=7,
        extractors=tuple(PoolExtractor(Extractor(i, n, e), "meta") for i, (n, e) in enumerate(extractors)),
        **kw,
    )


KEP_POOL = pool(("subnet", KEP_SUBNET), ("pkey", KEP_PKEY))


def claim(*configs: dict[str, Any], requests: list[dict[str, Any]] | None = None) -> ResourceClaim:
    doc = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {"devices": {
            "requests": requests or [{"name": "nic", "exactly": {"deviceClassName": "nic"}}],
            "config": list(configs),
        }},
    }
    result = parse(doc)
    assert isinstance(result.obj, ResourceClaim), result.findings
    return result.obj


def opaque(params: Any, requests: list[str] | None = None, driver: str = DRIVER) -> dict[str, Any]:
    config: dict[str, Any] = {"opaque": {"driver": driver, "parameters": params}}
    if requests is not None:
        config["requests"] = requests
    return config


def test_kep_multi_key_example_is_ok() -> None:
    result = extract(claim(opaque(NIC, ["nic"])), "nic", KEP_POOL)
    assert result.outcome is Outcome.OK
    assert result.affinity == {"pkey": "0x8001", "subnet": "subnet-A"}
    assert result.unsatisfied == ()
    assert [(e.extractor, e.config, e.value) for e in result.evaluations] == [
        ("subnet", 0, "subnet-A"), ("pkey", 0, "0x8001")]
    assert all(e.runtime_cost > 0 for e in result.evaluations)


def test_other_schema_declines_and_strict_gating_reports_every_key() -> None:
    other = {"apiVersion": "networking.example.com/v1", "kind": "TuningConfig", "mtu": 9000}
    result = extract(claim(opaque(other)), "nic", KEP_POOL)
    assert result.outcome is Outcome.NOT_SATISFIED
    assert result.unsatisfied == ("subnet", "pkey")
    assert result.affinity is None


def test_partial_extraction_is_not_satisfied_for_the_missing_key() -> None:
    p = pool(("subnet", 'object.?subnetID.orValue("")'), ("pkey", 'object.?ibPKey.orValue("")'))
    result = extract(claim(opaque({"subnetID": "s"})), "nic", p)
    assert result.outcome is Outcome.NOT_SATISFIED
    assert result.unsatisfied == ("pkey",)


def test_two_configs_with_different_values_are_claim_inconsistent() -> None:
    result = extract(claim(opaque(NIC), opaque(dict(NIC, subnetID="subnet-B"))), "nic", KEP_POOL)
    assert result.outcome is Outcome.CLAIM_INCONSISTENT
    assert result.error is not None
    assert result.error.kind == "claim self-inconsistent"
    assert result.error.extractor == "subnet"
    assert result.error.config == 1


def test_same_value_twice_is_fine() -> None:
    assert extract(claim(opaque(NIC), opaque(NIC)), "nic", KEP_POOL).outcome is Outcome.OK


def test_missing_field_is_a_slice_error_that_dominates() -> None:
    p = pool(("subnet", "object.subnetID"))
    result = extract(claim(opaque({"kind": "Other"}), opaque(NIC)), "nic", p)
    assert result.outcome is Outcome.SLICE_ERROR
    assert result.error is not None
    assert result.error.kind == "missing field"
    assert result.error.config == 0
    assert result.error.message.startswith(
        'missing field for pool "networking.example.com"/"node-a" generation 7, request "nic", '
        'extractor 0, key "subnet": no such key: subnetID. Consider using CEL optional chaining'
    )


def test_non_string_result() -> None:
    result = extract(claim(opaque(NIC)), "nic", pool(("vlan", "object.vlanTag")))
    assert result.outcome is Outcome.SLICE_ERROR
    assert result.error is not None and result.error.kind == "cel expression returned non-string"
    assert "CEL result of type int could not be converted to string" in result.error.message


def test_library_typed_results_convert_to_strings() -> None:
    result = extract(claim(opaque({"ip": "10.0.0.1"})), "nic", pool(("ip", "ip(object.ip)")))
    assert result.outcome is Outcome.OK
    assert result.affinity == {"ip": "10.0.0.1"}


def test_estimated_cost_over_the_limit_is_a_compile_time_slice_error() -> None:
    result = extract(claim(opaque(NIC)), "nic", pool(("subnet", '"p-" + object.subnetID')))
    assert result.outcome is Outcome.SLICE_ERROR
    assert result.error is not None and result.error.kind == "cel evaluation cost exceeded"
    assert "estimated cost 1844674407370955265 exceeds limit 1000000" in result.error.message
    assert result.evaluations == ()


def test_uncompilable_extractor() -> None:
    result = extract(claim(opaque(NIC)), "nic", pool(("subnet", "object.subnetID.")))
    assert result.outcome is Outcome.SLICE_ERROR
    assert result.error is not None and result.error.kind == "cel evaluation failed"
    assert "compile CEL expression: ERROR: <input>:1:" in result.error.message


def test_pool_level_failures_come_first() -> None:
    c = claim(opaque(NIC))
    assert extract(c, "nic", pool()).outcome is Outcome.NOT_APPLICABLE
    assert extract(c, "nic", pool(("s", KEP_SUBNET), complete=False)).outcome is Outcome.POOL_INCOMPLETE
    collision = extract(c, "nic", pool(("s", KEP_SUBNET), duplicate_keys=("s",)))
    assert collision.outcome is Outcome.SLICE_ERROR
    assert collision.error is not None and collision.error.kind == "slice key collision"
    costly = extract(c, "nic", pool(("s", KEP_SUBNET), total_cost=1_000_001))
    assert costly.error is not None and costly.error.kind == "cel evaluation cost exceeded"


def test_unparseable_parameters() -> None:
    result = extract(claim(opaque("not an object")), "nic", KEP_POOL)
    assert result.outcome is Outcome.SLICE_ERROR
    assert result.error is not None and result.error.kind == "cel evaluation failed"
    assert "unmarshal opaque parameters" in result.error.message


@pytest.mark.parametrize(
    ("config_requests", "request_name", "in_scope"),
    [
        (None, "nic", True),
        (["nic"], "nic", True),
        (["other"], "nic", False),
        (["nic"], "nic/fast", True),
        (["nic/fast"], "nic/fast", True),
        (["nic/slow"], "nic/fast", False),
    ],
)
def test_config_scoping(config_requests: list[str] | None, request_name: str, in_scope: bool) -> None:
    c = claim(opaque(NIC, config_requests))
    assert bool(in_scope_configs(c, request_name, DRIVER)) is in_scope


def test_other_drivers_configs_are_out_of_scope() -> None:
    c = claim(opaque(NIC, driver="gpu.example.com"))
    assert in_scope_configs(c, "nic", DRIVER) == ()
    result = extract(c, "nic", KEP_POOL)
    assert result.outcome is Outcome.NOT_SATISFIED
    assert result.evaluations == ()


def test_first_available_sub_requests_are_named_parent_slash_sub() -> None:
    c = claim(requests=[{"name": "nic", "firstAvailable": [
        {"name": "fast", "deviceClassName": "a"}, {"name": "slow", "deviceClassName": "b"}]}])
    assert request_names(c) == ("nic/fast", "nic/slow")
    both = claim(requests=[{"name": "gpu", "exactly": {"deviceClassName": "g"}},
                           {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "a"},
                                                              {"name": "slow", "deviceClassName": "b"}]}])
    assert {name: r.device_class_name for name, r in device_requests(both).items()} == {
        "gpu": "g", "nic/fast": "a", "nic/slow": "b"}


def test_relabel_keeps_every_field_but_the_claim_and_the_pool() -> None:
    """Each field set to its own value, so a field relabel forgot, or one that shifted, shows."""
    import dataclasses

    from dra_affinity.policies.scheduler.extraction import (
        Evaluation,
        ExtractionProblem,
        ExtractionResult,
        relabel,
    )

    values: dict[str, Any] = {
        "claim": "a/b", "request": "r", "pool": PoolRef(DRIVER, "p"), "outcome": Outcome.CLAIM_INCONSISTENT,
        "affinity": {"k": "v"}, "unsatisfied": ("u",), "error": ExtractionProblem("kind", "message"),
        "evaluations": (Evaluation("k", 0, "v", "string", 1),), "configs": (3,), "notes": ("note",)}
    assert set(values) == {f.name for f in dataclasses.fields(ExtractionResult)}
    result = ExtractionResult(**values)
    moved = relabel(result, "c/d", PoolRef(DRIVER, "q"))
    assert moved == dataclasses.replace(result, claim="c/d", pool=PoolRef(DRIVER, "q"))
    assert relabel(result, "a/b", PoolRef(DRIVER, "p")) is result


def test_the_memo_shares_a_slice_error_only_within_its_pool_and_generation() -> None:
    from dra_affinity.policies.scheduler.extraction import ExtractionMemo

    asking = claim(opaque(NIC))
    bad = (PoolExtractor(Extractor(0, "subnet", "object.nope"), "meta"),)
    memo = ExtractionMemo()

    def message(name: str, generation: int) -> str:
        result = memo.extract(asking, "nic", ExtractionPool(PoolRef(DRIVER, name), generation, bad))
        assert result.outcome is Outcome.SLICE_ERROR and result.error is not None and result.evaluations
        return result.error.message

    assert '"node-a" generation 1' in message("node-a", 1)
    assert '"node-a" generation 1' in message("node-a", 1) and memo.misses == 1
    assert '"node-b" generation 1' in message("node-b", 1) and memo.misses == 2
    assert '"node-a" generation 2' in message("node-a", 2) and memo.misses == 3  # the pool reloaded
    assert memo.evaluations == 3  # one per extraction run, none for the hit
