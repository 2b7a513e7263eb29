"""`yaml_fast` gives what the libyaml path gives, or refuses: never a different value.

Each test loads the same text twice through the loader — once as the commands that keep every
document do for a large file (rapidyaml first), once composed by libyaml — and compares the
documents, their kinds, items and start positions, and the findings.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import dra_affinity.sources.loader as loader_module
import pytest
import yaml
from dra_affinity.sources import yaml_fast
from dra_affinity.sources.loader import FAST_YAML_CHARS, load_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import gen_slices  # noqa: E402
from gen_cluster import generate  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.cli import run  # noqa: E402


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: object) -> bool:
        return True


def _both(text: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Any, Any, bool]:
    """(fast-path view, libyaml view, whether yaml_fast vouched) of one file's text."""
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(loader_module, "FAST_YAML_CHARS", 0)
    fast = load_paths([str(path)], lazy_positions=True)
    monkeypatch.setattr(loader_module, "FAST_YAML_CHARS", len(text) + 1)
    slow = load_paths([str(path)], lazy_positions=True)
    return _view(fast), _view(slow), yaml_fast.documents(text) is not None


def _view(result: Any) -> Any:
    documents = [
        (repr(d.data), d.kind, d.api_version, d.item,
         d.source.positions.get(()) if d.item is None else None)
        for d in result.documents
    ]
    findings = [(f.rule, f.message, f.locations) for f in result.findings]
    return documents, findings


def _dump(value: object, **style: Any) -> str:
    return yaml.dump(value, Dumper=_NoAliases, sort_keys=False, **style)


TRICKY = [
    "yes", "Yes", "NO", "on", "Off", "y", "n", "true", "True", "FALSE", "null", "Null", "NULL",
    "~", "", " ", "-", "--", "?", ":", "a: b", "a #b", "#x", "<<", "=", "0", "00", "012", "0o17",
    "0x1F", "0x_1", "0b101", "1_000", "1:30", "190:20:30", "1.", "1.e5", "1.e+5", "1e5", "1E5",
    "1.5E+3", ".5", "-.5", "+.5", "+1", "-0", "-0.0", ".inf", "-.Inf", ".nan", ".NaN", "NaN",
    "Infinity", "1.0.0", "12345678901234567890", "3.14e-2", "2024-01-01", "2001-12-14t21:59:43.10-05:00",
    "10.0.0.1", "1a2b3c4d-0000-1111-2222-333344445555", "é", "日本", "a\\b", 'a"b', "a'b",
    "line\nbreak", "trailing\n", "  lead", "tail  ", "x" * 90, "has(object.x) ? object.x : \"\"",
    "a != b && c", "*star", "&amp", "!bang", "%pct", "@at", "`tick", "{a}", "[a]", "a, b", "| pipe",
    "> gt",
]


@pytest.mark.parametrize("token", TRICKY)
@pytest.mark.parametrize("style", ["plain", "single", "double", "dumped"])
def test_a_scalar_and_a_key_in_every_style(token: str, style: str, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    """Plain (where YAML allows it), quoted both ways, and as PyYAML writes it; as a value,
    as a list item and as a key."""
    if style == "dumped":
        text = _dump({"kind": "List", "items": [{"k": token, token: 1, "l": [token]}]})
    else:
        if style == "plain" and ("\n" in token or token != token.strip()):
            return
        quoted = {"plain": token, "single": "'" + token.replace("'", "''") + "'",
                  "double": json.dumps(token)}[style]
        text = f"kind: Thing\nk: {quoted}\n{quoted}: 1\nl:\n- {quoted}\n"
    fast, slow, _ = _both(text, monkeypatch, tmp_path)
    assert fast == slow


def test_a_generated_cluster_dump_takes_the_fast_path_and_gives_the_same(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The layout `kubectl get -o yaml` prints: one List, items cut into several batches."""
    doc = generate(200, 10, 3_000)
    text = _dump(doc)
    monkeypatch.setattr(yaml_fast, "BATCH_CHARS", 64 * 1024)
    assert len(yaml_fast._split_items(text)[1]) > 5
    fast, slow, vouched = _both(text, monkeypatch, tmp_path)
    assert vouched
    assert fast == slow
    assert len(fast[0]) == len(doc["items"])


def test_every_yaml_file_the_repository_ships(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    compared = vouched = 0
    for path in sorted([*ROOT.glob("examples/**/*.y*ml"), *ROOT.glob("tests/**/*.y*ml"),
                        *ROOT.glob("deploy/**/*.y*ml")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        fast, slow, ok = _both(text, monkeypatch, tmp_path)
        assert fast == slow, path
        compared += 1
        vouched += ok
    assert compared > 20 and vouched >= 1  # most carry comments, which the fast path refuses


_keys = st.text(st.sampled_from("abk-_.:# '\"0123456789yYnNoO~<=!&*?"), min_size=0, max_size=6)
_scalars = (st.sampled_from(TRICKY) | st.text(max_size=12) | st.integers() | st.floats()
            | st.booleans() | st.none())
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_keys, inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=st.lists(st.dictionaries(_keys, _values, max_size=5), max_size=4),
       flow=st.sampled_from([False, None, True]), width=st.sampled_from([20, 80, 10_000]),
       unicode=st.booleans())
def test_generated_documents_in_every_dumper_style(items: list[dict[str, Any]], flow: bool | None,
                                                   width: int, unicode: bool,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    text = _dump({"apiVersion": "v1", "kind": "List", "items": items}, default_flow_style=flow,
                 width=width, allow_unicode=unicode)
    fast, slow, _ = _both(text, monkeypatch, tmp_path)
    assert fast == slow


_MUTATIONS = [":", ": ", "-", "- ", "#", " #", "'", '"', "|", ">", "[", "]", "{", "}", ",", " ",
              "  ", "\\", "\\x", "\\u00", "?", "? ", "%", "---", "\n", "\n  ", "é", "\x07", "\t",
              "&a ", "*a", "!!str ", "<<: ", "~", "\\ud800", "\\\n\n"]


def test_mutated_dumps_give_the_same_or_are_refused(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    """Broken and odd YAML: whatever libyaml says (errors, findings, values), the fast path
    says the same — it must refuse what libyaml refuses."""
    doc = generate(20, 2, 30)
    base = _dump(doc)
    rng = random.Random(5981)
    for _ in range(400):
        text = base
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            cut = rng.choice([0, 0, 1, 2])
            text = text[:at] + rng.choice(_MUTATIONS) + text[at + cut:]
        fast, slow, _ = _both(text, monkeypatch, tmp_path)
        assert fast == slow, text


def test_a_file_under_the_threshold_is_composed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[int] = []
    monkeypatch.setattr(yaml_fast, "documents", lambda text: calls.append(len(text)))
    path = tmp_path / "small.yaml"
    path.write_text(_dump(generate(20, 2, 30)))
    assert path.stat().st_size < FAST_YAML_CHARS
    assert load_paths([str(path)], lazy_positions=True).documents
    assert calls == []


@pytest.mark.parametrize("command", [["locks", "{}", "--format", "json"],
                                     ["explain", "pending/pending-0000", "{}", "--format", "json"],
                                     ["dry-run", "{}", "--summary", "--format", "json"]])
def test_a_large_yaml_dump_answers_as_its_json_twin(command: list[str], tmp_path: Path) -> None:
    """Through the console script: a dump over the threshold, as YAML (rapidyaml) and as JSON
    (the JSON decoder), gives the same bytes."""
    doc = generate(200, 10, 3_000)
    as_yaml, as_json = tmp_path / "cluster.yaml", tmp_path / "cluster.json"
    as_yaml.write_text(_dump(doc))
    as_json.write_text(json.dumps(doc, indent=2))
    assert as_yaml.stat().st_size > FAST_YAML_CHARS
    assert yaml_fast.documents(as_yaml.read_text()) is not None
    by_yaml = run(*(str(as_yaml) if arg == "{}" else arg for arg in command))
    by_json = run(*(str(as_json) if arg == "{}" else arg for arg in command))
    assert by_yaml.out
    assert (by_yaml.code, by_yaml.out) == (by_json.code, by_json.out.replace("cluster.json", "cluster.yaml"))


def test_a_finding_in_a_large_yaml_dump_names_its_line(tmp_path: Path) -> None:
    """The values came from rapidyaml; the finding's position from libyaml, composed on use."""
    doc = generate(200, 10, 3_000)
    claims = [item for item in doc["items"] if item["kind"] == "ResourceClaim"]
    claims[1500]["spec"] = "not an object"
    path = tmp_path / "cluster.yaml"
    text = _dump(doc)
    path.write_text(text)
    assert yaml_fast.documents(text) is not None
    result = run("locks", str(path), "--format", "json")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "spec: not an object" in row)
    findings = result.json()["findings"]
    assert [f["line"] for f in findings] == [line], findings


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(docs=st.lists(st.dictionaries(_keys, _values, max_size=4) | st.none(), max_size=6),
       explicit=st.booleans(), trailing=st.booleans())
def test_generated_streams_of_documents(docs: list[Any], explicit: bool, trailing: bool,
                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Several documents, empty ones among them (their index still counts), with and without a
    leading `---` and a trailing empty document."""
    text = yaml.dump_all(docs, Dumper=_NoAliases, sort_keys=False, explicit_start=explicit)
    if trailing:
        text += "---\n"
    fast, slow, _ = _both(text, monkeypatch, tmp_path)
    assert fast == slow


def test_a_stream_in_several_batches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What `bench/gen_slices.py` writes for `simulate`: one claim a document, `|` blocks."""
    monkeypatch.setattr(yaml_fast, "BATCH_CHARS", 16 * 1024)
    folder = tmp_path / "cluster"
    gen_slices.generate_cluster(600, folder, devices=100, pools=10)
    for name in ("slices.yaml", "claims.yaml"):
        text = (folder / name).read_text()
        fast, slow, vouched = _both(text, monkeypatch, tmp_path)
        assert vouched, name
        assert fast == slow
    assert len(fast[0]) == 600


def test_mutated_streams_give_the_same_or_are_refused(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    base = yaml.dump_all(generate(20, 2, 30)["items"], Dumper=_NoAliases, sort_keys=False)
    rng = random.Random(16)
    for _ in range(200):
        text = base
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice([*_MUTATIONS, "\n---\n", "---", "\n--- a\n", "\n...\n"]) \
                + text[at + rng.choice([0, 0, 1, 2]):]
        fast, slow, _ = _both(text, monkeypatch, tmp_path)
        assert fast == slow, text


def test_what_kubectl_prints_for_a_claim_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    """`kubectl get resourceclaims -o yaml`'s layout: managedFields keys such as
    `k:{"resource":"pods",...}:` and `.: {}`, a `|` annotation holding JSON, quoted timestamps,
    resourceVersion and `"0x8001"`; the one item repeated past the threshold."""
    one = (ROOT / "tests" / "data" / "kubectl-get-claims.yaml").read_text()
    head, rest = one.split("items:\n", 1)
    item, tail = rest.split("kind: List\n", 1)
    text = head + "items:\n" + item * 1500 + "kind: List\n" + tail
    assert len(text) > FAST_YAML_CHARS
    fast, slow, vouched = _both(text, monkeypatch, tmp_path)
    assert vouched
    assert fast == slow
    assert len(fast[0]) == 1500 and not fast[1]


@pytest.mark.parametrize("text", ['a: "\\ud800"\n', 'a: "\\ud83d\\ude00"\n', 'k: "x\\\n\n  y"\n',
                                  'k: "x\\\n   \n  y"\n'])
def test_escapes_libyaml_reads_otherwise_are_refused(text: str, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A surrogate escape (libyaml refuses it; rapidyaml writes its bytes) and an escaped line
    break before an empty line (rapidyaml folds it to a space, libyaml keeps the break)."""
    assert yaml_fast.documents(text) is None
    fast, slow, _ = _both(text, monkeypatch, tmp_path)
    assert fast == slow


def test_mutated_large_documents_in_small_batches(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """The batch path of one `List` (`_split_items`) under mutation, not only on clean dumps."""
    monkeypatch.setattr(yaml_fast, "BATCH_CHARS", 2048)
    base = _dump(generate(20, 2, 30))
    rng = random.Random(15)
    for _ in range(150):
        text = base
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice(_MUTATIONS) + text[at + rng.choice([0, 0, 1, 2]):]
        fast, slow, _ = _both(text, monkeypatch, tmp_path)
        assert fast == slow, text
