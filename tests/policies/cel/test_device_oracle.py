"""Device selectors measured against upstream: DRA's own test table, and the real compiler.

1. `TestCEL` of `k8s.io/dynamic-resource-allocation/cel` at kubernetes-1.36.2 (`compile_test.go`),
   ported as data: each scenario's gates, environment, expression and device, with upstream's
   expected compile error, estimated cost, match or runtime error. A scenario without a fixed
   DRAListTypeAttributes runs twice (off and on), as upstream runs it. Texts are compared as
   upstream compares them (the expected text is contained in ours), Go type names included
   (`got 'cel.Semver', expected iterable type`).
2. A bounded differential run against `shared/oracle/celoracle-1.36` (`device_oracle`), skipped
   with the reason when the oracle is absent or cannot run; the long run is the documented
   command in `device_oracle`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from dra_affinity.policies.analysis.device import (
    DeviceValue,
    compile_selector,
    device_value,
    evaluate_selector,
    selector_cost,
)
from dra_affinity.policies.cel.check.env import DeviceFeatures, EnvKey, EnvMode, dra_list_attributes
from dra_affinity.policies.model.resources import Capacity, Device

from tests.policies.cel import device_oracle
from tests.policies.cel.test_device_env import _ALL, _TEN

NEW = EnvMode.NEW_EXPRESSIONS
STORED = EnvMode.STORED_EXPRESSIONS
D = "dra.example.com"
LIST_MAX = 64  # max(DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice)


@dataclass(frozen=True)
class Scenario:
    expression: str
    mode: EnvMode = STORED
    consumable_capacity: bool = False
    list_type_attributes: bool | None = None  # None: run with the gate off and on
    driver: str = ""
    multi: bool | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    compile_error: str = ""
    match_error: str = ""
    match: bool = False
    cost: int = 0


def _long(n: int) -> dict[str, Any]:
    return {"name": {"strings": [f"value-{i}" for i in range(n)]}}


def _expensive_attributes() -> dict[str, Any]:
    out = {}
    for i in range(32):
        suffix = f"-{i}"
        out[f"{D}/" + "x" * (32 - len(suffix)) + suffix] = {"string": "abc"}
    return out


_NAME = f'device.attributes["{D}"].name'
_NAMES = f'device.attributes["{D}"].names'
_SERVICES = {"services": {"string": "some_example_value"}}


def _includes(kind: str, value: Any, argument: str, match: bool, extra: int = 0) -> Scenario:
    return Scenario(f"{_NAME}.includes({argument})", NEW, list_type_attributes=True, driver=D,
                    attributes={"name": {kind: value}}, match=match, cost=4 + 48 + extra)


SCENARIOS: dict[str, Scenario] = {
    "true": Scenario("true", match=True),
    "false": Scenario("false", match=False),
    "syntax-error": Scenario("?!", compile_error="Syntax error"),
    "type-error": Scenario("1", compile_error="must evaluate to bool or the unknown type, not int"),
    "runtime-error-lookup-identifier": Scenario(
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr", cost=6),
    "runtime-error-lookup-map": Scenario(
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        match_error="no such key: noSuchAttr", cost=6),
    "domain-check-negative": Scenario('"no-such-domain" in device.attributes', cost=3),
    "domain-check-positive": Scenario('"dra.example.com" in device.attributes',
                                      attributes={f"{D}/something": {"bool": True}},
                                      match=True, cost=3),
    "empty-driver-name": Scenario('device.driver == ""', match=True, cost=2),
    "real-driver-name": Scenario(f'device.driver == "{D}"', driver=D, match=True, cost=4),
    "driver-name-qualifier": Scenario(_NAME, driver=D, attributes={"name": {"bool": True}},
                                      match=True, cost=4),
    "driver-name-qualifier-map-lookup": Scenario(f'device.attributes["{D}"]["name"]', driver=D,
                                                 attributes={"name": {"bool": True}}, match=True,
                                                 cost=4),
    "bind": Scenario(f'cel.bind(dra, device.attributes["{D}"], dra.name)', driver=D,
                     attributes={"name": {"bool": True}}, match=True, cost=15),
    "qualified-attribute-name": Scenario('device.attributes["other.example.com"].name', driver=D,
                                         attributes={"other.example.com/name": {"bool": True}},
                                         match=True, cost=4),
    "bool": Scenario(_NAME, driver=D, attributes={"name": {"bool": True}}, match=True, cost=4),
    "int": Scenario(f"{_NAME} > 0", driver=D, attributes={"name": {"int": 1}}, match=True, cost=5),
    "string": Scenario(f'{_NAME} == "fish"', driver=D, attributes={"name": {"string": "fish"}},
                       match=True, cost=5),
    "macro-exists-on-int": Scenario(
        f"{_NAME}.exists(x, x > 0)", NEW, list_type_attributes=True, driver=D,
        attributes={"name": {"int": 1}}, match_error="got 'types.Int', expected iterable type",
        cost=5 + 6 * LIST_MAX),
    "macro-exists-on-bool": Scenario(
        f"{_NAME}.exists(x, x == true)", NEW, list_type_attributes=True, driver=D,
        attributes={"name": {"bool": True}}, match_error="got 'types.Bool', expected iterable type",
        cost=5 + 6 * LIST_MAX),
    "macro-exists-on-string": Scenario(
        f'{_NAME}.exists(x, x == "fish")', NEW, list_type_attributes=True, driver=D,
        attributes={"name": {"string": "fish"}},
        match_error="got 'types.String', expected iterable type", cost=5 + 6 * LIST_MAX),
    "attribute-access-causes-match-error": Scenario(
        _NAMES, list_type_attributes=False, driver=D,
        attributes={"names": {"strings": ["fish", "bird"]}},
        match_error="attribute names: unsupported attribute value", cost=4),
    "list-of-bool": Scenario(f"{_NAMES}.size() == 2", NEW, list_type_attributes=True, driver=D,
                             attributes={"names": {"bools": [True, False]}}, match=True, cost=6),
    "list-of-int": Scenario(f"{_NAMES}.size() == 2", NEW, list_type_attributes=True, driver=D,
                            attributes={"names": {"ints": [1, 2]}}, match=True, cost=6),
    "list-of-string": Scenario(f"{_NAMES}.size() == 2", NEW, list_type_attributes=True, driver=D,
                               attributes={"names": {"strings": ["fish", "bird"]}}, match=True,
                               cost=6),
    "list-of-semver": Scenario(f"{_NAMES}.size() == 2", NEW, list_type_attributes=True, driver=D,
                               attributes={"names": {"versions": ["1.0.0", "2.0.0"]}},
                               match=True, cost=6),
    "macro-on-list-of-int": Scenario(f"{_NAMES}.exists(x, x > 0)", NEW, list_type_attributes=True,
                                     driver=D, attributes={"names": {"ints": [1, 2]}},
                                     match=True, cost=5 + 6 * LIST_MAX),
    "macro-on-list-of-string": Scenario(f'{_NAMES}.all(x, x != "")', NEW,
                                        list_type_attributes=True, driver=D,
                                        attributes={"names": {"strings": ["fish", "bird"]}},
                                        match=True, cost=5 + 4 * LIST_MAX),
    "macro-on-list-of-semver": Scenario(f'{_NAMES}.all(x, x.isGreaterThan(semver("0.0.1")))', NEW,
                                        list_type_attributes=True, driver=D,
                                        attributes={"names": {"versions": ["1.0.0", "2.0.0"]}},
                                        match=True, cost=5 + 6 * LIST_MAX),
    "includes-function-undeclared-error": Scenario(
        f'{_NAME}.includes("fish")', NEW, list_type_attributes=False, driver=D,
        compile_error="undeclared reference to 'includes'"),
    "includes-function-on-bool-scalar-positive": _includes("bool", True, "true", True),
    "includes-function-on-bool-scalar-negative": _includes("bool", False, "true", False),
    "includes-function-on-bool-list-positive": _includes("bools", [True, False], "true", True),
    "includes-function-on-bool-list-negative": _includes("bools", [True, True], "false", False),
    "includes-function-on-int-scalar-positive": _includes("int", 1, "1", True),
    "includes-function-on-int-scalar-negative": _includes("int", 2, "1", False),
    "includes-function-on-int-list-positive": _includes("ints", [1, 2], "1", True),
    "includes-function-on-int-list-negative": _includes("ints", [1, 2], "3", False),
    "includes-function-on-string-scalar-positive": _includes("string", "fish", '"fish"', True),
    "includes-function-on-string-scalar-negative": _includes("string", "fish", '"bird"', False),
    "includes-function-on-string-list-positive": _includes("strings", ["fish", "bird"], '"fish"',
                                                           True),
    "includes-function-on-string-list-negative": _includes("strings", ["fish", "bird"], '"cat"',
                                                           False),
    "includes-function-on-semver-scalar-positive": _includes("version", "1.0.0",
                                                             'semver("1.0.0")', True, 1),
    "includes-function-on-semver-scalar-negative": _includes("version", "1.0.0",
                                                             'semver("2.0.0")', False, 1),
    "includes-function-on-semver-list-positive": _includes("versions", ["1.0.0", "2.0.0"],
                                                           'semver("1.0.0")', True, 1),
    "includes-function-on-semver-list-negative": _includes("versions", ["1.0.0", "2.0.0"],
                                                           'semver("3.0.0")', False, 1),
    "includes-function-on-very-long-list-positive": Scenario(
        f'{_NAME}.includes("value-48")', NEW, list_type_attributes=True, driver=D,
        attributes=_long(48), match=False, cost=4 + 48),
    "includes-function-on-very-long-list-runtime-error": Scenario(
        f'{_NAME}.includes("value-49")', NEW, list_type_attributes=True, driver=D,
        attributes=_long(49),
        match_error="'includes' function cannot be applied to lists longer than 48 values",
        cost=4 + 48),
    "in-operator-on-list": Scenario(f"1 in {_NAMES}", NEW, list_type_attributes=True, driver=D,
                                    attributes={"names": {"ints": [1, 2, 3]}}, match=True,
                                    cost=4 + 64),
    "version": Scenario(f'{_NAME}.isGreaterThan(semver("0.0.1"))', driver=D,
                        attributes={"name": {"version": "1.0.0"}}, match=True, cost=6),
    "version_v": Scenario(f'{_NAME}.isGreaterThan(semver("v0.0.1", true)) && '
                          'isSemver("v1.0.0", true)', driver=D,
                          attributes={"name": {"version": "1.0.0"}}, match=True, cost=7),
    "macro-exists-on-version": Scenario(
        f'{_NAME}.exists(x, x.isGreaterThan(semver("0.0.1")))', NEW, list_type_attributes=True,
        driver=D, attributes={"name": {"version": "1.0.0"}},
        match_error="got 'cel.Semver', expected iterable type", cost=5 + 7 * LIST_MAX),
    "quantity": Scenario(f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))', driver=D,
                         capacity={"name": "1Mi"}, match=True, cost=6),
    "check-positive": Scenario(f'"name" in device.capacity["{D}"] && '
                               f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
                               driver=D, capacity={"name": "1Mi"}, match=True, cost=10),
    "check-negative": Scenario(f'!("name" in device.capacity["{D}"]) || '
                               f'device.capacity["{D}"].name.isGreaterThan(quantity("1Ki"))',
                               match=True, cost=11),
    "all": Scenario(_ALL, driver=D, attributes={"bool": {"bool": True}, "int": {"int": 1},
                                                "string": {"string": "fish"},
                                                "version": {"version": "1.0.0"}},
                    capacity={"quantity": "1Mi"}, match=True, cost=52),
    "many": Scenario(f'device.attributes["{D}"].a && device.attributes["{D}"].b && '
                     f'device.attributes["{D}"].c', driver=D,
                     attributes={"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
                     match=True, cost=12),
    "check_attribute_domains": Scenario(f'device.attributes.exists_one(x, x == "{D}")', driver=D,
                                        attributes=_SERVICES, match=True, cost=164),
    "check_attribute_ids": Scenario(f'device.attributes["{D}"].exists_one(x, x == "services")',
                                    driver=D, attributes=_SERVICES, match=True, cost=133),
    "split_attribute": Scenario(f'device.attributes["{D}"].services.split("example").size() >= 2',
                                driver=D, attributes=_SERVICES, match=True, cost=19),
    "regexp_attribute": Scenario(f'device.attributes["{D}"].services.matches("[^a]?sym")',
                                 driver=D, attributes={"services": {"string": "asymetric"}},
                                 match=True, cost=18),
    "check_capacity_domains": Scenario(f'device.capacity.exists_one(x, x == "{D}")', driver=D,
                                       capacity={"memory": "1Mi"}, match=True, cost=164),
    "check_capacity_ids": Scenario(f'device.capacity["{D}"].exists_one(x, x == "memory")',
                                   driver=D, capacity={"memory": "1Mi"}, match=True, cost=133),
    "expensive": Scenario(
        f"{_TEN}.all(x, {_TEN}.all(y, {_TEN}.all(z, {_TEN}.all(z2, {_TEN}.all(z3, {_TEN}.all(z4, "
        f"{_TEN}.all(z5, int('1'.find('[0-9]*')) < 100)))))))", driver=D,
        attributes=_expensive_attributes(), match_error="actual cost limit exceeded",
        cost=85_555_551),
    "allow_multiple_allocations": Scenario("device.allowMultipleAllocations == true",
                                           consumable_capacity=True, multi=True, driver=D,
                                           match=True, cost=3),
    "allow_multiple_allocations_default": Scenario("device.allowMultipleAllocations == false",
                                                   consumable_capacity=True, driver=D,
                                                   match=True, cost=3),
    "allow_multiple_allocations_false": Scenario("device.allowMultipleAllocations == false",
                                                 consumable_capacity=True, multi=False, driver=D,
                                                 match=True, cost=3),
    "allow_multiple_allocations_new": Scenario("device.allowMultipleAllocations == false", NEW,
                                               consumable_capacity=True, multi=False, driver=D,
                                               match=True, cost=3),
    "allow_multiple_allocations_disabled": Scenario(
        "device.allowMultipleAllocations == false", NEW, consumable_capacity=False, driver=D,
        compile_error="undefined field 'allowMultipleAllocations'"),
}
"""The scenarios of `compile_test.go` (1.36.2); `allow_multiple_allocations_enabled` is the
same scenario as `allow_multiple_allocations_new` and is not repeated."""

CPU_CEILING = "evaluation stopped after 1 s of CPU"

RUNS = [(name, lists) for name, s in SCENARIOS.items()
        for lists in ((False, True) if s.list_type_attributes is None else (s.list_type_attributes,))]


@pytest.mark.parametrize(("name", "lists"), RUNS, ids=[f"{n}-lists-{lt}" for n, lt in RUNS])
def test_upstream_compile_test_table(name: str, lists: bool) -> None:
    s = SCENARIOS[name]
    version = (1, 36)
    features = DeviceFeatures(s.consumable_capacity, lists)
    selector = compile_selector(s.expression, EnvKey(version, s.mode, "dra-device", features))
    if s.compile_error:
        assert not selector.ok
        assert s.compile_error in (selector.detail or "")
        return
    assert selector.ok, selector.detail
    report = selector_cost(selector)
    assert report is not None and report.max == s.cost
    value = device_value(Device(0, "d", bool(s.multi), s.attributes,
                                {k: Capacity(v) for k, v in s.capacity.items()}),
                         s.driver, list_attributes=dra_list_attributes(version, features))
    if not isinstance(value, DeviceValue):
        assert s.match_error and s.match_error in value.message
        return
    result = evaluate_selector(selector, value)
    assert result.cost <= report.max
    if s.match_error:
        assert result.error is not None, f"matched={result.matched}, expected an error"
        # the per-evaluation CPU ceiling may stop an evaluation heading for the cost limit first
        assert s.match_error in result.error or (
            s.match_error == "actual cost limit exceeded"
            and result.error.endswith(CPU_CEILING)), result.error
        return
    assert result.error is None, result.error
    assert result.matched is s.match


# ------------------------------------------------------------------------------------------------
# Differential, bounded
# ------------------------------------------------------------------------------------------------

BOUNDED_CASES = 400
REQUIRED_AGREEMENT = 0.995
"""The bounded run's floor; the known remaining differences are listed in docs/releases.md
("Device selectors")."""

CORPUS = device_oracle.corpus()
KNOWN_DIFFERENCES = {
    'device.attributes["dra.example.com"].v in {"a": 1}':
        "a Semver looked up in a map literal: Go's map panics on the unhashable struct (an "
        "internal error) where the walk, which cannot tell a literal map from the device's, "
        "answers false as upstream does for the device's maps",
    'device.attributes["dra.example.com"]["i"] == optional.of(device.allowMultipleAllocations)':
        "the estimate: cel-go sizes an optional of the bool field below what is reproduced here",
}
"""Corpus cases the project still answers differently, with the reason (docs/releases.md)."""


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i}" for i in range(len(CORPUS))])
def test_fixed_disagreements_stay_fixed(entry: device_oracle.CorpusEntry) -> None:
    """Each recorded case (the oracle's answer kept in `device_corpus.jsonl`) agrees on compile
    verdict, type, estimate, value and error class, and on the runtime error's text."""
    ours = device_oracle.project_outcome(entry.case)
    if entry.case.expression in KNOWN_DIFFERENCES:
        assert device_oracle.differences(ours, entry.oracle), "fixed: drop it from the list"
        return
    assert device_oracle.differences(ours, entry.oracle) == [], (ours, entry.oracle)
    if ours.compiled and ours.error is not None and entry.oracle.error is not None:
        assert device_oracle.error_text(ours.error) == entry.oracle.error


def test_the_corpus_holds_what_the_oracle_answers() -> None:
    problem = device_oracle.oracle_problem()
    if problem is not None:
        pytest.skip(problem)
    answers = device_oracle.oracle_outcomes([e.case for e in CORPUS])
    assert [e.oracle for e in CORPUS] == answers


def test_generated_selectors_agree_with_the_dra_compiler() -> None:
    problem = device_oracle.oracle_problem()
    if problem is not None:
        pytest.skip(problem)
    figures = device_oracle.compare(list(device_oracle.cases(BOUNDED_CASES, seed=7)))
    assert figures.cases == BOUNDED_CASES
    assert figures.compiled > BOUNDED_CASES // 3  # the generator reaches evaluation
    assert figures.agreed / figures.cases >= REQUIRED_AGREEMENT, figures.as_json()
    # compile verdicts, output types and estimates agree on every case
    assert figures.by_aspect is not None
    assert not {"compile verdict", "output type", "estimate"} & set(figures.by_aspect), \
        figures.as_json()
