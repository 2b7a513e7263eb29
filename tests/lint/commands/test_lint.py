"""`dra-affinity lint` end to end, through the installed console script."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.cli import REPO, run
from tests.helpers import entry, slice_doc

# SPEC §7, as a schema: every field the contract names, with its type.
LINT_JSON_SCHEMA = {
    "type": "object",
    "required": ["findings", "summary"],
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rule", "severity", "file", "line", "column", "object", "pool",
                             "field", "message"],
                "properties": {
                    "rule": {"type": "string", "pattern": "^S[AP][0-9]{3}$"},
                    "severity": {"enum": ["error", "warning", "info"]},
                    "file": {"type": ["string", "null"]},
                    "line": {"type": ["integer", "null"], "minimum": 1},
                    "column": {"type": ["integer", "null"], "minimum": 1},
                    "object": {
                        "type": ["object", "null"],
                        "required": ["kind", "name"],
                        "properties": {"kind": {"type": "string"},
                                       "name": {"type": ["string", "null"]}},
                    },
                    "pool": {
                        "type": ["object", "null"],
                        "required": ["driver", "name"],
                        "properties": {"driver": {"type": "string"}, "name": {"type": "string"}},
                    },
                    "field": {"type": ["string", "null"]},
                    "message": {"type": "string"},
                },
            },
        },
        "summary": {
            "type": "object",
            "required": ["files", "objects", "errors", "warnings"],
            "properties": {k: {"type": "integer", "minimum": 0}
                           for k in ("files", "objects", "errors", "warnings")},
        },
    },
}


def write(path: Path, *docs: object) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_examples_give_located_findings_and_exit_1() -> None:
    result = run("lint", "examples/")
    assert result.code == 1
    lines = result.out.splitlines()
    first = 'examples/broken-slice.yaml:19:7: SA102 error: spec.sharingAffinity[1]: Duplicate value: "subnet"'
    assert first in lines, result.out
    at = lines.index(first)
    assert lines[at + 1] == "    in ResourceSlice/broken-meta (pool networking.example.com/node-z)"
    # 4 slice-rule errors in broken-slice.yaml, 1 pool-rule error (SP301) in pools/broken-pools.yaml
    assert "5 errors" in lines[-1]
    # the valid examples produce nothing
    assert not any("networking-node-a.yaml" in line and " error: " in line for line in lines)


def test_json_output_matches_the_contract() -> None:
    result = run("lint", "--format", "json", "examples/")
    assert result.code == 1
    data = result.json()
    jsonschema.validate(data, LINT_JSON_SCHEMA)
    by_rule = {f["rule"]: f for f in data["findings"]}
    assert {r for r, f in by_rule.items() if f["severity"] == "error"} == {
        "SA102", "SA103", "SA104", "SA109", "SP301"
    }
    sa104 = by_rule["SA104"]
    assert sa104 == {
        "rule": "SA104",
        "severity": "error",
        "file": "examples/broken-slice.yaml",
        "line": 24,
        "column": 7,
        "field": "spec.sharingAffinity[3].expression",
        "object": {"kind": "ResourceSlice", "name": "broken-meta"},
        "pool": {"driver": "networking.example.com", "name": "node-z"},
        "message": "spec.sharingAffinity[3].expression: Required value",
    }
    assert data["summary"]["errors"] == 5
    # every *.yaml/*.yml/*.json below examples/ (several issues add examples, pools/ among them)
    walked = [p for p in (REPO / "examples").rglob("*") if p.suffix in (".yaml", ".yml", ".json")]
    assert data["summary"]["files"] == len(walked) >= 9


def test_clean_input_exits_0(tmp_path: Path) -> None:
    path = write(tmp_path / "ok.yaml", slice_doc([entry("subnet")]))
    result = run("lint", str(path))
    assert result.code == 0, result.out
    assert result.out.strip().startswith("0 errors")


def test_fail_on_controls_exit_code(tmp_path: Path) -> None:
    # A SA000 error is always at or above every threshold; clean input never is.
    path = write(tmp_path / "ok.yaml", slice_doc([entry("subnet")]))
    for level in ("error", "warning", "info"):
        assert run("lint", "--fail-on", level, str(path)).code == 0


def test_stdin_and_dash(tmp_path: Path) -> None:
    text = yaml.safe_dump(slice_doc([entry("subnet"), entry("subnet")]))
    result = run("lint", "-", "--format", "json", stdin=text)
    assert result.code == 1
    finding = result.json()["findings"][0]
    assert finding["file"] == "<stdin>"
    assert finding["rule"] == "SA102"
    assert run("lint", "--format", "json", stdin=text).json()["findings"][0]["rule"] == "SA102"


def test_other_kinds_are_skipped_and_counted(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mixed.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        slice_doc([entry("subnet")]),
    )
    summary = run("lint", "--format", "json", str(path)).json()["summary"]
    assert summary["objects"] == 1
    assert summary["skipped"] == 1


def test_list_dump_from_kubectl(tmp_path: Path) -> None:
    dump = {"apiVersion": "v1", "kind": "List", "items": [
        slice_doc([entry("subnet")], name="a"),
        slice_doc([entry("x"), entry("x")], name="b"),
    ]}
    path = write(tmp_path / "dump.yaml", dump)
    data = run("lint", "--format", "json", str(path)).json()
    [finding] = [f for f in data["findings"] if f["rule"].startswith("SA")]
    # both slices claim to be the only slice (resourceSliceCount 1) of one pool: SP303 says so
    assert [f["rule"] for f in data["findings"] if f["rule"].startswith("SP")] == ["SP303"]
    assert finding["object"]["name"] == "b"
    assert finding["rule"] == "SA102"
    assert finding["line"] > 1
    assert data["summary"]["objects"] == 2


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("spec: [unclosed\n", "SA000"),
        ("- just\n- a list\n", "SA000"),
        (b"\x00\x01\x02binary", "SA000"),
    ],
)
def test_bad_input_is_a_finding_and_the_rest_is_still_linted(
    tmp_path: Path, content: str | bytes, fragment: str
) -> None:
    bad = tmp_path / "a-bad.yaml"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    write(tmp_path / "b-dup.yaml", slice_doc([entry("k"), entry("k")]))
    result = run("lint", "--format", "json", str(tmp_path))
    assert result.code == 1
    rules = {(f["rule"], Path(f["file"]).name) for f in result.json()["findings"]}
    assert ("SA000", "a-bad.yaml") in rules
    assert ("SA102", "b-dup.yaml") in rules
    sa000 = next(f for f in result.json()["findings"] if f["rule"] == fragment)
    assert sa000["line"] >= 1 and sa000["column"] >= 1


def test_mistyped_required_field_names_the_field(tmp_path: Path) -> None:
    doc = slice_doc([entry("subnet")])
    doc["spec"]["pool"]["generation"] = "7"
    del doc["spec"]["driver"]
    path = write(tmp_path / "typed.yaml", doc)
    result = run("lint", "--format", "json", str(path))
    assert result.code == 1
    found = {(f["rule"], f["field"], f["message"]) for f in result.json()["findings"]}
    assert ("SA000", "spec.driver", "spec.driver: Required value") in found
    assert (
        "SA000",
        "spec.pool.generation",
        'spec.pool.generation: Invalid value: "7": must be of type integer',
    ) in found
    lines = {f["field"]: f["line"] for f in result.json()["findings"]}
    text = path.read_text().splitlines()
    assert "generation" in text[lines["spec.pool.generation"] - 1]


def test_unsupported_api_version(tmp_path: Path) -> None:
    doc = slice_doc([entry("subnet")])
    doc["apiVersion"] = "resource.k8s.io/v1alpha3"
    result = run("lint", "--format", "json", str(write(tmp_path / "old.yaml", doc)))
    [finding] = result.json()["findings"]
    assert finding["rule"] == "SA000"
    assert finding["field"] == "apiVersion"
    assert "v1beta2" in finding["message"]


def test_v1beta2_is_accepted(tmp_path: Path) -> None:
    doc = slice_doc([entry("subnet"), entry("subnet")])
    doc["apiVersion"] = "resource.k8s.io/v1beta2"
    result = run("lint", "--format", "json", str(write(tmp_path / "b2.yaml", doc)))
    assert [f["rule"] for f in result.json()["findings"]] == ["SA102"]


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    ok = write(tmp_path / "ok.yaml", slice_doc([entry("subnet")]))
    result = run("lint", str(ok), str(tmp_path / "nope.yaml"))
    assert result.code == 2
    assert "nope.yaml" in result.err


def test_bad_option_is_a_usage_error() -> None:
    assert run("lint", "--format", "xml", "examples/").code == 2
    result = run("lint", "--kubernetes-version", "banana", "examples/")
    assert result.code == 2
    assert "invalid Kubernetes version" in result.err
    newer = run("lint", "--kubernetes-version", "1.39", "examples/")
    assert newer.code == 2
    assert "newer than this release of dra-affinity knows" in newer.err


def test_text_output_has_no_colour_when_piped() -> None:
    assert "\x1b[" not in run("lint", "examples/").out


def test_rules_list_and_explain() -> None:
    listing = run("rules")
    assert listing.code == 0
    for rule_id in ("SA000", "SA101", "SA105", "SA109", "SP301"):
        assert rule_id in listing.out
    explained = run("rules", "sa105")
    assert explained.code == 0
    assert explained.out.startswith("SA105 expression-too-long (error, slice rule)")
    assert "10240" in explained.out and "Bad:" in explained.out
    assert run("rules", "SA999").code == 2
    as_json = run("rules", "--format", "json").json()
    assert {r["id"] for r in as_json} >= {"SA101", "SP306"}


def test_version_and_help_do_not_import_heavy_modules() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from dra_affinity.lint.cli import main\n"
        "for args in (['--version'], ['--help'], ['lint', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('flask', 'gunicorn', 'cel_expr_python', 'jsonschema') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert "HEAVY []" in proc.stderr, proc.stderr
    assert "0.1.0" in proc.stdout


DELIBERATELY_BROKEN = {"examples/broken-slice.yaml", "examples/pools/broken-pools.yaml"}


def test_every_example_not_deliberately_broken_lints_clean_under_strict() -> None:
    """A driver that copies an example must pass the CI guide's `--strict`.

    Each example set is linted on its own: the sets model different clusters, and two of them
    reuse a pool name (`lint examples/` as a whole sees their pools collide). `examples/cluster`,
    the recorded cluster state behind docs/locks.md and docs/explain.md, is linted too: a driver
    copies from it as from any other example."""
    top = sorted(str(p.relative_to(REPO)) for p in (REPO / "examples").glob("*.yaml"))
    sets = [[f for f in top if f not in DELIBERATELY_BROKEN]]
    sets += [[str(d.relative_to(REPO))] for d in sorted((REPO / "examples").iterdir())
             if d.is_dir() and d.name not in ("suites", "pools")]
    sets += [[str(d.relative_to(REPO))] for d in sorted((REPO / "examples" / "pools").iterdir())
             if d.is_dir()]
    assert len(sets[0]) >= 8 and ["examples/cluster"] in sets
    for paths in sets:
        out = run("lint", "--strict", *paths)
        assert out.code == 0, out.out
        assert "0 errors, 0 warnings, 0 infos" in out.out, out.out
    for broken in DELIBERATELY_BROKEN:
        assert run("lint", broken).code == 1, broken


def test_jobs_give_the_same_report_in_every_format(tmp_path: Path) -> None:
    """`--jobs N` checks files in worker processes; the report must not depend on N: findings of
    several files (syntax errors, a pool split across files, suppressions written in one file,
    an unused one, a JSON list), every format, and stdin mixed in."""
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    for name in ("broken-slice.yaml", "networking-node-a.yaml", "rdma-pkey.yaml", "fpga-bitstream.yaml"):
        (folder / name).write_text((REPO / "examples" / name).read_text())
    half = slice_doc([entry("subnet", 'object.?subnet.orValue("")')], pool="split", count=3)
    (folder / "sub" / "a.yaml").write_text(yaml.safe_dump(half))
    other = slice_doc([entry("subnet", "object.subnet")], name="other", pool="split", count=2)
    (folder / "sub" / "b.json").write_text(json.dumps({"kind": "List", "items": [other]}))
    (folder / "sub" / "c.yaml").write_text(
        "# dra-affinity: ignore SA201 -- nothing here to ignore\n" + yaml.safe_dump(half) + "---\nbad: [\n"
    )
    stdin = yaml.safe_dump(slice_doc([entry("x", "1")], name="piped"))
    reports = {}
    for jobs in ("1", "2", "3"):
        for fmt in ("text", "json", "sarif", "junit"):
            result = run("lint", "--jobs", jobs, "--format", fmt, str(folder), "-", stdin=stdin)
            assert result.code == 1, result.err
            reports[jobs, fmt] = (result.out.replace(str(tmp_path), "TMP"), result.err)
    for fmt in ("text", "json", "sarif", "junit"):
        assert reports["2", fmt] == reports["1", fmt] == reports["3", fmt]
    text = reports["1", "text"][0]
    assert "SP30" in text and "SA000" in text and "SA002" in text and "<stdin>" in text
