"""Candidate pools: a pool serves a request when one of its devices satisfies the
request's DeviceClass selectors and its own, evaluated as the allocator does."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_affinity.policies.analysis.device import selector_cache_info
from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.model.resources import (
    DeviceClass,
    DeviceRequest,
    DeviceSelector,
    ResourceSlice,
    parse,
)
from dra_affinity.policies.scheduler.candidates import (
    PoolSurvey,
    SelectorError,
    match_pool,
    missing_class,
    pool_is_candidate,
)
from dra_affinity.policies.scheduler.pools import Pool, build_pools

from tests.cli import REPO, run
from tests.helpers import slice_doc

EXAMPLE_SLICES = ("networking-node-a.yaml", "fpga-bitstream.yaml", "fpga-node-g.yaml",
                  "rdma-pkey.yaml", "single-subnet-nic.yaml")


def load(*names: str) -> list[Any]:
    objects = []
    for name in names:
        for doc in yaml.safe_load_all((REPO / "examples" / name).read_text()):
            result = parse(doc)
            assert result.obj is not None, result.findings
            objects.append(result.obj)
    return objects


@pytest.fixture(scope="module")
def pools() -> dict[PoolRef, Pool]:
    return build_pools([s for s in load(*EXAMPLE_SLICES) if isinstance(s, ResourceSlice)])


@pytest.fixture(scope="module")
def classes() -> dict[str, DeviceClass]:
    loaded = load("device-classes.yaml")
    assert all(isinstance(c, DeviceClass) for c in loaded)
    return {c.name: c for c in loaded}


def request(device_class: str, *selectors: str, name: str = "r") -> DeviceRequest:
    return DeviceRequest(name, None, device_class,
                         tuple(DeviceSelector(i, s) for i, s in enumerate(selectors)))


def device_class(name: str, *selectors: str) -> DeviceClass:
    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
           "spec": {"selectors": [{"cel": {"expression": s}} for s in selectors]}}
    result = parse(doc)
    assert isinstance(result.obj, DeviceClass)
    return result.obj


def candidates(req: DeviceRequest, classes: dict[str, DeviceClass],
               pools: dict[PoolRef, Pool]) -> list[str]:
    return [f"{ref.driver}/{ref.name}" for ref, pool in pools.items()
            if pool_is_candidate(req, classes, pool)]


def one_pool(*devices: dict[str, Any], driver: str = "gpu.example.com") -> Pool:
    doc = slice_doc(devices=list(devices), driver=driver, pool="p", name="s")
    result = parse(doc)
    assert isinstance(result.obj, ResourceSlice)
    [pool] = build_pools([result.obj]).values()
    return pool


GPU = {"name": "gpu-0", "attributes": {"model": {"string": "a100"}},
       "capacity": {"memory": {"value": "80Gi"}}}


# ------------------------------------------------------------------------------------------------
# The example classes against the example pools
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("device_class_name", "expected"), [
    ("nic.networking.example.com", ["networking.example.com/node-a"]),
    ("fpga.example.com", ["fpga.example.com/node-c", "fpga.example.com/node-g"]),
    ("rdma.example.com", ["rdma.example.com/node-b"]),
    ("nic.example.com", ["nic.example.com/node-e"]),
    ("gpu.example.com", []),
])
def test_each_example_class_selects_its_driver(
        device_class_name: str, expected: list[str], classes: dict[str, DeviceClass],
        pools: dict[PoolRef, Pool]) -> None:
    assert candidates(request(device_class_name), classes, pools) == expected


def test_request_selectors_narrow_the_class(classes: dict[str, DeviceClass],
                                            pools: dict[PoolRef, Pool]) -> None:
    u250 = request("fpga.example.com", 'device.attributes["fpga.example.com"].model == "u250"')
    assert len(candidates(u250, classes, pools)) == 2
    u280 = request("fpga.example.com", 'device.attributes["fpga.example.com"].model == "u280"')
    assert candidates(u280, classes, pools) == []


def test_without_classes_every_pool_is_a_candidate(pools: dict[PoolRef, Pool]) -> None:
    assert len(candidates(request("anything", "false"), {}, pools)) == len(pools)


def test_a_missing_class_offers_no_pool_and_says_why_once(classes: dict[str, DeviceClass],
                                                          pools: dict[PoolRef, Pool]) -> None:
    """The allocator offers no device of a class that does not exist, whatever the request's own
    selectors match: nothing is evaluated, and `missing_class` is the one reason every caller gives."""
    req = request("unknown.example.com", 'device.driver == "rdma.example.com"')
    assert candidates(req, classes, pools) == []
    match = match_pool(req, classes, pools[PoolRef("rdma.example.com", "node-b")])
    assert (match.candidate, match.class_missing, match.device, match.evaluations) == (False, True, None, 0)
    assert missing_class(req, classes) == ("request 'r': DeviceClass 'unknown.example.com' is not in the "
                                           "input (the scheduler leaves the claim pending)")
    assert missing_class(req, {}) is None  # without classes every class is taken to exist
    assert missing_class(request("gpu.example.com"), classes) is None


def test_first_matching_device_ends_the_search() -> None:
    pool = one_pool(GPU, {**GPU, "name": "gpu-1"}, {**GPU, "name": "gpu-2"})
    classes = {"gpu": device_class("gpu", 'device.driver == "gpu.example.com"')}
    match = match_pool(request("gpu", 'device.attributes["gpu.example.com"].model == "a100"'),
                       classes, pool)
    assert (match.candidate, match.device, match.evaluations) == (True, "gpu-0", 2)
    later = match_pool(request("gpu", "device.capacity['gpu.example.com'].memory"
                                      ".isGreaterThan(quantity('80Gi'))"), classes, pool)
    assert not later.candidate and later.evaluations == 6  # every device, both selectors


def test_a_pool_without_candidates_carries_its_survey_from_the_same_walk() -> None:
    """One walk decides and counts: each device rejected by a class selector or by the first
    request selector that said no; the first device that matches ends the walk, with no survey."""
    nic = {"name": "eth0", "attributes": {"model": {"string": "x"}}}
    pool = one_pool(GPU, {**GPU, "name": "gpu-1", "attributes": {"model": {"string": "h100"}}},
                    {**GPU, "name": "gpu-2"}, {**nic, "name": "gpu-3"})
    classes = {"gpu": device_class("gpu", 'device.attributes["gpu.example.com"].model != "x"')}
    req = request("gpu", 'device.attributes["gpu.example.com"].model == "a100"',
                  "device.capacity['gpu.example.com'].memory.isGreaterThan(quantity('80Gi'))")
    match = match_pool(req, classes, pool)
    assert (match.candidate, match.failure, match.evaluations) == (False, None, 9)  # 3 + 2 + 3 + 1
    assert match.survey == PoolSurvey(devices=4, class_devices=3, excluded=((0, 1), (1, 2)))
    found = match_pool(request("gpu", 'device.attributes["gpu.example.com"].model == "h100"'), classes, pool)
    assert (found.candidate, found.device, found.survey) == (True, "gpu-1", None)
    failed = match_pool(request("gpu", 'device.attributes["gpu.example.com"].missing'), classes, pool)
    assert failed.failure is not None and failed.survey is None


def test_an_error_on_a_later_device_is_not_reached_after_a_match() -> None:
    broken = {"name": "gpu-1", "attributes": {"fw": {"version": "not-semver"}}}
    classes = {"gpu": device_class("gpu", "true")}
    assert pool_is_candidate(request("gpu"), classes, one_pool(GPU, broken))
    with pytest.raises(SelectorError, match="parse semantic version"):
        pool_is_candidate(request("gpu"), classes, one_pool(broken, GPU))


def test_class_selectors_run_before_request_selectors() -> None:
    classes = {"gpu": device_class("gpu", 'device.driver == "nic.example.com"')}
    # the request's selector would fail on this device, but the class already said no
    req = request("gpu", 'device.attributes["gpu.example.com"].missing == 1')
    match = match_pool(req, classes, one_pool(GPU))
    assert (match.candidate, match.failure, match.evaluations) == (False, None, 1)
    assert not pool_is_candidate(req, classes, one_pool(GPU))


# ------------------------------------------------------------------------------------------------
# Errors: the allocator aborts, it does not skip
# ------------------------------------------------------------------------------------------------


def test_a_runtime_error_is_raised_with_the_allocator_wording() -> None:
    classes = {"fpga": device_class("fpga", 'device.attributes["fpga.example.com"].model == "u250"')}
    with pytest.raises(SelectorError) as info:
        pool_is_candidate(request("fpga"), classes, one_pool(GPU))
    failure = info.value.failure
    assert (failure.source, failure.owner, failure.index, failure.stage) == (
        "class", "fpga", 0, "runtime")
    assert failure.device == "gpu.example.com/p/gpu-0"
    assert str(info.value) == (
        "class fpga: selector #0: CEL runtime error: no such key: model. Consider using CEL "
        "optional chaining (?), has() macro, or orValue() for optional fields")


def test_request_selector_errors_name_the_claim() -> None:
    classes = {"gpu": device_class("gpu", "true")}
    req = request("gpu", "true", 'device.attributes["gpu.example.com"].model', name="big")
    match = match_pool(req, classes, one_pool(GPU))
    assert match.failure is not None and not match.candidate
    assert match.failure.message() == (
        "request big: selector #1: CEL runtime error: CEL result of type string could not be "
        "converted to bool: unsupported native conversion from string to 'bool'")
    assert match.failure.message("ml/job").startswith("claim ml/job: selector #1: ")


def test_a_compile_error_is_raised_without_a_device() -> None:
    classes = {"gpu": device_class("gpu", "device.model == 'a100'")}
    with pytest.raises(SelectorError) as info:
        pool_is_candidate(request("gpu"), classes, one_pool(GPU))
    assert info.value.failure.device is None
    assert str(info.value) == (
        "class gpu: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:7: "
        "undefined field 'model'\n | device.model == 'a100'\n | ......^")


def test_the_runtime_cost_limit_is_an_error() -> None:
    ten = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    nested = "true"
    for var in ("a", "b", "c", "d", "e", "f"):
        nested = f"{ten}.all({var}, {nested} && '{var}'.size() == 1)"
    classes = {"gpu": device_class("gpu", nested)}
    # the 1 s CPU ceiling of every evaluation may stop it first (docs/cel-check.md)
    with pytest.raises(SelectorError, match=r"operation cancelled: actual cost limit exceeded|"
                                            r"evaluation stopped after 1 s of CPU"):
        pool_is_candidate(request("gpu"), classes, one_pool(GPU))


def test_selectors_compile_once_across_pools_and_devices(classes: dict[str, DeviceClass],
                                                         pools: dict[PoolRef, Pool]) -> None:
    req = request("fpga.example.com", 'device.attributes["fpga.example.com"].model != "x1"')
    candidates(req, classes, pools)
    _, misses, _ = selector_cache_info()
    candidates(req, classes, pools)
    assert selector_cache_info()[1] == misses


# ------------------------------------------------------------------------------------------------
# End to end: `dra-affinity dry-run` with the example DeviceClasses
# ------------------------------------------------------------------------------------------------

DRY_RUN = ["examples/networking-node-a.yaml", "examples/fpga-bitstream.yaml",
           "examples/fpga-node-g.yaml", "examples/claims.yaml"]


def pairs(*extra: str) -> list[tuple[str, str]]:
    out = run("dry-run", "--format", "json", *DRY_RUN, *extra)
    assert out.code == 0, out.err
    return [(r["claim"], f"{r['pool']['driver']}/{r['pool']['name']}") for r in out.json()["results"]]


def test_dry_run_with_device_classes_restricts_candidate_pools() -> None:
    without = pairs()
    assert ("ml/training-pod-a", "fpga.example.com/node-c") in without
    assert ("serving/inference-fpga", "networking.example.com/node-a") in without
    with_classes = pairs("examples/device-classes.yaml")
    assert with_classes == [
        ("ml/training-pod-a", "networking.example.com/node-a"),
        ("serving/inference-fpga", "fpga.example.com/node-c"),
        ("serving/inference-fpga", "fpga.example.com/node-g"),
    ]


def test_dry_run_request_selectors_are_applied(tmp_path: Path) -> None:
    claims = list(yaml.safe_load_all((REPO / "examples/claims.yaml").read_text()))
    template = copy.deepcopy(claims[1])
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["fpga.example.com"].model == "u280"'}}]
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump_all([claims[0], template]))
    out = run("dry-run", "--format", "json", "examples/networking-node-a.yaml",
              "examples/fpga-bitstream.yaml", str(path), "examples/device-classes.yaml")
    assert out.code == 0, out.err
    # the FPGA pool (model u250) is of the class's driver but no device passes the request's selector
    assert [(r["claim"], r["outcome"]) for r in out.json()["results"]] == [
        ("ml/training-pod-a", "ok"), ("serving/inference-fpga", "no-matching-device")]
    [excluded] = [r for r in out.json()["results"] if r["outcome"] == "no-matching-device"]
    assert excluded["pool"] == {"driver": "fpga.example.com", "name": "node-c"}
