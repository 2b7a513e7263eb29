"""`dra-affinity cel check` end to end: compile, type, estimated cost, evaluation."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import run

SLICE_WITH = """apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: s}}
spec:
  driver: net.example.com
  nodeName: node-a
  pool: {{name: p, generation: 1, resourceSliceCount: 1}}
  sharingAffinity:
    - name: key
      expression: {expression}
"""

KEP = ('object.apiVersion == "networking.example.com/v1" && object.kind == "NICConfig"'
       ' ? object.subnetID : ""')
NIC = {"apiVersion": "networking.example.com/v1", "kind": "NICConfig", "subnetID": "subnet-A"}


def test_json_document_for_the_kep_extractor() -> None:
    result = run("cel", "check", "--format", "json", KEP, "--object", json.dumps(NIC))
    assert result.code == 0, result.err
    doc = result.json()
    assert doc["compiles"] is True
    assert doc["errors"] == []
    assert doc["outputType"] == "dyn"
    assert doc["cost"] == {"min": 2, "max": 7}  # reference §5.7 V-A2
    assert doc["result"]["value"] == "subnet-A"
    assert doc["result"]["type"] == "string"
    assert doc["result"]["error"] is None
    assert doc["result"]["runtimeCost"] > 0


def test_unbounded_cost_names_the_sub_expression() -> None:
    doc = run("cel", "check", "--format", "json", '"prefix-" + object.x').json()
    assert doc["cost"]["max"] == 1844674407370955265  # reference §5.7 V-A5
    [cause] = doc["cost"]["unbounded"]
    assert cause["expression"] == "object.x"
    assert (cause["line"], cause["column"]) == (1, 13)


def test_missing_field_is_classified_like_the_scheduler(tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("apiVersion: v1\nkind: Other\n")
    result = run("cel", "check", "--format", "json", "object.spec.subnet", "--object", str(params))
    assert result.code == 1
    evaluated = result.json()["result"]
    assert evaluated["scheduler"] == evaluated["error"]
    error = evaluated["error"]
    assert error["kind"] == "missing field"
    assert error["message"].startswith("no such key: spec. Consider using CEL optional chaining")


def test_compile_error_text_and_exit_code() -> None:
    result = run("cel", "check", "object.x.")
    assert result.code == 1
    assert "ERROR: <input>:1:10:" in result.out
    assert " | object.x." in result.out
    # the compile error once: SA106's verdict points at it instead of repeating it
    assert result.out.count("ERROR: <input>:1:10:") == 1 and result.out.count(" | object.x.") == 1
    assert result.out.splitlines()[-1].endswith("compilation failed (the error above)")
    assert result.out.splitlines()[-1].startswith("SA106 error: ")


def test_a_misspelled_function_gets_the_name_that_compiles_in_its_place(tmp_path: Path) -> None:
    result = run("cel", "check", 'object.?a.orVlaue("")')
    assert result.code == 1
    assert result.out.splitlines()[-1].endswith(
        "compilation failed (the error above); did you mean 'orValue' instead of 'orVlaue'?")
    # lint says it too, on the slice's expression
    slice_file = tmp_path / "s.yaml"
    slice_file.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec:\n  driver: nic.example.com\n  allNodes: true\n"
        "  pool: {name: p, generation: 1, resourceSliceCount: 1}\n"
        "  sharingAffinity:\n  - name: subnet\n    expression: 'sizee(object.a) > 0 ? \"x\" : \"\"'\n")
    lint = run("lint", str(slice_file), "--format", "json")
    [finding] = [f for f in json.loads(lint.out)["findings"] if f["rule"] == "SA106"]
    assert finding["message"].endswith("; did you mean 'size' instead of 'sizee'?"), finding


def test_no_suggestion_without_a_name_that_compiles_there() -> None:
    """`foo` and `frobnicate` are near no declared name: no suggestion rather than a guess."""
    for expression in ("object.a.foo()", 'frobnicate(object.b) == "" ? "x" : ""'):
        result = run("cel", "check", expression)
        assert result.code == 1
        assert "did you mean" not in result.out, result.out


def test_expression_from_file_and_kubernetes_version(tmp_path: Path) -> None:
    expr = tmp_path / "x.cel"
    expr.write_text('has(object.x) ? object.x : ""')
    result = run("cel", "check", "--file", str(expr), "--kubernetes-version", "1.37")
    assert result.code == 0
    assert "compiles: output type dyn" in result.out


def test_usage_errors() -> None:
    assert run("cel", "check").code == 2
    assert run("cel", "check", "x", "--object", "{not json").code == 2
    assert run("cel", "check", "x", "--kubernetes-version", "1.2").code == 2


def test_results_holding_optionals_or_library_values_are_shown_as_users_know_them() -> None:
    """cel-expr-python cannot export an optional inside a list (it raises) or a map (it crashes
    the process): those values come from the cost walk instead. Library values show as their
    text (a Semver as its version), not as the engine's internal carrier."""
    cases = {
        "{'a': optional.none()}": ({"a": None}, "map"),
        "[optional.of(1)]": ([1], "list"),
        "{'a': [optional.of(2)]}": ({"a": [2]}, "map"),
        "optional.of({'k': optional.none()})": ({"k": None}, "optional_type"),
        # library values as users know them, not as the engine carries them
        "semver('1.2.3')": ("1.2.3", "kubernetes.Semver"),
        "{'v': [optional.of(semver('2.0.0'))]}": ({"v": ["2.0.0"]}, "map"),
        "quantity('1Gi')": ("1Gi", "kubernetes.Quantity"),
    }
    for expression, (value, cel_type) in cases.items():
        result = run("cel", "check", expression, "--object", "{}", "--format", "json")
        # the scheduler converts library string types (ConvertToNative) and nothing else;
        # SA107 rejects every other non-string static type
        library = cel_type.startswith("kubernetes.")
        assert result.code == (0 if library else 1), (expression, result.err)
        doc = json.loads(result.out)
        assert [v["rule"] for v in doc["verdicts"]] == ([] if library else ["SA107"]), expression
        evaluated = doc["result"]
        assert (evaluated["value"], evaluated["type"]) == (value, cel_type), expression
        assert evaluated["error"] is None, expression  # CEL itself evaluates it
        assert (evaluated["scheduler"] is None) == library, expression
        if not library:
            assert evaluated["scheduler"]["kind"] == "cel expression returned non-string", expression


def test_cel_check_gives_lint_and_scheduler_verdicts() -> None:
    """What `lint` and `dry-run` say about an extractor, `cel check` says too, with exit 1."""
    dyn_int = run("cel", "check", "object.vlan", "--object", '{"vlan": 100}')
    assert dyn_int.code == 1
    assert "value: 100 (int)" in dyn_int.out
    assert ("scheduler: slice-error: cel expression returned non-string: non-string result: CEL result of "
            "type int could not be converted to string") in dyn_int.out
    for expression in ("42", "size(object.tags)"):
        static_int = run("cel", "check", expression)
        assert static_int.code == 1, expression
        line = f'SA107 error: spec.sharingAffinity[0].expression: Invalid value: "{expression}": ' \
               "must evaluate to string, not int"
        assert line in static_int.out
        # word for word what lint prints for the same extractor
        slice_yaml = SLICE_WITH.format(expression=json.dumps(expression))
        linted = run("lint", "-", stdin=slice_yaml)
        assert f": {line}" in linted.out
    too_long = run("cel", "check", '"' + "a" * 10300 + '"', "--format", "json")
    assert too_long.code == 1 and "SA105" in [v["rule"] for v in too_long.json()["verdicts"]]
    broken = run("cel", "check", "object.")
    assert broken.code == 1 and "SA106 error" in broken.out
    good = run("cel", "check", 'has(object.subnet) ? "%s".format([object.subnet]) : ""', "--object",
               "subnet: a")
    assert good.code == 0, good.out
    assert 'value: "a" (string)' in good.out and "scheduler: ok" in good.out


def test_object_takes_inline_yaml_json_a_file_or_stdin(tmp_path: Path) -> None:
    expression = 'has(object.vlan) ? "%s".format([object.vlan]) : ""'
    for given in ("vlan: 100", '{"vlan": 100}', "{vlan: 100}", "vlan: 100\nother: [a]\n"):
        out = run("cel", "check", expression, "--object", given)
        assert out.code == 0 and 'value: "100" (string)' in out.out, (given, out.out, out.err)
    params = tmp_path / "params.yaml"
    params.write_text("vlan: 7\n")
    assert 'value: "7"' in run("cel", "check", expression, "--object", str(params)).out
    assert 'value: "8"' in run("cel", "check", expression, "--object", "-", stdin="vlan: 8\n").out
    missing = run("cel", "check", expression, "--object", "nofile.yaml")
    assert missing.code == 2 and "neither a readable file nor a JSON/YAML object" in missing.err
