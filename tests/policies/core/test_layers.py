"""The speed-layer switch: its syntax, and that a typo is refused rather than ignored."""

from __future__ import annotations

import pytest
from dra_affinity.policies.core import layers

KNOWN = frozenset({"memo", "fast-yaml", "json-text"})


@pytest.mark.parametrize(("spec", "on"), [
    ("", KNOWN),
    ("all", KNOWN),
    ("none", frozenset()),
    ("-memo", frozenset({"fast-yaml", "json-text"})),
    ("-memo, -json-text", frozenset({"fast-yaml"})),
    ("memo", frozenset({"memo"})),
    ("memo,fast-yaml", frozenset({"memo", "fast-yaml"})),
])
def test_spec_selects_layers(spec: str, on: frozenset[str]) -> None:
    assert layers.parse_spec(spec, KNOWN) == on


@pytest.mark.parametrize(("spec", "message"), [
    ("memo,-json-text", "mix of"),
    ("-mem", "unknown speed layer(s) mem; known: fast-yaml, json-text, memo"),
    ("yaml", "unknown speed layer(s) yaml"),
])
def test_bad_spec_is_refused(spec: str, message: str) -> None:
    with pytest.raises(layers.LayerSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        layers.parse_spec(spec, KNOWN)


def test_layer_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    layer = layers.LAYERS.get("test-probe") or layers.declare("test-probe", "a probe for this test")
    monkeypatch.delenv(layers.ENV, raising=False)
    assert layer.on
    monkeypatch.setenv(layers.ENV, "none")
    assert not layer.on
    monkeypatch.setenv(layers.ENV, "-test-probe")
    assert not layer.on
    monkeypatch.setenv(layers.ENV, "test-probe")
    assert layer.on
    with pytest.raises(ValueError, match="declared twice"):
        layers.declare("test-probe", "again")
