"""Advisories through the console script: they fire only with an outcome the evaluator gives.

Driver slices written with optional chaining (dranet's interface extractors) must pass
`lint --strict`, which the docs recommend for CI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.cli import run
from tests.helpers import entry, slice_doc

DRANET_STYLE = [
    entry("vrf", 'object.?kind.orValue("") == "NetworkConfig" '
                 '? "%s".format([object.?interface.vrf.name.orValue("")]) : ""'),
    entry("network", 'object.?kind.orValue("") == "NetworkConfig" && object.?net.vrf.hasValue() '
                     '? "%s".format([object.net.vrf]) : ""'),
]


def _lint(tmp_path: Path, entries: list[dict[str, Any]], *args: str) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / "slice.yaml"
    path.write_text(yaml.safe_dump(slice_doc(entries, driver="dra.net")))
    result = run("lint", *args, "--format", "json", str(path))
    return result.code, json.loads(result.out)["findings"]


def test_optional_chaining_driver_slice_passes_strict(tmp_path: Path) -> None:
    code, findings = _lint(tmp_path, DRANET_STYLE, "--strict")
    assert (code, findings) == (0, [])


def test_optional_chains_state_no_abort_and_no_never(tmp_path: Path) -> None:
    """`object.?interface.vrf.name` cannot fail (optional chaining propagates) and
    `"%s".format([object.?net.vrf.orValue("")])` returns "" for a config without net."""
    _, findings = _lint(tmp_path, [entry("vrf", 'object.?interface.vrf.name.orValue("")'),
                                   entry("network", '"%s".format([object.?net.vrf.orValue("")])')])
    assert not [f for f in findings if f["rule"] in {"SA201", "SA206"}], findings


def test_sa201_quotes_a_config_that_aborts(tmp_path: Path) -> None:
    _, findings = _lint(tmp_path, [entry("vrf", 'has(object.net) ? object.net.vrf : ""')])
    [sa201] = [f for f in findings if f["rule"] == "SA201"]
    assert sa201["field"] == "spec.sharingAffinity[0].expression"
    assert '"net": {}' in sa201["message"] and '"no such key: vrf"' in sa201["message"], sa201


def test_sa206_quotes_what_a_foreign_config_gets(tmp_path: Path) -> None:
    _, findings = _lint(tmp_path, [entry("vrf", 'object.?net.vrf.orValue("default")')])
    [sa206] = [f for f in findings if f["rule"] == "SA206"]
    assert 'it returns "default"' in sa206["message"], sa206
    assert "vrf=default" in sa206["message"]


def test_sa203_quotes_a_config_returning_a_non_string_and_spares_one_that_cannot(tmp_path: Path) -> None:
    _, findings = _lint(tmp_path, [
        entry("vrf", 'object.?kind.orValue("") == "Net" ? object.?vrf.orValue("") : ""'),
        entry("vlan", 'cel.bind(v, object.?vlan.orValue(""), v == "a" ? v : "")')])
    sa203 = [f for f in findings if f["rule"] == "SA203"]
    assert [f["field"] for f in sa203] == ["spec.sharingAffinity[0].expression"], findings
    assert '"kind": "Net"' in sa203[0]["message"] and "returns a value of type" in sa203[0]["message"]


def test_sa205_states_what_the_constant_gives(tmp_path: Path) -> None:
    _, findings = _lint(tmp_path, [entry("subnet", '"object.subnetID"'), entry("vrf", '""')])
    messages = {f["field"]: f["message"] for f in findings if f["rule"] == "SA205"}
    assert 'returns "object.subnetID" for every config' in messages["spec.sharingAffinity[0].expression"]
    assert "no request is ever satisfied" in messages["spec.sharingAffinity[1].expression"]
