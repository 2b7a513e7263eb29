"""Rule ids are written once, in their rule's module; everything else imports the rule object.

A string literal in policies/, lint/ or webhook/ that holds a rule id (`SA000`, `SP301`, …) is
a retyped id: it goes stale when a rule is renumbered and no type checker sees it. Exempt, as
documentation: docstrings (a string standing alone as a statement), comments (not in the AST),
the documentation fields of a rule (`summary=`, `description=`, `bad_example=`, `good_example=`,
`upstream=`: prose cross-references like "duplicates inside one slice are SA102"), `help=` texts
of CLI options, and a literal on a line that ends with the comment `# docs` (a command's short
help kept in a table). Tests and docs/ are not scanned. Messages that name a rule take the id
from its object (`f"{INPUT_ERROR.id} ..."`), which this test cannot mistake for a literal.
Input problem ids are written once in `policies/core/problems.py` (the stages below the rules
report them from there) and their rule modules take them from it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from dra_affinity.policies.core import problems
from dra_affinity.policies.rules.catalog import catalog, input_rules, pool_rules, slice_rules

from tests.cli import REPO

RULE_ID = re.compile(r"\bS[AP]\d{3}\b")
KINDS = tuple(v for v in vars(problems).values() if isinstance(v, problems.ProblemKind))
RULE_PACKAGES = tuple(REPO / "policies" / "rules" / scope for scope in ("input", "slice", "pool"))


DOC_KEYWORDS = frozenset({"summary", "description", "bad_example", "good_example", "upstream", "help"})


def _documentation(tree: ast.AST) -> set[int]:
    """ids of the string constants that are documentation (see the module docstring)."""
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            docs.add(id(node.value))
        elif isinstance(node, ast.keyword) and node.arg in DOC_KEYWORDS:
            docs.update(id(n) for n in ast.walk(node.value))
    return docs


def _literals(path: Path) -> Iterator[tuple[int, str]]:
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text, str(path))
    docs = _documentation(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docs:
            continue
        if lines[(node.end_lineno or node.lineno) - 1].rstrip().endswith("# docs"):
            continue
        yield node.lineno, node.value


PROBLEM_KINDS = REPO / "policies" / "core" / "problems.py"


def _own_ids(path: Path) -> frozenset[str]:
    """The ids a module may spell: a rule module its own (`sa101_too_many_entries.py` -> SA101),
    `core/problems.py` the input problem kinds'."""
    if path == PROBLEM_KINDS:
        return frozenset(k.id for k in KINDS)
    if path.parent in RULE_PACKAGES and re.match(r"s[ap]\d{3}_", path.name):
        return frozenset({path.name[:5].upper()})
    return frozenset()


def test_no_rule_id_is_retyped_outside_its_rule_module() -> None:
    offenders = []
    for folder in ("policies", "sources", "exporter", "lint", "webhook"):
        for path in sorted((REPO / folder).rglob("*.py")):
            own = _own_ids(path)
            for line, text in _literals(path):
                for rule_id in RULE_ID.findall(text):
                    if rule_id not in own:
                        offenders.append(f"{path.relative_to(REPO)}:{line}: {rule_id} in {text!r}")
    assert not offenders, "import the rule object instead of retyping its id:\n" + "\n".join(offenders)


def test_each_rule_module_declares_the_id_its_name_gives() -> None:
    for rule in catalog().values():
        module = next(p for pkg in RULE_PACKAGES for p in pkg.glob(f"{rule.id.lower()}_*.py"))
        assert _own_ids(module) == {rule.id}


def test_each_input_rule_documents_one_problem_kind() -> None:
    """The stages below the rules report what the input rules document: same ids, same severities."""
    assert sorted((k.id, k.severity) for k in KINDS) == sorted((r.id, r.severity) for r in input_rules())


def test_one_registry_answers_every_scope() -> None:
    scoped = [*input_rules(), *slice_rules(), *pool_rules()]
    assert sorted(r.id for r in scoped) == list(catalog())
    assert {r.scope.value for r in input_rules()} == {"input"}
    assert {r.scope.value for r in slice_rules()} == {"slice"}
    assert {r.scope.value for r in pool_rules()} == {"pool"}
