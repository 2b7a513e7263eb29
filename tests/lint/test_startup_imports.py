"""Start-up imports: `--help`, `--version` and a one-file lint (the pre-commit case) import only
what they need. Measured with `python -X importtime` on the installed console
script, plus what `sys.modules` holds at exit (importtime does not see `importlib.import_module`,
how commands and rules are loaded); the modules below are the ones that must stay lazy however
imports are arranged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import REPO, SCRIPT
from tests.helpers import requires_layers

HEAVY = frozenset({
    "jsonschema", "kubernetes", "flask", "werkzeug", "gunicorn", "prometheus_client", "cryptography",
    "hypothesis", "urllib3", "dra_affinity.webhook",
})
"""Never needed to lint files: the webhook's, the cluster client's and valid objects' schema check."""

NO_WORK = HEAVY | {"yaml", "importlib.metadata", "dra_affinity.policies.cel.compile",
                   "dra_affinity.policies.rules.engine", "dra_affinity.lint.commands.lint_cmd"}
"""Also not needed before a command runs (`importlib.metadata` only for `--version`)."""


NOT_FOR_ONE_FILE = frozenset({
    "dra_affinity.lint.reporters.run", "dra_affinity.lint.reporters.json_reporter",
    "dra_affinity.lint.reporters.sarif_reporter", "dra_affinity.lint.reporters.junit_reporter",
    "dra_affinity.policies.scheduler.extraction",
})
"""Lazy for a text-format lint of one file: the CI formats' run model, the JSON writer and the
scheduler's extraction model. The evaluator is not among them: the advisories state an outcome
only after the evaluator reproduced it (SA206 runs every extractor on a config of another
schema), so linting an extractor evaluates it."""

_EXIT_MODULES = "modules at exit:"
_PROBE = (
    "import atexit, runpy, sys\n"
    f"atexit.register(lambda: print({_EXIT_MODULES!r}, *sorted(sys.modules), file=sys.stderr))\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
"""Runs the console script as `python SCRIPT ARGS` would, then lists `sys.modules` at exit."""


def imported(*args: str, cwd: Path = REPO) -> set[str]:
    """Every module the console script imports for `args` (top-level names and full names)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", _PROBE, str(SCRIPT), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    names = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    assert "dra_affinity.lint.cli" in names, proc.stderr[-2000:]
    (at_exit,) = [line for line in lines if line.startswith(_EXIT_MODULES)]
    names |= set(at_exit.removeprefix(_EXIT_MODULES).split())
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


@requires_layers("schema-precheck")
@pytest.mark.parametrize("example", ["examples/single-subnet-nic.yaml", "examples/broken-slice.yaml"])
def test_one_file_lint_imports_no_schema_library_webhook_or_cluster_client(example: str) -> None:
    names = imported("lint", example)
    assert "dra_affinity.policies.rules.engine" in names  # it did lint
    assert names & HEAVY == set()
    assert names & {"pathspec", "multiprocessing", "concurrent"} == set()  # no walk, no workers
    assert names & NOT_FOR_ONE_FILE == set()


def test_one_file_lint_outside_a_python_project_reads_no_toml(tmp_path: Path) -> None:
    """`tomllib` only where a pyproject.toml may hold our table (the repository's own does)."""
    names = imported("lint", str(REPO / "examples" / "single-subnet-nic.yaml"), cwd=tmp_path)
    assert "dra_affinity.policies.rules.engine" in names
    assert "tomllib" not in names


def test_what_stays_lazy_is_imported_when_the_run_needs_it(tmp_path: Path) -> None:
    """The guards above see these modules: a conversion in an expression plans it (the
    evaluator), a CI format builds the run model, a non-string output type reads extraction's
    library string types, a pyproject.toml mentioning us is parsed."""
    slice_ = tmp_path / "conversion.yaml"
    text = (REPO / "examples" / "single-subnet-nic.yaml").read_text()
    slice_.write_text(text.replace('"%s".format([object.?subnetID.orValue("")])',
                                   'string(object.?subnetID.orValue(""))', 1)
                      .replace('"nic.example.com/v1"', '"nic.example.com/v1" && int("1") == 1', 1))
    (tmp_path / "pyproject.toml").write_text('[tool.dra-affinity]\nfail-on = "error"\n')
    names = imported("lint", "--format", "sarif", str(slice_), cwd=tmp_path)
    assert {"dra_affinity.policies.cel.eval.runtime", "dra_affinity.lint.reporters.run",
            "dra_affinity.lint.reporters.sarif_reporter", "tomllib"} <= names
    number = tmp_path / "number.yaml"
    number.write_text(text.replace('"%s".format([object.?subnetID.orValue("")])', '1', 1)
                      .replace(': ""', ": 2", 1))
    assert "dra_affinity.policies.scheduler.extraction" in imported("lint", str(number), cwd=tmp_path)


def test_a_structurally_invalid_file_still_gets_its_schema_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: x}\n"
                   "spec: {driver: d, pool: {name: p, generation: one, resourceSliceCount: 1}}\n")
    from tests.cli import run

    out = run("lint", str(bad))
    assert out.code == 1 and "generation" in out.out and "must be of type integer" in out.out
