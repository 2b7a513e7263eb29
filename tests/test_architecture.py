"""The plan of the house, checked: stages import only downward, and no module cycle exists.

`policies/` is a stack of stages (ARCHITECTURE.md draws it). A module may import its own stage
or any stage below it. Above `policies` the packages stand side by side: `kube` (the one way to
the API server) on `policies`; `sources` (files, stdin and a cluster's lists as documents),
the `exporter` and the `webhook` each on `policies` and `kube`, none importing another; `lint`,
the CLI, over all of them, and imported by none. Every import counts, including those inside
functions and under `TYPE_CHECKING`: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli import REPO

NAMESPACE = "dra_affinity"
FOLDERS = ("policies", "kube", "sources", "exporter", "lint", "webhook")

STAGES: tuple[str, ...] = (
    "policies.core",
    "policies.model",
    "policies.cel.common",
    "policies.cel.k8s_library",
    "policies.cel.check",
    "policies.cel.cost",
    "policies.cel.eval",
    "policies.cel",
    "policies.analysis",
    "policies.scheduler",
    "policies.rules",
    "policies",
    "kube",
    "sources",
    "exporter",
    "webhook",
    "lint",
)
"""Lowest first. A module belongs to the longest stage that prefixes its name; every package
of `policies.rules` is one stage, above the scheduler (input problems are `core.problems`
kinds below it)."""


ALLOWED: dict[str, frozenset[str]] = {
    "policies": frozenset({"policies"}),
    "kube": frozenset({"policies", "kube"}),
    "sources": frozenset({"policies", "kube", "sources"}),
    "exporter": frozenset({"policies", "kube", "exporter"}),
    "webhook": frozenset({"policies", "kube", "webhook"}),
    "lint": frozenset(FOLDERS),
}
"""The top-level packages each folder may import. The stage order alone would let the webhook
import the exporter or the readers; they are siblings: a server or a reader that needs another
one's code is a sign that code belongs lower, in `policies` or `kube`."""


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported project module, line) for every import in `path`, wherever it stands."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
                targets = [f"{NAMESPACE}.{name}"]
            else:
                targets = [node.module or ""]
            submodules = [f"{targets[0]}.{a.name}" for a in node.names]
            named = [s for s in submodules if s.removeprefix(f"{NAMESPACE}.") in MODULES]
            # `from pkg import mod` depends on `mod`; `from pkg import name` on `pkg`
            targets = named + (targets if len(named) < len(node.names) else [])
        for target in targets:
            if not target.startswith(f"{NAMESPACE}."):
                continue
            name = target.removeprefix(f"{NAMESPACE}.")
            if name in MODULES:
                yield name, node.lineno


def _stage(module: str) -> int:
    best = max((s for s in STAGES if module == s or module.startswith(s + ".")), key=len)
    return STAGES.index(best)


GRAPH = {m: sorted({t for t, _ in _imports(m, p) if t != m}) for m, p in MODULES.items()}


def test_every_module_belongs_to_a_stage() -> None:
    assert all(_stage(m) >= 0 for m in MODULES)
    assert {m.split(".")[1] for m in MODULES if m.startswith("policies.") and "." in m[9:]} <= {
        s.split(".")[1] for s in STAGES if s.startswith("policies.")
    } | {"py"}


def test_policies_root_holds_only_stage_packages() -> None:
    root = REPO / "policies"
    loose = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"policies/ keeps only its stage packages; move {loose} into a stage"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_go_down(module: str) -> None:
    upward = [
        f"{MODULES[module].relative_to(REPO)}:{line} imports {target} ({STAGES[_stage(target)]})"
        for target, line in _imports(module, MODULES[module])
        if _stage(target) > _stage(module)
    ]
    assert not upward, f"{module} ({STAGES[_stage(module)]}) reaches up: " + "; ".join(upward)


BELOW_RULES = tuple(s for s in STAGES[: STAGES.index("policies.rules")])


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith(BELOW_RULES)))
def test_nothing_below_rules_imports_rules(module: str) -> None:
    """The model and the scheduler report input problems as `core.problems` kinds; only
    `rules` (and the front ends) turn to the rule objects that document them."""
    reaching = [f"{MODULES[module].relative_to(REPO)}:{line} imports {target}"
                for target, line in _imports(module, MODULES[module])
                if target == "policies.rules" or target.startswith("policies.rules.")]
    assert not reaching, reaching


def test_every_folder_has_its_allowed_imports() -> None:
    assert set(ALLOWED) == set(FOLDERS)
    assert {s for s in STAGES if not s.startswith("policies")} == set(FOLDERS) - {"policies"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_only_allowed_packages(module: str) -> None:
    """`webhook` never imports `lint` or `exporter`, and no package but `lint` imports `lint`."""
    package = module.split(".")[0]
    foreign = [
        f"{MODULES[module].relative_to(REPO)}:{line} imports {target}"
        for target, line in _imports(module, MODULES[module])
        if target.split(".")[0] not in ALLOWED[package]
    ]
    assert not foreign, f"{package} may import only {sorted(ALLOWED[package])}: " + "; ".join(foreign)


def test_no_import_cycle() -> None:
    """Tarjan's strongly connected components over every project import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def _absolute_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every absolute import in `path`, wherever it stands: the names that
    depend on how the tree is installed, where a relative import does not."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_no_old_top_level_import_names() -> None:
    """Every project import goes through the `dra_affinity` namespace."""
    offenders = [f"{path.relative_to(REPO)}:{line} imports {name}"
                 for path in sorted(p for folder in (*FOLDERS, "tests", "bench")
                                    for p in (REPO / folder).rglob("*.py"))
                 for line, name in _absolute_imports(path)
                 if name.split(".")[0] in FOLDERS]
    assert not offenders, offenders


LOADED_BY_PATH = {
    "webhook/gunicorn_conf.py": "`gunicorn -c webhook/gunicorn_conf.py` executes it outside any package",
}
"""Files a program runs by path: a relative import there has no package to climb to."""


def test_the_folders_import_the_product_relatively() -> None:
    """Inside the folders an import of the product is relative: it names the same module installed
    or not, and a reader, an editor or an import-graph tool with no environment resolves it by
    walking folders (the root's `__init__.py` is the package it climbs to). `dra_affinity.…` is
    the name for code outside the package: tests, benchmarks, entry points, and a file that is
    loaded by its path rather than imported."""
    offenders = [f"{path.relative_to(REPO)}:{line} imports {name}"
                 for path in sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))
                 if path.relative_to(REPO).as_posix() not in LOADED_BY_PATH
                 for line, name in _absolute_imports(path)
                 if name == NAMESPACE or name.startswith(f"{NAMESPACE}.")]
    assert not offenders, offenders
    assert (REPO / "__init__.py").is_file(), "the root is the package the relative imports climb to"
