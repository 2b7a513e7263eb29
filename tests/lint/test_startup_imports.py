"""Start-up imports: `--help`, `--version` and a one-file lint (the pre-commit case) import only
what they need (issue 15 item 4). Measured with `python -X importtime` on the installed console
script; the modules below are the ones that must stay lazy however imports are arranged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import REPO, SCRIPT

HEAVY = frozenset({
    "jsonschema", "kubernetes", "flask", "werkzeug", "gunicorn", "prometheus_client", "cryptography",
    "hypothesis", "urllib3", "dra_affinity.webhook",
})
"""Never needed to lint files: the webhook's, the cluster client's and valid objects' schema check."""

NO_WORK = HEAVY | {"yaml", "importlib.metadata", "dra_affinity.policies.cel.compile",
                   "dra_affinity.policies.rules.engine", "dra_affinity.lint.commands.lint_cmd"}
"""Also not needed before a command runs (`importlib.metadata` only for `--version`)."""


def imported(*args: str) -> set[str]:
    """Every module the console script imports for `args` (top-level names and full names)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", str(SCRIPT), *args], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    names = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()
             if line.startswith("import time:")}
    assert "dra_affinity.lint.cli" in names, proc.stderr[-2000:]
    return names | {n.split(".")[0] for n in names}


def test_help_imports_no_command() -> None:
    assert imported("--help") & NO_WORK == set()


@pytest.mark.parametrize("command", ["lint", "dry-run", "test", "pools"])
def test_command_help_imports_no_cel_engine_schema_or_metadata(command: str) -> None:
    """A command's module is imported to show its options, never the CEL compiler."""
    lazy = HEAVY | {"dra_affinity.policies.cel.compile", "importlib.metadata"}
    assert imported(command, "--help") & lazy == set()


def test_version_reads_the_metadata_and_nothing_else() -> None:
    names = imported("--version")
    assert "importlib.metadata" in names
    assert names & (NO_WORK - {"importlib.metadata"}) == set()


@pytest.mark.parametrize("example", ["examples/single-subnet-nic.yaml", "examples/broken-slice.yaml"])
def test_one_file_lint_imports_no_schema_library_webhook_or_cluster_client(example: str) -> None:
    names = imported("lint", example)
    assert "dra_affinity.policies.rules.engine" in names  # it did lint
    assert names & HEAVY == set()
    assert names & {"pathspec", "multiprocessing", "concurrent"} == set()  # no walk, no workers


def test_a_structurally_invalid_file_still_gets_its_schema_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: x}\n"
                   "spec: {driver: d, pool: {name: p, generation: one, resourceSliceCount: 1}}\n")
    from tests.cli import run

    out = run("lint", str(bad))
    assert out.code == 1 and "generation" in out.out and "must be of type integer" in out.out
