"""DRA's `device` environment (reference §3): declarations, compile rules, costs, evaluation.

The cost and evaluation vectors are DRA's `compile_test.go` (reference §3.5): each expression
with its device, expected estimated maximum cost, match or runtime error; as upstream, the
actual runtime cost must not exceed the estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from dra_affinity.policies.analysis.device import (
    DEVICE_TYPE_NAME,
    DeviceSizeEstimator,
    DeviceValue,
    DeviceValueProblem,
    compile_selector,
    device_schema,
    device_value,
    evaluate_selector,
    selector_cache_info,
    selector_cost,
)
from dra_affinity.policies.cel.check.env import (
    ENV_KINDS,
    DeviceFeatures,
    EnvKey,
    EnvMode,
    dra_device_declaration,
    dra_device_includes,
    dra_list_attributes,
    get_env,
)
from dra_affinity.policies.cel.cost.estimate import SizePath
from dra_affinity.policies.model.resources import Capacity, Device

NEW = EnvMode.NEW_EXPRESSIONS
STORED = EnvMode.STORED_EXPRESSIONS
DRIVER = "dra.example.com"


def key(version: tuple[int, int] = (1, 37), mode: EnvMode = STORED) -> EnvKey:
    return EnvKey(version, mode, "dra-device")


def device(attributes: Mapping[str, Any] | None = None, capacity: Mapping[str, str] | None = None,
           *, multi: bool = False, driver: str = DRIVER) -> DeviceValue:
    value = device_value(
        Device(0, "dev-0", multi, dict(attributes or {}),
               {k: Capacity(v) for k, v in (capacity or {}).items()}),
        driver)
    assert isinstance(value, DeviceValue), value
    return value


# ------------------------------------------------------------------------------------------------
# Declarations per version and mode
# ------------------------------------------------------------------------------------------------


def test_the_dra_device_kind_is_registered_with_bindings() -> None:
    kind = ENV_KINDS["dra-device"]
    assert [o.name for o in kind.options] == ["ext.Bindings(BindingsVersion(0))"]
    env = get_env(key())
    assert set(env.variables) == {"device"}
    assert "ext.Bindings(BindingsVersion(0))" in env.options


ON_ON = DeviceFeatures(consumable_capacity=True, list_type_attributes=True)
CC_ONLY = DeviceFeatures(consumable_capacity=True, list_type_attributes=False)
LISTS_ONLY = DeviceFeatures(consumable_capacity=False, list_type_attributes=True)
OFF_OFF = DeviceFeatures(consumable_capacity=False, list_type_attributes=False)


@pytest.mark.parametrize(("version", "mode", "features", "expected"), [
    ((1, 30), STORED, None, None),
    ((1, 31), NEW, None, None),  # compatibility version 1.30 predates DRA's CEL
    ((1, 31), STORED, None, "1.31"),
    ((1, 33), NEW, None, "1.31"),
    ((1, 34), STORED, None, "1.34 ConsumableCapacity"),
    ((1, 35), NEW, None, "1.31"),  # ConsumableCapacity is alpha (off) in 1.35
    ((1, 35), NEW, CC_ONLY, "1.34 ConsumableCapacity"),
    # 1.36's compiler: stored keeps ConsumableCapacity's declaration, attributes `dyn` only
    # with DRAListTypeAttributes on
    ((1, 36), STORED, None, "1.34 ConsumableCapacity"),
    ((1, 36), STORED, ON_ON, "1.36 ConsumableCapacity+ListTypeAttributes"),
    ((1, 36), NEW, LISTS_ONLY, "1.36 ListTypeAttributes"),
    # 1.37 on: stored has every declaration (the last wins) whatever the gates
    ((1, 37), STORED, OFF_OFF, "1.36 ConsumableCapacity+ListTypeAttributes"),
    ((1, 37), NEW, None, "1.34 ConsumableCapacity"),  # the release's defaults
    ((1, 37), NEW, ON_ON, "1.36 ConsumableCapacity+ListTypeAttributes"),
    ((1, 38), NEW, OFF_OFF, "1.31"),
])
def test_device_declaration_per_version_mode_and_gates(
        version: tuple[int, int], mode: EnvMode, features: DeviceFeatures | None,
        expected: str | None) -> None:
    declaration = dra_device_declaration(version, mode, features)
    assert (declaration.name if declaration else None) == expected


@pytest.mark.parametrize(("version", "mode", "features", "overload"), [
    ((1, 35), STORED, ON_ON, None),
    ((1, 36), STORED, OFF_OFF, "dra_includes_dyn_dyn"),  # stored ignores the gate
    ((1, 36), NEW, OFF_OFF, None),
    ((1, 36), NEW, LISTS_ONLY, "dra_includes_dyn_dyn"),
    ((1, 37), STORED, OFF_OFF, "list_includes_dyn_dyn"),
    ((1, 37), NEW, None, None),
])
def test_includes_per_version_mode_and_gates(version: tuple[int, int], mode: EnvMode,
                                             features: DeviceFeatures | None,
                                             overload: str | None) -> None:
    assert dra_device_includes(version, mode, features) == overload
    selector = compile_selector('device.attributes["d"].ids.includes(1)',
                                EnvKey(version, mode, "dra-device", features))
    assert selector.ok is (overload is not None), selector.detail


def test_list_attributes_are_values_from_1_37_whatever_the_gate() -> None:
    assert dra_list_attributes((1, 37), OFF_OFF)
    assert dra_list_attributes((1, 36), LISTS_ONLY)
    assert not dra_list_attributes((1, 36), CC_ONLY)
    assert not dra_list_attributes((1, 35), ON_ON)


def test_before_dra_device_is_undeclared() -> None:
    selector = compile_selector('device.driver == "x"', key((1, 30)))
    assert not selector.ok
    assert "undeclared reference to 'device'" in (selector.detail or "")


# ------------------------------------------------------------------------------------------------
# Compile rules: device fields, output type
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "message"), [
    ("1", "must evaluate to bool or the unknown type, not int"),
    ("device.driver", "must evaluate to bool or the unknown type, not string"),
    ('device.capacity["d"].memory',
     "must evaluate to bool or the unknown type, not kubernetes.Quantity"),
    ('device.attributes["d"]', "must evaluate to bool or the unknown type, not map(string, dyn)"),
    ("device", f"must evaluate to bool or the unknown type, not {DEVICE_TYPE_NAME}"),
    ('cel.bind(d, device.driver, d)', "must evaluate to bool or the unknown type, not string"),
])
def test_output_type_rule(expression: str, message: str) -> None:
    selector = compile_selector(expression, key())
    assert not selector.ok
    assert selector.detail == message


@pytest.mark.parametrize("expression", [
    "true", 'device.attributes["d"].name', "device.allowMultipleAllocations",
    'cel.bind(a, device.attributes["d"], a.name)', "dyn(1)",
])
def test_bool_and_the_attribute_type_are_accepted(expression: str) -> None:
    selector = compile_selector(expression, key())
    assert selector.ok, selector.detail


def test_before_list_type_attributes_the_attribute_type_is_any() -> None:
    ok = compile_selector('device.attributes["d"].name', key((1, 35), NEW))
    assert ok.ok and ok.output_type == "google.protobuf.Any"
    assert compile_selector("dyn(true)", key((1, 35), NEW)).detail == (
        "must evaluate to bool or the unknown type, not dyn")
    iterated = compile_selector('device.attributes["d"].ids.exists(i, i == 1)', key((1, 35), NEW))
    assert iterated.detail is not None and iterated.detail.startswith("compilation failed: ")
    assert "cannot be the range of a comprehension" in iterated.detail
    assert compile_selector('device.attributes["d"].ids.exists(i, i == 1)', key()).ok


def test_allow_multiple_allocations_needs_consumable_capacity() -> None:
    selector = compile_selector("device.allowMultipleAllocations == false", key((1, 33), NEW))
    assert selector.detail == (
        "compilation failed: ERROR: <input>:1:7: undefined field 'allowMultipleAllocations'\n"
        " | device.allowMultipleAllocations == false\n"
        " | ......^")
    assert compile_selector("device.allowMultipleAllocations == false", key((1, 34))).ok


@pytest.mark.parametrize(("expression", "message"), [
    ("device.name == 'x'", "undefined field 'name'"),
    ("has(device.nope)", "undefined field 'nope'"),
    ('device["driver"] == "x"',
     f"found no matching overload for '_[_]' applied to '({DEVICE_TYPE_NAME}, string)'"),
    ('"driver" in device', f"found no matching overload for '@in' applied to '(string, {DEVICE_TYPE_NAME})'"),
    ("device.all(f, f != '')", f"expression of type '{DEVICE_TYPE_NAME}' cannot be the range"),
])
def test_device_is_an_object_not_a_map(expression: str, message: str) -> None:
    selector = compile_selector(expression, key())
    assert not selector.ok
    assert message in (selector.detail or ""), selector.detail


def test_a_shadowing_variable_is_not_the_device() -> None:
    assert compile_selector("[1].exists(device, device > 0)", key()).ok


def test_syntax_errors_keep_the_engine_wording() -> None:
    selector = compile_selector("?!", key())
    assert not selector.ok and "Syntax error" in (selector.detail or "")


def test_selectors_are_compiled_once() -> None:
    expression = 'device.driver == "cache.example.com"'
    compile_selector(expression, key())
    hits, misses, _ = selector_cache_info()
    again = compile_selector(expression, key())
    assert again is compile_selector(expression, key())
    assert selector_cache_info()[:2] == (hits + 2, misses)


def test_only_the_dra_device_environment_compiles_selectors() -> None:
    with pytest.raises(ValueError, match="dra-device"):
        compile_selector("true", EnvKey((1, 37), STORED))


# ------------------------------------------------------------------------------------------------
# Sizes
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "expected"), [
    (("device", "driver"), 63),
    (("device", "allowMultipleAllocations"), 1),
    (("device", "attributes"), 32),
    (("device", "attributes", "@keys"), 63),
    (("device", "attributes", "@values"), 32),
    (("device", "attributes", "@values", "@keys"), 32),
    (("device", "attributes", "@values", "anything"), 64),
    (("device", "attributes", "@values", "@values"), 64),
    (("device", "capacity", "@values", "@values"), 0),
    (("device", "capacity", "@values", "name"), None),  # a name under capacity is unknown
    (("device", "nope"), None),
    (("object", "driver"), None),
])
def test_declared_sizes(path: tuple[str, ...], expected: int | None) -> None:
    declaration = dra_device_declaration((1, 37), STORED)
    assert declaration is not None
    size = DeviceSizeEstimator(device_schema(declaration)).estimate_size(SizePath(path))
    assert (size.max if size else None) == expected
    assert size is None or size.min == 0


# ------------------------------------------------------------------------------------------------
# compile_test.go vectors: estimated cost, match or error, actual ≤ estimate
# ------------------------------------------------------------------------------------------------

_ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""
_TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
_EXPENSIVE = (f"{_TEN}.all(x, {_TEN}.all(y, {_TEN}.all(z, {_TEN}.all(z2, {_TEN}.all(z3, "
              f"{_TEN}.all(z4, {_TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))")
_SERVICES = {"services": {"string": "some_example_value"}}

# (expression, attributes, capacity, allowMultipleAllocations, estimated max, match or error)
VECTORS: list[tuple[str, dict[str, Any], dict[str, str], bool, int, bool | str]] = [
    ('device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))', {}, {}, False,
     6, "no such key: noSuchAttr"),
    ('device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))', {}, {},
     False, 6, "no such key: noSuchAttr"),
    ('"no-such-domain" in device.attributes', {}, {}, False, 3, False),
    ('"dra.example.com" in device.attributes', {"dra.example.com/something": {"bool": True}}, {},
     False, 3, True),
    ('device.driver == "dra.example.com"', {}, {}, False, 4, True),
    ('device.attributes["dra.example.com"].name', {"name": {"bool": True}}, {}, False, 4, True),
    ('device.attributes["dra.example.com"]["name"]', {"name": {"bool": True}}, {}, False, 4, True),
    ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', {"name": {"bool": True}}, {},
     False, 15, True),
    ('device.attributes["other.example.com"].name', {"other.example.com/name": {"bool": True}}, {},
     False, 4, True),
    ('device.attributes["dra.example.com"].name > 0', {"name": {"int": 1}}, {}, False, 5, True),
    ('device.attributes["dra.example.com"].name == "fish"', {"name": {"string": "fish"}}, {},
     False, 5, True),
    ('device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
     {"name": {"version": "1.0.0"}}, {}, False, 6, True),
    ('device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
     '&& isSemver("v1.0.0", true)', {"name": {"version": "1.0.0"}}, {}, False, 7, True),
    ('device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', {},
     {"name": "1Mi"}, False, 6, True),
    ('"name" in device.capacity["dra.example.com"] '
     '&& device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', {},
     {"name": "1Mi"}, False, 10, True),
    ('!("name" in device.capacity["dra.example.com"]) '
     '|| device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))', {}, {}, False,
     11, True),
    (_ALL, {"bool": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"},
            "version": {"version": "1.0.0"}}, {"quantity": "1Mi"}, False, 52, True),
    ('device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b '
     '&& device.attributes["dra.example.com"].c',
     {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}}, {}, False, 12, True),
    ('device.attributes.exists_one(x, x == "dra.example.com")', _SERVICES, {}, False, 164, True),
    ('device.attributes["dra.example.com"].exists_one(x, x == "services")', _SERVICES, {}, False,
     133, True),
    ('device.attributes["dra.example.com"].services.split("example").size() >= 2', _SERVICES, {},
     False, 19, True),
    ('device.attributes["dra.example.com"].services.matches("[^a]?sym")',
     {"services": {"string": "asymetric"}}, {}, False, 18, True),
    ('device.capacity.exists_one(x, x == "dra.example.com")', {}, {"memory": "1Mi"}, False, 164,
     True),
    ('device.capacity["dra.example.com"].exists_one(x, x == "memory")', {}, {"memory": "1Mi"},
     False, 133, True),
    ("device.allowMultipleAllocations == true", {}, {}, True, 3, True),
    ("device.allowMultipleAllocations == false", {}, {}, False, 3, True),
    (_EXPENSIVE, {}, {}, False, 85_555_551, "operation cancelled: actual cost limit exceeded"),
]


@pytest.mark.parametrize(("expression", "attributes", "capacity", "multi", "cost", "expected"),
                         VECTORS, ids=[v[0].strip()[:60] for v in VECTORS])
def test_compile_test_vectors(expression: str, attributes: dict[str, Any],
                              capacity: dict[str, str], multi: bool, cost: int,
                              expected: bool | str) -> None:
    for mode in (STORED, NEW):
        selector = compile_selector(expression, key(mode=mode))
        assert selector.ok, selector.detail
        report = selector_cost(selector)
        assert report is not None and report.max == cost
    result = evaluate_selector(selector, device(attributes, capacity, multi=multi))
    if isinstance(expected, bool):
        assert result.error is None
        assert result.matched is expected
        assert result.cost <= cost
    else:
        # The walk prices about 200,000 cost units per second of CPU through the engine's
        # bridge, so an evaluation heading for the cost limit may meet the 1 s CPU ceiling of
        # every evaluation (`runtime_steps.MAX_CPU_SECONDS`) first.
        assert result.error is not None
        assert expected in result.error or "evaluation stopped after 1 s of CPU" in result.error
        assert not result.matched


# Vectors of list-valued attributes: the estimate (their evaluation: test_device_oracle.py).
@pytest.mark.parametrize(("expression", "cost"), [
    ('device.attributes["dra.example.com"].names.size() == 2', 6),
    ('1 in device.attributes["dra.example.com"].names', 4 + 64),
    ('device.attributes["dra.example.com"].names.exists(x, x > 0)', 5 + (3 + 3) * 64),
    ('device.attributes["dra.example.com"].names.all(x, x != "")', 5 + (2 + 2) * 64),
    ('device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))',
     5 + (2 + 4) * 64),
    ('device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
     5 + (3 + 4) * 64),
    ('device.attributes["dra.example.com"].names', 4),
])
def test_list_attribute_cost_vectors(expression: str, cost: int) -> None:
    report = selector_cost(compile_selector(expression, key()))
    assert report is not None and report.max == cost


# ------------------------------------------------------------------------------------------------
# Evaluation semantics
# ------------------------------------------------------------------------------------------------


def test_non_bool_results_are_errors() -> None:
    selector = compile_selector('device.attributes["dra.example.com"].name', key())
    result = evaluate_selector(selector, device({"name": {"string": "fish"}}))
    assert result.error == ("CEL result of type string could not be converted to bool: "
                            "unsupported native conversion from string to 'bool'")
    assert evaluate_selector(selector, device({"name": {"int": 3}})).error == (
        "CEL result of type int could not be converted to bool: "
        "unsupported type conversion from 'int' to bool")


def test_missing_attribute_is_an_error_with_the_kubernetes_hint() -> None:
    selector = compile_selector('device.attributes["dra.example.com"].model == "x"', key())
    result = evaluate_selector(selector, device())
    assert result.error == ("no such key: model. Consider using CEL optional chaining (?), "
                            "has() macro, or orValue() for optional fields")


@pytest.mark.parametrize(("expression", "expected"), [
    ('has(device.attributes["gpu.example.com"].model)', False),
    ('device.attributes["gpu.example.com"].size() == 0', True),
    ('device.capacity["gpu.example.com"].size() == 0', True),
    ('device.attributes[?"gpu.example.com"].hasValue()', True),
    ('!has(device.attributes[device.driver].model)', True),
    ('device.attributes.gpu.size() == 0', True),
])
def test_unknown_domains_read_as_empty_maps(expression: str, expected: bool) -> None:
    selector = compile_selector(expression, key())
    result = evaluate_selector(selector, device(driver="nic.example.com"))
    assert result.error is None, result.error
    assert result.matched is expected


def test_a_map_used_as_a_whole_gets_no_default_domains() -> None:
    # A default domain would be visible to `in` and `size()`; the lookup of an unknown domain
    # still gives an empty map, as upstream's map with a default does (the walk's answer).
    assert evaluate_selector(compile_selector('!("gpu.example.com" in device.attributes)', key()),
                             device()).matched
    selector = compile_selector('device.attributes.size() == 0 && '
                                'device.attributes["gpu.example.com"].size() == 0', key())
    assert selector.attributes_plan.whole
    assert selector.attributes_plan.keys == frozenset({"gpu.example.com"})
    assert not selector.capacity_plan.keys and not selector.capacity_plan.whole
    result = evaluate_selector(selector, device())
    assert result.error is None and result.matched
    for expression, matched in (('has(device.attributes.gpu)', True),  # found, as upstream
                                ('cel.bind(a, device.attributes, has(a["x"].model))', False),
                                ('device.capacity.size() == 0 && '
                                 'device.capacity["x"].size() == 0', True)):
        result = evaluate_selector(compile_selector(expression, key()), device())
        assert (result.error, result.matched) == (None, matched), expression


def test_qualified_names_and_the_driver_domain() -> None:
    value = device({"model": {"string": "a"}, "other.example.com/model": {"string": "b"}},
                   {"memory": "1Gi", "other.example.com/slots": "4"})
    assert value.attributes == {DRIVER: {"model": "a"}, "other.example.com": {"model": "b"}}
    assert set(value.capacity) == {DRIVER, "other.example.com"}
    _, plain = value.variables()
    assert plain["device"] == {
        "driver": DRIVER, "allowMultipleAllocations": False,
        "attributes": {DRIVER: {"model": "a"}, "other.example.com": {"model": "b"}},
        "capacity": {DRIVER: {"memory": "1Gi"}, "other.example.com": {"slots": "4"}},
    }


def test_capacity_equality_compares_quantities() -> None:
    selector = compile_selector('device.capacity["dra.example.com"].memory == quantity("1024")',
                                key())
    assert evaluate_selector(selector, device(capacity={"memory": "1Ki"})).matched
    assert not evaluate_selector(selector, device(capacity={"memory": "1k"})).matched
    differs = compile_selector('device.capacity["dra.example.com"].memory != quantity("1Ki")',
                               key())
    assert not evaluate_selector(differs, device(capacity={"memory": "1024"})).matched


def test_versions_are_semver_values() -> None:
    selector = compile_selector(
        'device.attributes["dra.example.com"].fw.isLessThan(semver("2.0.0")) && '
        'device.attributes["dra.example.com"].fw.major() == 1', key())
    assert evaluate_selector(selector, device({"fw": {"version": "1.4.2-rc.1"}})).matched
    assert not evaluate_selector(selector, device({"fw": {"version": "2.1.0"}})).matched


@pytest.mark.parametrize(("attributes", "capacity", "message"), [
    ({"fw": {"version": "1.2"}}, {},
     "attribute fw: parse semantic version: No Major.Minor.Patch elements found"),
    ({"fw": {"versions": ["1.0.0", "2"]}}, {},
     "attribute fw: parse semantic version: No Major.Minor.Patch elements found"),
    ({"fw": {}}, {}, "attribute fw: unsupported attribute value"),
    ({"n": {"int": True}}, {}, "attribute n: invalid int value True"),
    ({}, {"memory": "lots"}, "capacity memory: quantities must match the regular expression"),
])
def test_unconvertible_devices_are_errors(attributes: dict[str, Any], capacity: dict[str, str],
                                          message: str) -> None:
    value = device_value(Device(0, "d", False, attributes,
                                {k: Capacity(v) for k, v in capacity.items()}), DRIVER)
    assert isinstance(value, DeviceValueProblem)
    assert value.message.startswith(message)


def test_list_attributes_without_the_gate_are_unsupported() -> None:
    device_ = Device(0, "d", False, {"fw": {"ints": [1, 2]}}, {})
    value = device_value(device_, DRIVER, list_attributes=False)
    assert isinstance(value, DeviceValueProblem)
    assert value.message == "attribute fw: unsupported attribute value"
    listed = device_value(device_, DRIVER)
    assert isinstance(listed, DeviceValue) and listed.attributes[DRIVER]["fw"] == [1, 2]
