"""README.md and every page of docs/: each command block runs as written (tests/docs.py).

Pages with their own runner are left to it: locks, explain, exporter and troubleshooting
(tests/lint/commands/test_lock_docs.py) and simulate's `console` blocks (tests/test_docs_simulate.py).
The README's quick start runs for real in a fresh clone: a virtualenv, `pip install .`, `lint`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import REPO, run, snapshot
from tests.docs import DOCS, Sample, page_blocks, run_block, unchecked_samples

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
    # it works in a fresh shell: the set-up commands run the virtualenv's script by its path,
    # and the first bare `dra-affinity` example says the virtualenv is to be active
    blocks = page_blocks(quick_start)
    setups = [b.script for b in blocks if b.script.startswith("python3 -m venv .venv")]
    assert len(setups) == 2
    for script in setups:
        assert {m for m in re.findall(r"(\S*?)dra-affinity\b", script)} <= {".venv/bin/"}, script
    examples = [b.script for b in blocks if b.script.startswith("dra-affinity ")]
    assert examples and ". .venv/bin/activate" in quick_start[:quick_start.index(examples[0])]
    for page in sorted(DOCS.glob("*.md")):
        assert f"docs/{page.name}" in readme, f"README links every page of docs/: {page.name}"
    assert "SPEC §" not in readme + "".join(p.read_text() for p in DOCS.glob("*.md"))


def test_quick_start_works_in_a_fresh_clone(tmp_path: Path) -> None:
    """The README's first command, as written, in a copy of the repository without a virtualenv."""
    clone = tmp_path / "dra-affinity"
    snapshot(clone)
    (block, *_) = page_blocks((REPO / "README.md").read_text())
    assert block.script.startswith("python3 -m venv .venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIRTUAL_ENV")}
    # python3 is the interpreter the tests run on, not the test virtualenv's
    base = Path(sys.base_prefix) / "bin"
    env["PATH"] = f"{base}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-c", block.script], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the deliberately broken examples
    assert "SA102 error: " in proc.stdout and "Traceback" not in proc.stderr


def test_the_rules_page_lists_every_rule() -> None:
    from dra_affinity.policies.rules.catalog import catalog

    page = (DOCS / "rules.md").read_text()
    missing = [rule for rule in catalog() if f"| {rule} |" not in page]
    assert not missing, f"docs/rules.md lacks {missing}"


ALL_PAGES = ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", ALL_PAGES)
def test_every_sample_output_is_compared_or_marked_abridged(page: str) -> None:
    """A sample no test compares goes stale silently: each is checked, or says it is abridged."""
    assert unchecked_samples(_text(page), page) == [], f"{page}: mark a sample <!-- abridged: WHY -->"


def test_an_unmarked_unchecked_sample_is_caught() -> None:
    page = (
        "Run it:\n\n```sh\ndra-affinity --version\n```\n\n```text\n0.1.0\n```\n\n"  # compared
        "Prints:\n\n```text\nstale output\n```\n\n"  # unchecked
        "<!-- not run: needs a cluster; tests/x.py -->\n```sh\nkubectl get x\n```\n\n```json\n{}\n```\n"
        "<!-- abridged: cut; tests/y.py checks it -->\n```text\nshort\n```\n\n"
        "```yaml\nkind: Input\n```\n\n```console\n$ dra-affinity x\n```\n"
    )
    assert unchecked_samples(page, "other.md") == [
        Sample(13, "text", "stale output"), Sample(22, "json", "{}"),
        Sample(34, "console", "$ dra-affinity x")]
    assert unchecked_samples(page, "simulate.md")[-1] == Sample(22, "json", "{}")


def test_the_readme_command_list_names_real_commands() -> None:
    """The abridged command list: every `dra-affinity X` it names is a command of --help."""
    readme = (REPO / "README.md").read_text()
    listing = readme.split("## What it does", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    helped = run("--help").out.split("Commands:", 1)[1]
    commands = set(re.findall(r"^  ([a-z-]+) ", helped, re.M))
    named = {word for line in listing.splitlines()
             for word in re.findall(r"(?:^dra-affinity|\|) ([a-z][a-z-]*)", line)}
    assert named and named <= commands, named - commands
    assert commands <= named | {"cel"} or "cel check" in listing, commands - named


def test_the_lint_json_sample_has_the_keys_of_a_real_report() -> None:
    page = (DOCS / "lint.md").read_text()
    sample = json.loads(page.split("```json\n", 1)[1].split("```", 1)[0])
    real = run("lint", "--format", "json", "examples/broken-slice.yaml").json()
    assert set(sample) == set(real)
    assert set(sample["summary"]) == set(real["summary"])
    assert set(sample["summary"]["notRead"]) == set(real["summary"]["notRead"])
    assert set(sample["findings"][0]) == set(real["findings"][0])
