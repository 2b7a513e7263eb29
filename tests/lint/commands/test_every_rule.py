"""Every rule id of SPEC §2–§4 fires end to end through the installed console script."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.cli import run
from tests.helpers import entry, slice_doc

HEAVY_LIST = "[" + ",".join(["'a'"] * 300) + "]"
EXPRESSIONS = {
    "SA106": "object.subnetID.",
    "SA107": "42",
    "SA108": '"prefix-" + object.x',
    "SA201": 'has(object.a) ? object.b : ""',
    "SA202": 'has(object.a) ? object.a : ""',
    "SA203": 'object.?x.orValue("")',
    "SA204": f"{HEAVY_LIST}.all(x, {HEAVY_LIST.replace('a', 'b')}.all(y, x != y)) ? 'k' : ''",
    "SA205": '"object.subnetID"',
    "SA206": "object.subnetID",
    "SA207": "(" * 40 + '""' + ")" * 40,
    "SA208": "object.?kind.orValue('') == 'NICConfig' ? '%.999999999f'.format([1.5]) : ''",
}


def test_every_expression_rule_is_reported_at_its_entry(tmp_path: Path) -> None:
    docs = [slice_doc([entry("k", expr)], name=rule.lower(), pool=rule.lower())
            for rule, expr in EXPRESSIONS.items()]
    path = tmp_path / "slices.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False, width=10_000))
    result = run("lint", "--format", "json", "--no-pools", str(path))
    assert result.code == 1
    found = {(f["rule"], f["object"]["name"]) for f in result.json()["findings"]}
    for rule in EXPRESSIONS:
        assert (rule, rule.lower()) in found, rule
    for finding in result.json()["findings"]:
        assert finding["file"] == str(path) and finding["line"] >= 1 and finding["column"] >= 1
        assert finding["field"].startswith("spec.sharingAffinity")


def _count_mismatch_pool(tmp_path: Path) -> Path:
    """A pool whose two slices disagree on `resourceSliceCount` (2 and 3)."""
    docs = [
        slice_doc([entry("k")], name="meta", count=2),
        slice_doc(None, devices=[{"name": "eth0", "allowMultipleAllocations": True}],
                  name="dev", count=3),
    ]
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_count_mismatch_sp304(tmp_path: Path) -> None:
    path = _count_mismatch_pool(tmp_path)
    result = run("lint", "--format", "json", "--complete-pools", str(path))
    [finding] = [f for f in result.json()["findings"] if f["rule"] == "SP304"]
    assert finding["severity"] == "error"
    assert {loc["object"]["name"] for loc in finding["locations"]} == {"meta", "dev"}
    assert result.code == 1


def _claim(name: str, *params: dict) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "t"},
            "spec": {"devices": {
                "requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}],
                "config": [{"opaque": {"driver": "d.example.com", "parameters": p}} for p in params],
            }}}


def test_every_outcome_and_error_kind_through_dry_run(tmp_path: Path) -> None:
    def meta(pool: str, expression: str, name: str | None = None, count: int = 1) -> dict:
        return slice_doc([entry("k", expression)], name=name or pool, pool=pool,
                         driver="d.example.com", count=count)

    docs = [
        meta("ok", 'object.?subnet.orValue("")'),
        slice_doc(None, devices=[{"name": "d0"}], name="none", pool="none", driver="d.example.com"),
        meta("incomplete", 'object.?subnet.orValue("")', count=2),
        meta("nonstring", "has(object.vlan) ? object.vlan : ''"),
        meta("cost", '"p-" + object.subnet'),
        meta("compile", "object.subnet."),
        meta("collision", 'object.?subnet.orValue("")', name="collision-a", count=2),
        meta("collision", 'object.?subnet.orValue("")', name="collision-b", count=2),
        meta("missing", "object.nope"),
        _claim("a", {"subnet": "s1", "vlan": 7}),
        _claim("b", {"subnet": "s1"}, {"subnet": "s2"}),
        _claim("c", {"other": 1}),
    ]
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    result = run("dry-run", "--format", "json", str(path))
    assert result.code == 1  # slice and claim authoring errors are present
    got = {(r["claim"], r["pool"]["name"]): r for r in result.json()["results"]}

    def outcome(claim: str, pool: str) -> tuple[str, str | None]:
        r = got[(f"t/{claim}", pool)]
        return r["outcome"], r["error"]["kind"] if r["error"] else None

    assert outcome("a", "ok") == ("ok", None)
    assert got[("t/a", "ok")]["affinity"] == {"k": "s1"}
    assert outcome("a", "none") == ("not-applicable", None)
    assert outcome("a", "incomplete") == ("pool-incomplete", None)
    assert outcome("a", "nonstring") == ("slice-error", "cel expression returned non-string")
    assert outcome("a", "cost") == ("slice-error", "cel evaluation cost exceeded")
    assert outcome("a", "compile") == ("slice-error", "cel evaluation failed")
    assert outcome("a", "collision") == ("slice-error", "slice key collision")
    assert outcome("a", "missing") == ("slice-error", "missing field")
    assert outcome("b", "ok") == ("claim-inconsistent", "claim self-inconsistent")
    assert outcome("c", "ok") == ("not-satisfied", None)
    assert got[("t/c", "ok")]["unsatisfied"] == ["k"]


def _heavy(size: int = 300) -> str:
    """A guarded extractor whose estimated cost is about half the pool budget (SPEC §8)."""
    items = "[" + ",".join(["'a'"] * size) + "]"
    return (f"object.?kind.orValue('') == 'NICConfig' ? "
            f"({items}.all(x, {items.replace('a', 'b')}.all(y, x != y)) ? 'k' : '') : ''")


def test_sa101_too_many_entries_is_reported_at_the_list(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump(slice_doc([entry(f"k{i}") for i in range(9)]), sort_keys=False))
    result = run("lint", "--format", "json", "--no-pools", str(path))
    assert result.code == 1
    [finding] = [f for f in result.json()["findings"] if f["rule"] == "SA101"]
    assert finding["field"] == "spec.sharingAffinity" and finding["line"] >= 1


def test_sp305_a_pool_with_no_shareable_device_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump_all([slice_doc([entry("subnet")], name="m", count=2),
                                        slice_doc(devices=[{"name": "eth9"}], name="d", count=2)],
                                       sort_keys=False))
    result = run("lint", "--format", "json", str(path))
    [finding] = [f for f in result.json()["findings"] if f["rule"] == "SP305"]
    assert finding["severity"] == "warning" and finding["pool"]["name"] == "node-a"
    assert result.code == 0  # a warning
    assert run("lint", "--format", "json", "--strict", str(path)).code == 1


def test_sp302_pool_over_budget_is_a_slice_error_of_every_request(tmp_path: Path) -> None:
    """SPEC §5: a pool whose extractors together exceed the cost budget (SP302) gives every
    request a `slice-error` of kind `cel evaluation cost exceeded`; no one extractor is to blame."""
    slices = tmp_path / "slices.yaml"
    slices.write_text(yaml.safe_dump_all([
        slice_doc([entry("k1", _heavy())], name="m1", count=3),
        slice_doc([entry("k2", _heavy())], name="m2", count=3),
        slice_doc(devices=[{"name": "eth0", "allowMultipleAllocations": True}], name="d", count=3),
    ], sort_keys=False, width=10_000))
    claim = tmp_path / "claim.yaml"
    claim.write_text(yaml.safe_dump({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ml"},
        "spec": {"devices": {
            "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic"}}],
            "config": [{"opaque": {"driver": "networking.example.com",
                                   "parameters": {"kind": "NICConfig"}}}]}}}))
    lint = run("lint", "--format", "json", str(slices))
    rules = {f["rule"] for f in lint.json()["findings"]}
    assert "SP302" in rules and "SA108" not in rules  # each slice alone is within the budget
    dry = run("dry-run", str(slices), str(claim), "--format", "json")
    assert dry.code == 1
    [result] = dry.json()["results"]
    assert result["outcome"] == "slice-error" and result["affinity"] is None
    assert result["error"]["kind"] == "cel evaluation cost exceeded"
    assert result["error"]["extractor"] is None and result["error"]["config"] is None


def test_sa105_at_the_10_ki_limit_and_one_byte_over(tmp_path: Path) -> None:
    """SPEC: an expression one byte over 10,240 bytes (UTF-8) is an error, one at the limit is
    not; counted in bytes, so a multi-byte character counts for its bytes."""
    def expression(size: int) -> str:
        head = '"é" + "'
        return head + "x" * (size - len(head.encode()) - 1) + '"'

    docs = [slice_doc([entry("k", expression(10_240))], name="at", pool="at"),
            slice_doc([entry("k", expression(10_241))], name="over", pool="over")]
    assert [len(d["spec"]["sharingAffinity"][0]["expression"].encode()) for d in docs] == [10_240, 10_241]
    path = tmp_path / "slices.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False, width=100_000, allow_unicode=True))
    result = run("lint", "--format", "json", "--no-pools", str(path))
    sa105 = [f for f in result.json()["findings"] if f["rule"] == "SA105"]
    assert [(f["object"]["name"], f["field"], f["severity"]) for f in sa105] == [
        ("over", "spec.sharingAffinity[0].expression", "error")]
    assert result.code == 1


def test_sp304_is_a_warning_unless_pools_are_known_complete(tmp_path: Path) -> None:
    path = _count_mismatch_pool(tmp_path)
    result = run("lint", "--format", "json", str(path))
    [finding] = [f for f in result.json()["findings"] if f["rule"] == "SP304"]
    assert finding["severity"] == "warning"
    assert result.code == 0
    assert run("lint", "--format", "json", "--strict", str(path)).code == 1
