"""Pool rules and `dra-affinity pools` end to end, through the installed console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import run
from tests.helpers import entry, slice_doc

NIC = {"name": "eth0", "allowMultipleAllocations": True}


def costly(n: int) -> str:
    values = "[" + ",".join(str(i) for i in range(n)) + "]"
    return f'{values}.exists(a, {values}.exists(b, a == b + 7)) ? "x" : ""'


def write(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def line_of(path: Path, needle: str, occurrence: int = 0) -> int:
    hits = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if needle in line]
    return hits[occurrence]


# Each scenario: files (name -> docs), the rule, and per involved location (file, object, line needle).
SCENARIOS: dict[str, tuple[dict[str, list[dict[str, Any]]], str, str, list[tuple[str, str, str]]]] = {
    "duplicate-key": (
        {"a/meta-ip.yaml": [slice_doc([entry("subnet")], name="m1", count=3)],
         "b/meta-fabric.yaml": [slice_doc([entry("pkey"), entry("subnet")], name="m2", count=3),
                                slice_doc(devices=[NIC], name="d", count=3)]},
        "SP301", "error",
        [("a/meta-ip.yaml", "m1", "name: subnet"), ("b/meta-fabric.yaml", "m2", "name: subnet")],
    ),
    "cost-in-total": (
        {"m1.yaml": [slice_doc([entry("a", costly(300))], name="m1", count=3)],
         "m2.yaml": [slice_doc([entry("b", costly(300))], name="m2", count=3)],
         "d.yaml": [slice_doc(devices=[NIC], name="d", count=3)]},
        "SP302", "error",
        [("m1.yaml", "m1", "sharingAffinity:"), ("m2.yaml", "m2", "sharingAffinity:")],
    ),
    "incomplete": (
        {"m.yaml": [slice_doc([entry("subnet")], name="m", count=3)],
         "d.yaml": [slice_doc(devices=[NIC], name="d", count=3)]},
        "SP303", "warning",
        [("d.yaml", "d", "resourceSliceCount"), ("m.yaml", "m", "resourceSliceCount")],
    ),
    "mixed-generations": (
        {"new.yaml": [slice_doc([entry("subnet")], name="m", generation=2, count=2),
                      slice_doc(devices=[NIC], name="d", generation=2, count=2)],
         "old.yaml": [slice_doc(devices=[NIC], name="d-gen1", generation=1, count=2)]},
        "SP306", "info",
        [("old.yaml", "d-gen1", "generation"), ("new.yaml", "m", "generation"),
         ("new.yaml", "d", "generation")],
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_pool_findings_point_at_every_slice_in_text_and_json(tmp_path: Path, scenario: str) -> None:
    files, rule, severity, expected = SCENARIOS[scenario]
    for name, docs in files.items():
        write(tmp_path / name, *docs)
    data = run("lint", "--format", "json", "--pools-only", str(tmp_path)).json()
    [finding] = data["findings"]
    assert (finding["rule"], finding["severity"]) == (rule, severity)
    assert finding["pool"] == {"driver": "networking.example.com", "name": "node-a"}
    got = [(Path(loc["file"]).relative_to(tmp_path).as_posix(), loc["object"]["name"], loc["line"])
           for loc in finding["locations"]]
    occurrences: dict[str, int] = {}
    want = []
    for file, obj, needle in expected:
        key = f"{file}:{needle}"
        want.append((file, obj, line_of(tmp_path / file, needle, occurrences.get(key, 0))))
        occurrences[key] = occurrences.get(key, 0) + 1
    assert got == want
    assert all(loc["column"] >= 1 for loc in finding["locations"])
    assert (finding["file"], finding["line"]) == (finding["locations"][0]["file"], want[0][2])

    text = run("lint", "--pools-only", str(tmp_path)).out.splitlines()
    head = next(i for i, line in enumerate(text) if f": {rule} {severity}: " in line)
    first = finding["locations"][0]
    assert text[head].startswith(f"{first['file']}:{first['line']}:{first['column']}: {rule} {severity}: ")
    detail = text[head + 1:]
    detail = detail[:next((i for i, line in enumerate(detail) if not line.startswith("    ")), len(detail))]
    also = [line for line in detail if line.startswith("    also at ")]
    assert also == [
        f"    also at {loc['file']}:{loc['line']}:{loc['column']} "
        f"ResourceSlice/{loc['object']['name']} {loc['field']}"
        for loc in finding["locations"][1:]
    ]


def test_incomplete_pools_are_warnings_unless_the_input_is_complete(tmp_path: Path) -> None:
    write(tmp_path / "m.yaml", slice_doc([entry("subnet")], name="m", count=2))
    partial = run("lint", "--format", "json", str(tmp_path))
    assert partial.code == 0
    [finding] = partial.json()["findings"]
    assert finding["rule"] == "SP303" and finding["severity"] == "warning"
    assert "pass --complete-pools" in finding["message"]
    assert run("lint", "--fail-on", "warning", str(tmp_path)).code == 1
    complete = run("lint", "--complete-pools", "--format", "json", str(tmp_path))
    assert complete.code == 1
    assert complete.json()["findings"][0]["severity"] == "error"


def test_layers(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", slice_doc([entry("k"), entry("k")], name="m", count=2))
    both = {f["rule"] for f in run("lint", "--format", "json", str(tmp_path)).json()["findings"]}
    assert both == {"SA102", "SP303"}
    only = run("lint", "--pools-only", "--format", "json", str(tmp_path)).json()["findings"]
    assert {f["rule"] for f in only} == {"SP303"}
    none = run("lint", "--no-pools", "--format", "json", str(tmp_path)).json()["findings"]
    assert {f["rule"] for f in none} == {"SA102"}
    clash = run("lint", "--pools-only", "--no-pools", str(tmp_path))
    assert clash.code == 2 and "exclude each other" in clash.err


def test_kubectl_dumps_are_pools_too(tmp_path: Path) -> None:
    items = [slice_doc([entry("subnet")], name="m1", count=3),
             slice_doc([entry("subnet")], name="m2", count=3),
             slice_doc(devices=[NIC], name="d", count=3)]
    yaml_dump = write(tmp_path / "dump.yaml", {"apiVersion": "v1", "kind": "List", "items": items})
    # what the API itself returns: a typed list whose items omit apiVersion/kind
    bare = [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")} for item in items]
    json_dump = tmp_path / "dump.json"
    json_dump.write_text(json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
                                     "metadata": {"resourceVersion": "1"}, "items": bare}, indent=2))
    for dump in (yaml_dump, json_dump):
        result = run("lint", "--complete-pools", "--format", "json", str(dump))
        [finding] = result.json()["findings"]
        assert finding["rule"] == "SP301"
        assert [loc["object"]["name"] for loc in finding["locations"]] == ["m1", "m2"]
        lines = [loc["line"] for loc in finding["locations"]]
        text = dump.read_text().splitlines()
        assert all('subnet' in text[line - 1] for line in lines), (dump, lines)


def test_partial_input_from_a_repository(tmp_path: Path) -> None:
    one_file = run("lint", "--format", "json", "examples/pools/gpu-node-d/devices.yaml").json()
    [finding] = one_file["findings"]
    assert (finding["rule"], finding["severity"]) == ("SP303", "warning")
    assert run("lint", "--format", "json", "examples/pools/gpu-node-d/").json()["findings"] == []


def test_pools_command_table_and_json() -> None:
    paths = ("examples/networking-node-a.yaml", "examples/pools/")
    table = run("pools", *paths)
    assert table.code == 0
    rows = table.out.splitlines()
    assert rows[0].split() == ["POOL", "GEN", "SLICES", "COMPLETE", "KEYS", "COST", "DEVICES",
                               "SHAREABLE", "FINDINGS"]
    node_a = next(r.split() for r in rows if r.startswith("networking.example.com/node-a "))
    assert node_a == ["networking.example.com/node-a", "7", "2/2", "yes", "subnet,pkey", "36/1000000",
                      "1", "1", "-"]
    node_e = next(r.split() for r in rows if r.startswith("networking.example.com/node-e "))
    assert node_e[-1] == "SP301(error),SP306(info)"
    assert any(r.split()[1:4] == ["node-e-0-gen1", "1", "superseded"] for r in rows if r)
    assert any("examples/pools/gpu-node-d/metadata-partition.yaml:3:1" in r for r in rows)

    data = run("pools", "--format", "json", *paths).json()
    assert data["summary"] == {"pools": 4, "complete": 3, "incomplete": 1, "files": 5, "inputErrors": 0}
    by_name = {(p["driver"], p["name"]): p for p in data["pools"]}
    gpu = by_name[("gpu.example.com", "node-d")]
    assert gpu["keys"] == [{"key": "nvlink-domain", "slice": "gpu-node-d-meta-nvlink"},
                           {"key": "partition", "slice": "gpu-node-d-meta-partition"}]
    assert (gpu["present"], gpu["expected"], gpu["complete"]) == (4, 4, True)
    assert (gpu["devices"], gpu["shareableDevices"]) == (4, 3)
    assert gpu["totalCost"] == sum(s["cost"] for s in gpu["slices"]) > 0
    assert {s["file"] for s in gpu["slices"]} == {
        f"examples/pools/gpu-node-d/{n}.yaml" for n in ("devices", "metadata-nvlink", "metadata-partition")
    }
    node_f = by_name[("rdma.example.com", "node-f")]
    assert node_f["complete"] is False
    assert node_f["incompleteReason"] == "1 of 2 slices (resourceSliceCount) present at generation 1"
    assert [f["rule"] for f in node_f["findings"]] == ["SP303"]
    node_e = by_name[("networking.example.com", "node-e")]
    assert [s["name"] for s in node_e["superseded"]] == ["node-e-0-gen1"]
    assert node_e["duplicateKeys"] == ["subnet"]


def test_cluster_options_are_checked(tmp_path: Path) -> None:
    alone = run("lint", "--kubeconfig", str(tmp_path / "kc"), "examples/")
    assert alone.code == 2 and "only apply with --cluster" in alone.err
    mixed = run("pools", "--cluster", "examples/")
    assert mixed.code == 2 and "give one or the other" in mixed.err


def test_rules_lists_pool_rules_as_implemented() -> None:
    listing = run("rules").out.splitlines()
    pool_lines = [line for line in listing if line.startswith("SP30")]
    assert len(pool_lines) == 6
    assert not any("planned" in line for line in pool_lines)
    assert run("rules", "SP301").out.startswith("SP301 pool-duplicate-key (error, pool rule)\n")


def test_help_does_not_import_the_kubernetes_client() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from dra_affinity.lint.cli import main\n"
        "for args in (['lint', '--help'], ['pools', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('kubernetes', 'cel_expr_python') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "HEAVY []" in proc.stderr, proc.stderr
    assert "--complete-pools" in proc.stdout and "--cluster" in proc.stdout


def test_pools_reads_stdin_and_says_when_there_is_nothing() -> None:
    text = yaml.safe_dump(slice_doc([entry("subnet")], name="m", count=2))
    data = run("pools", "--format", "json", "-", stdin=text).json()
    [pool] = data["pools"]
    assert (pool["present"], pool["expected"], pool["slices"][0]["file"]) == (1, 2, "<stdin>")
    empty = run("pools", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert (empty.code, empty.out.strip()) == (0, "no ResourceSlices in the input")


def test_unreadable_objects_are_named_with_their_place(tmp_path: Path) -> None:
    """Objects left out of the pools are listed with file:line:col and why, not just counted."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [\n")
    out = run("pools", str(broken), "examples/networking-node-a.yaml")
    assert out.code == 1  # an input error, as lint reports it
    assert f"{broken}:2:1: SA000 error: YAML syntax error" in out.out


def test_an_unreadable_file_is_reported_like_lint_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: [\n")
    table = run("pools", str(bad), "examples/rdma-pkey.yaml")
    assert table.code == 1, table.out + table.err
    line = f"{bad}:3:1: SA000 error: YAML syntax error"
    assert line in table.out  # on stdout, as lint prints it
    assert line in run("lint", str(bad)).out
    assert "rdma.example.com/node-b" in table.out  # the readable pools are still reported
    doc = run("pools", "--format", "json", str(bad), "examples/rdma-pkey.yaml")
    assert doc.code == 1
    assert [f["rule"] for f in doc.json()["findings"]] == ["SA000"]
    assert doc.json()["summary"]["inputErrors"] == 1
