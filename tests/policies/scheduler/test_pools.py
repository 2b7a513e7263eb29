"""The pool validator (`policies.scheduler.pools`) and pool rules SP301–SP306, through the engine."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from dra_affinity.policies.analysis.expression import analyse
from dra_affinity.policies.analysis.slice_cost import slice_cost
from dra_affinity.policies.core.findings import Finding, PoolRef, Severity
from dra_affinity.policies.core.limits import limits_for
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.rules.catalog import catalog
from dra_affinity.policies.rules.context import PoolRule
from dra_affinity.policies.rules.engine import EngineOptions, check_pools, check_slice
from dra_affinity.policies.scheduler.pool_report import pool_report
from dra_affinity.policies.scheduler.pools import build_pools
from dra_affinity.sources.loader import load_paths, load_text

from tests.cli import REPO
from tests.helpers import entry, slice_doc

LIMITS = limits_for()
NIC = {"name": "eth0", "allowMultipleAllocations": True}
EXCLUSIVE = {"name": "eth9"}
POOL = PoolRef("networking.example.com", "node-a")
UNBOUNDED = 'object.items.exists(i, i.name == "x") ? "y" : ""'


def costly_expression(n: int) -> str:
    """A bounded but expensive extractor: nested comprehensions over an n-element literal."""
    values = "[" + ",".join(str(i) for i in range(n)) + "]"
    return f'{values}.exists(a, {values}.exists(b, a == b + 7)) ? "x" : ""'


def slices_from(*docs: dict[str, Any], name: str = "pool.yaml") -> list[ResourceSlice]:
    """Model slices as the CLI does: YAML text with positions, so locations have line:col."""
    loaded = load_text(yaml.safe_dump_all(docs, sort_keys=False), name=name)
    out = [parse(d.data, d.source).obj for d in loaded.documents]
    assert all(isinstance(s, ResourceSlice) for s in out)
    return [s for s in out if isinstance(s, ResourceSlice)]


def pool_findings(slices: list[ResourceSlice], *, complete: bool = False) -> list[Finding]:
    return check_pools(slices, complete_pools=complete)


def rules(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


def where(finding: Finding) -> list[tuple[str | None, str, int]]:
    """(object, field, line) of every location; every one must have a line."""
    out = []
    for loc in finding.locations:
        assert loc.position is not None and loc.object is not None
        out.append((loc.object.name, loc.field_path, loc.position.line))
    return out


# -- building pools ------------------------------------------------------------------------------


def test_pools_group_by_driver_and_name_and_keep_the_highest_generation() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="meta", generation=3, count=2),
        slice_doc(devices=[NIC], name="dev", generation=3, count=2),
        slice_doc(devices=[NIC], name="old", generation=2, count=5),
        slice_doc([entry("subnet")], name="other-driver", driver="rdma.example.com"),
        slice_doc([entry("subnet")], name="other-pool", pool="node-b"),
    )
    pools = build_pools(slices, LIMITS)
    assert list(pools) == [
        PoolRef("networking.example.com", "node-a"),
        PoolRef("networking.example.com", "node-b"),
        PoolRef("rdma.example.com", "node-a"),
    ]
    pool = pools[POOL]
    assert pool.generation == 3
    assert [s.name for s in pool.slices] == ["meta", "dev"]
    assert [s.name for s in pool.superseded] == ["old"]
    assert pool.complete and pool.expected_count == 2 and pool.incomplete_reason == ""
    assert [(d.name, s.name) for d, s in pool.devices] == [("eth0", "dev")]
    assert pool.shareable_devices == 1


def test_extractor_union_maps_each_key_to_its_entry_and_slice() -> None:
    slices = slices_from(
        slice_doc([entry("subnet"), entry("pkey")], name="m1", count=3),
        slice_doc([entry("vlan"), entry("subnet", 'object.?kind.orValue("") == "K" ? "a" : ""')],
                  name="m2", count=3),
        slice_doc(devices=[NIC, EXCLUSIVE], name="d", count=3),
    )
    pool = build_pools(slices, LIMITS)[POOL]
    assert {k: (e.index, s.name) for k, (e, s) in pool.extractors.items()} == {
        "subnet": (0, "m1"), "pkey": (1, "m1"), "vlan": (0, "m2")
    }
    assert [(e.name, s.name) for e, s in pool.declarations] == [
        ("subnet", "m1"), ("pkey", "m1"), ("vlan", "m2"), ("subnet", "m2")
    ]
    assert pool.duplicate_keys == ("subnet",)
    assert [s.name for s in pool.metadata_slices] == ["m1", "m2"]
    assert len(pool.devices) == 2 and pool.shareable_devices == 1


def test_pool_cost_is_the_saturating_sum_of_the_slice_rule_costs() -> None:
    e1, e2 = costly_expression(30), 'object.?kind.orValue("") == "NICConfig" ? "a" : ""'
    slices = slices_from(
        slice_doc([entry("a", e1), entry("b", e2)], name="m1", count=2),
        slice_doc([entry("c", e2)], name="m2", count=2),
    )
    pool = build_pools(slices, LIMITS)[POOL]
    by_analysis = [analyse(e, LIMITS.kubernetes_version).cost for e in (e1, e2, e2)]
    assert all(c is not None for c in by_analysis)
    assert pool.total_cost == sum(c.max for c in by_analysis if c is not None)
    assert pool.slice_costs == tuple(slice_cost(s, LIMITS) for s in slices)
    huge = slices_from(  # reference V-A5: 1844674407370955265 each, summed exactly
        slice_doc([entry("a", '"p-" + object.x')], name="m1", count=2),
        slice_doc([entry("b", '"q-" + object.y')], name="m2", count=2),
    )
    assert build_pools(huge, LIMITS)[POOL].total_cost == 2 * 1844674407370955265
    saturated = slices_from(  # reference V-A8: the maximum uint64; the sum sticks there
        slice_doc([entry("a", UNBOUNDED)], name="m1", count=2),
        slice_doc([entry("b", UNBOUNDED)], name="m2", count=2),
    )
    assert build_pools(saturated, LIMITS)[POOL].total_cost == 2**64 - 1


# -- SP301 -------------------------------------------------------------------------------------


def test_sp301_duplicate_key_across_metadata_slices_points_at_every_declaration() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="m1", count=3),
        slice_doc([entry("pkey"), entry("subnet")], name="m2", count=3),
        slice_doc(devices=[NIC], name="d", count=3),
    )
    [finding] = pool_findings(slices)
    assert finding.rule == "SP301" and finding.severity is Severity.ERROR
    assert finding.pool == POOL
    assert 'key "subnet" is declared by 2 metadata slices' in finding.message
    assert "slice key collision" in finding.message
    text = (yaml.safe_dump_all([s.raw for s in slices], sort_keys=False)).splitlines()
    located = where(finding)
    assert [(o, f) for o, f, _ in located] == [
        ("m1", "spec.sharingAffinity[0].name"), ("m2", "spec.sharingAffinity[1].name")
    ]
    assert all("name: subnet" in text[line - 1] for _, _, line in located)


def test_sp301_not_for_a_duplicate_within_one_slice_nor_for_superseded_slices() -> None:
    within = slices_from(slice_doc([entry("k"), entry("k")], name="m"))
    assert "SP301" not in rules(pool_findings(within))
    assert "SA102" in rules(check_slice(within[0]))
    across_generations = slices_from(
        slice_doc([entry("subnet")], name="new", generation=2),
        slice_doc([entry("subnet")], name="old", generation=1),
    )
    assert rules(pool_findings(across_generations)) == ["SP306"]


# -- SP302 -------------------------------------------------------------------------------------


def test_sp302_over_budget_only_in_total() -> None:
    expression = costly_expression(300)
    single = analyse(expression, LIMITS.kubernetes_version).cost
    assert single is not None and single.max <= LIMITS.slice_cost_budget < 2 * single.max
    slices = slices_from(
        slice_doc([entry("a", expression)], name="m1", count=3),
        slice_doc([entry("b", expression)], name="m2", count=3),
        slice_doc(devices=[NIC], name="d", count=3),
    )
    assert not [f for s in slices for f in check_slice(s) if f.rule == "SA108"]
    [finding] = pool_findings(slices)
    assert finding.rule == "SP302" and finding.severity is Severity.ERROR
    assert f"({2 * single.max}) exceeds cost limit 1000000" in finding.message
    assert f"m1 {single.max}, m2 {single.max}" in finding.message
    assert [(o, f) for o, f, _ in where(finding)] == [
        ("m1", "spec.sharingAffinity"), ("m2", "spec.sharingAffinity")
    ]


def test_sp302_leaves_a_single_metadata_slice_to_sa108_and_names_unbounded_costs() -> None:
    alone = slices_from(slice_doc([entry("a", '"p-" + object.x')], name="m"))
    assert "SP302" not in rules(pool_findings(alone))
    assert "SA108" in rules(check_slice(alone[0]))
    two = slices_from(
        slice_doc([entry("a", UNBOUNDED)], name="m1", count=2),
        slice_doc([entry("b", 'object.?kind.orValue("") == "K" ? "b" : ""')], name="m2", count=2),
    )
    [finding] = pool_findings(two)
    assert finding.rule == "SP302"
    assert "(unbounded (18446744073709551615))" in finding.message


def test_sp302_within_budget_is_silent() -> None:
    slices = slices_from(
        slice_doc([entry("a", costly_expression(200))], name="m1", count=2),
        slice_doc([entry("b", costly_expression(200))], name="m2", count=2),
    )
    assert pool_findings(slices) == []


# -- SP303 / SP304 ------------------------------------------------------------------------------


def test_sp303_is_a_warning_on_partial_input_and_an_error_on_complete_input() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="m", count=3),
        slice_doc(devices=[NIC], name="d", count=3),
    )
    [warning] = pool_findings(slices)
    assert warning.rule == "SP303" and warning.severity is Severity.WARNING
    assert "2 of the 3 slices its resourceSliceCount announces are present at generation 1" in warning.message
    assert "pass --complete-pools" in warning.message
    assert [(o, f) for o, f, _ in where(warning)] == [
        ("m", "spec.pool.resourceSliceCount"), ("d", "spec.pool.resourceSliceCount")
    ]
    [error] = pool_findings(slices, complete=True)
    assert error.severity is Severity.ERROR and "--complete-pools" not in error.message
    pool = build_pools(slices, LIMITS)[POOL]
    assert not pool.complete
    assert pool.incomplete_reason == "2 of 3 slices (resourceSliceCount) present at generation 1"


def test_sp303_too_many_slices_names_repeated_slices() -> None:
    slices = slices_from(slice_doc([entry("subnet")], name="m"), slice_doc([entry("pkey")], name="m"))
    [finding] = pool_findings(slices)
    assert finding.rule == "SP303"
    assert "2 slices are present but resourceSliceCount is 1" in finding.message
    assert "slice name m appears more than once" in finding.message


def test_sp304_disagreeing_counts_replace_sp303() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="m", count=2),
        slice_doc(devices=[NIC], name="d1", count=2),
        slice_doc(devices=[NIC], name="d2", count=3),
    )
    [finding] = pool_findings(slices)
    assert finding.rule == "SP304" and finding.severity is Severity.WARNING
    assert "(m, d1 say 2; d2 say 3)" in finding.message
    assert len(finding.locations) == 3
    assert pool_findings(slices, complete=True)[0].severity is Severity.ERROR
    pool = build_pools(slices, LIMITS)[POOL]
    assert pool.expected_count is None and not pool.complete
    assert "disagree on resourceSliceCount (2, 3)" in pool.incomplete_reason


# -- SP305 / SP306 ------------------------------------------------------------------------------


def test_sp305_affinity_without_shareable_devices() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="m", count=2),
        slice_doc(devices=[EXCLUSIVE], name="d", count=2),
    )
    [finding] = pool_findings(slices)
    assert finding.rule == "SP305" and finding.severity is Severity.WARNING
    assert "none of its 1 device sets allowMultipleAllocations: true" in finding.message
    assert [(o, f) for o, f, _ in where(finding)] == [("m", "spec.sharingAffinity"), ("d", "spec.devices")]
    shareable = slices_from(
        slice_doc([entry("subnet")], name="m", count=2),
        slice_doc(devices=[EXCLUSIVE, NIC], name="d", count=2),
    )
    assert pool_findings(shareable) == []
    assert pool_findings(slices_from(slice_doc([entry("subnet")], name="m"))) == []  # no devices seen


def test_sp306_superseded_slices_point_at_old_then_current_generations() -> None:
    slices = slices_from(
        slice_doc([entry("subnet")], name="old-m", generation=4, count=2),
        slice_doc([entry("subnet")], name="m", generation=5, count=1),
        slice_doc(devices=[NIC], name="old-d", generation=3, count=2),
    )
    [finding] = pool_findings(slices)
    assert finding.rule == "SP306" and finding.severity is Severity.INFO
    assert "2 superseded slices" in finding.message and "generation 3, 4" in finding.message
    assert [o for o, _, _ in where(finding)] == ["old-m", "old-d", "m"]
    assert {f for _, f, _ in where(finding)} == {"spec.pool.generation"}


def test_disabled_rules_are_skipped() -> None:
    slices = slices_from(slice_doc([entry("subnet")], name="m", count=2))
    options = EngineOptions(disabled_rules=frozenset({"SP303"}))
    assert check_pools(slices, options) == []


def test_every_pool_rule_is_implemented() -> None:
    pool_rules = {r.id: r for r in catalog().values() if r.id.startswith("SP")}
    assert sorted(pool_rules) == ["SP301", "SP302", "SP303", "SP304", "SP305", "SP306"]
    assert all(isinstance(r, PoolRule) for r in pool_rules.values())


# -- reports on the KEP's examples ----------------------------------------------------------------


def example_pools(*names: str) -> dict[PoolRef, Any]:
    loaded = load_paths([str(REPO / "examples" / n) for n in names])
    slices = [s for d in loaded.documents if isinstance(s := parse(d.data, d.source).obj, ResourceSlice)]
    return build_pools(slices, LIMITS)


@pytest.mark.parametrize(
    ("file", "ref", "generation", "keys", "devices"),
    [
        ("networking-node-a.yaml", PoolRef("networking.example.com", "node-a"), 7,
         [("subnet", "networking-node-a-meta"), ("pkey", "networking-node-a-meta")], (1, 1)),
        ("rdma-pkey.yaml", PoolRef("rdma.example.com", "node-b"), 1,
         [("pkey", "rdma-node-b-meta")], (2, 2)),
        ("fpga-bitstream.yaml", PoolRef("fpga.example.com", "node-c"), 3,
         [("bitstream", "fpga-node-c-meta")], (1, 1)),
    ],
)
def test_pool_report_on_the_kep_examples(
    file: str, ref: PoolRef, generation: int, keys: list[tuple[str, str]], devices: tuple[int, int]
) -> None:
    pool = example_pools(file)[ref]
    report = pool_report(pool, LIMITS, check_pools(list(pool.slices) + list(pool.superseded)))
    assert report.generation == generation
    assert (report.complete, report.present, report.expected) == (True, 2, 2)
    assert list(report.keys) == keys
    assert (report.devices, report.shareable_devices) == devices
    assert report.findings == ()
    assert report.cost_budget == 1_000_000
    meta = pool.metadata_slices[0]
    assert report.total_cost == sum(
        c.max for e in meta.sharing_affinity
        if (c := analyse(e.expression or "", LIMITS.kubernetes_version).cost) is not None
    )
    assert [(s.role, s.file) for s in report.slices] == [
        ("metadata", f"{REPO}/examples/{file}"), ("devices", f"{REPO}/examples/{file}")
    ]
    assert all(s.position is not None and s.position.column == 1 for s in report.slices)


KEP_GUARDED = (
    'object.apiVersion == "networking.example.com/v1"\n  && object.kind == "NICConfig"\n'
    '  ? object.{field} : ""\n'
)
"""The KEP's Design Details extractor, verbatim (examples/ now returns a bounded `format`)."""


def test_design_details_extractors_cost_the_reference_vector() -> None:
    # k8s-cel-reference V-A2: the KEP's guarded subnet extractor estimates {2, 7}; two of them.
    entries = [entry("subnet", KEP_GUARDED.format(field="subnetID")),
               entry("pkey", KEP_GUARDED.format(field="ibPKey"))]
    [pool] = build_pools(slices_from(slice_doc(entries)), LIMITS).values()
    assert pool.slice_costs == (14,) and pool.total_cost == 14


def test_the_shipped_example_pool_costs_the_sum_of_its_extractors() -> None:
    pool = example_pools("networking-node-a.yaml")[POOL]
    [metadata] = pool.metadata_slices
    assert pool.total_cost == slice_cost(metadata, LIMITS) > 0
