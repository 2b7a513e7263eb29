"""One name, one meaning: class names are unique, `*Error` is raised, `*Problem` is a value.

The convention (ARCHITECTURE.md, rules of thumb): a class named `...Error` is an exception,
something raised; a class that describes what went wrong as a value (returned, carried in a
result) is named `...Problem`; `...Failure` is not used. Shared constants are defined once:
the API group `resource.k8s.io` lives in `policies.core.api`.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import defaultdict
from pathlib import Path

from tests.cli import REPO

FOLDERS = ("policies", "kube", "sources", "exporter", "lint", "webhook")
SOURCES = sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))
TREES = {p: ast.parse(p.read_text(), str(p)) for p in SOURCES}
EXCEPTIONS = {name for name, value in vars(builtins).items()
              if isinstance(value, type) and issubclass(value, BaseException)}


def _classes() -> dict[str, list[tuple[Path, ast.ClassDef]]]:
    found: dict[str, list[tuple[Path, ast.ClassDef]]] = defaultdict(list)
    for path, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found[node.name].append((path, node))
    return found


CLASSES = _classes()


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', 0)}"


SAME_NAME_BY_NECESSITY = {
    "Timestamp": "cel-expr-python takes k8s_library._types.Timestamp for google.protobuf.Timestamp by "
                 "its class name; jsonvalue.Timestamp's name is in messages (`type(v).__name__`)",
    "Duration": "as Timestamp, for google.protobuf.Duration",
}
"""The two pairs that cannot be renamed without a behaviour change; no other name may repeat."""


def test_every_class_name_is_unique() -> None:
    twice = {name: [_where(p, n) for p, n in defs] for name, defs in CLASSES.items()
             if len(defs) > 1 and name not in SAME_NAME_BY_NECESSITY}
    assert not twice, f"one name, one meaning: {twice}"


def _base_names(node: ast.ClassDef) -> list[str]:
    names = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def _is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether the project class (or builtin) `name` derives from BaseException."""
    if name in EXCEPTIONS or (name.endswith(("Exception", "Error")) and name not in CLASSES):
        return True  # builtins, and library exceptions (click.ClickException, yaml.YAMLError)
    if name in seen or name not in CLASSES:
        return False
    return any(_is_exception(base, seen | {name}) for _, node in CLASSES[name] for base in _base_names(node))


def test_error_classes_are_exceptions_and_problems_are_values() -> None:
    wrong = []
    for name, defs in CLASSES.items():
        for path, node in defs:
            raised = any(_is_exception(b) for b in _base_names(node))
            if name.endswith("Error") and not raised:
                wrong.append(f"{_where(path, node)}: {name} is a value: name it ...Problem")
            if name.endswith("Problem") and raised:
                wrong.append(f"{_where(path, node)}: {name} is raised: name it ...Error")
            if name.endswith("Failure"):
                wrong.append(f"{_where(path, node)}: {name}: values are ...Problem, exceptions ...Error")
    assert not wrong, "\n".join(wrong)


def test_the_api_group_is_spelled_once() -> None:
    spelled = []
    for path, tree in TREES.items():
        docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and re.search(r"\bresource\.k8s\.io\b", node.value):
                spelled.append(_where(path, node))
    assert spelled == ["policies/core/api.py:3"], spelled
