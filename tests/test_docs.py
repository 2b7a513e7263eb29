"""README.md and every page of docs/: each command block runs as written (tests/docs.py).

Pages with their own runner are left to it: locks, explain, exporter and troubleshooting
(tests/lint/commands/test_lock_docs.py) and simulate's `console` blocks (tests/test_docs_simulate.py).
The README's quick start runs for real in a fresh clone: a virtualenv, `pip install .`, `lint`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import REPO
from tests.docs import DOCS, page_blocks, run_block

OWN_RUNNER = {"locks.md", "explain.md", "exporter.md", "troubleshooting.md"}
PAGES = ["README.md", *sorted(p.name for p in DOCS.glob("*.md") if p.name not in OWN_RUNNER)]


def _text(page: str) -> str:
    return (REPO / page if page == "README.md" else DOCS / page).read_text()


@pytest.mark.parametrize("page", PAGES)
def test_command_blocks_run_as_written(page: str) -> None:
    for block in page_blocks(_text(page)):
        if block.not_run is None:
            run_block(block.script, block.expected)
        else:
            assert "test" in block.not_run or "tested" in block.not_run, (page, block.not_run)


def test_the_readme_is_a_newcomers_page() -> None:
    readme = (REPO / "README.md").read_text()
    quick_start = readme.split("\n## ", 2)[1]
    assert quick_start.startswith("Quick start")  # the first section
    # the second set-up command is the test command, and CI runs exactly it
    ci_command = (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert "pytest" in ci_command and f"\n{ci_command}\n" in quick_start
    assert len(readme.splitlines()) < 200
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in readme, f"README links every page of docs/: {page.name}"
    assert "SPEC §" not in readme + "".join(p.read_text() for p in DOCS.glob("*.md"))


def _snapshot(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)


def test_quick_start_works_in_a_fresh_clone(tmp_path: Path) -> None:
    """The README's first command, as written, in a copy of the repository without a virtualenv."""
    clone = tmp_path / "dra-affinity"
    _snapshot(clone)
    (block, *_) = page_blocks((REPO / "README.md").read_text())
    assert block.script.startswith("python3 -m venv .venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    # python3 is the interpreter the tests run on, not the test virtualenv's
    base = Path(sys.base_prefix) / "bin"
    env["PATH"] = f"{base}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-c", block.script], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the deliberately broken examples
    assert "error SA102" in proc.stdout and "Traceback" not in proc.stderr


def test_the_rules_page_lists_every_rule() -> None:
    from dra_affinity.policies.rules.catalog import catalog

    page = (DOCS / "rules.md").read_text()
    missing = [rule for rule in catalog() if f"| {rule} |" not in page]
    assert not missing, f"docs/rules.md lacks {missing}"
