"""The GitHub composite action (`action.yml`) and the docs' install lines, run for real.

A runner cannot be started here, so each `run:` step of the action is executed with bash
as the runner does: `${{ inputs.* }}` replaced by the inputs (defaults where not given),
`GITHUB_ACTION_PATH` at this checkout, `GITHUB_OUTPUT` a file whose lines become the
step's outputs. The install step really installs the checkout, into a fresh virtualenv
whose dependencies come from the test environment (a `.pth` file), so only this project
is built and installed. `uses:` steps (setup-python, upload-sarif) are GitHub's own; what
is checked is that the upload gets the file the lint step wrote, and that it is valid SARIF.
"""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import REPO, snapshot
from tests.lint.ci.support import SLICE, assert_valid_sarif, write

ACTION = REPO / "action.yml"
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Venv:
    path: Path

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "VIRTUAL_ENV"))}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra)
        return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh virtualenv without dra-affinity; its dependencies visible from the test env."""
    path = tmp_path_factory.mktemp("runner") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    probe = "import site; print(site.getsitepackages()[0])"
    target = Path(subprocess.run([str(path / "bin" / "python"), "-c", probe],
                                 check=True, capture_output=True, text=True).stdout.strip())
    # pip itself and every dependency come from the test environment, after the venv's own packages
    (target / "zz-test-deps.pth").write_text(site.getsitepackages()[0] + "\n")
    return Venv(path)


def _evaluate(text: str, inputs: Mapping[str, str], outputs: Mapping[str, Mapping[str, str]]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1)
        if expression.startswith("inputs."):
            return inputs[expression.removeprefix("inputs.")]
        if expression.startswith("steps."):
            _, step, _, name = expression.split(".", 3)
            return outputs.get(step, {}).get(name, "")
        raise AssertionError(f"the test does not evaluate {expression!r}")

    return _EXPRESSION.sub(value, text)


def _run_action(venv: Venv, workspace: Path, given: Mapping[str, str]) -> dict[str, Any]:
    """Run the action's `run:` steps in order; return the outputs, the steps' stdout and the exit."""
    action = yaml.safe_load(ACTION.read_text())
    inputs = {name: given.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
    outputs: dict[str, dict[str, str]] = {}
    logs: dict[str, str] = {}
    uploads: list[str] = []
    for step in action["runs"]["steps"]:
        condition = step.get("if")
        if "uses" in step:
            if step["uses"].startswith("github/codeql-action/upload-sarif") and (
                    "upload-sarif == 'true'" not in condition or inputs["upload-sarif"] == "true"):
                uploads.append(_evaluate(step["with"]["sarif_file"], inputs, outputs))
            continue
        assert step["shell"] == "bash"
        output_file = workspace / f".github-output-{len(logs)}"
        output_file.write_text("")
        env = venv.env(GITHUB_ACTION_PATH=str(REPO), GITHUB_OUTPUT=str(output_file),
                       GITHUB_WORKSPACE=str(workspace), GITHUB_ACTIONS="true")
        env.update({k: _evaluate(str(v), inputs, outputs) for k, v in step.get("env", {}).items()})
        proc = subprocess.run(["bash", "-e", "-c", _evaluate(step["run"], inputs, outputs)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=600)
        name = step.get("id", step["name"])
        logs[name] = proc.stdout + proc.stderr
        outputs[name] = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if line)
        if proc.returncode != 0:
            return {"failed": step["name"], "code": proc.returncode, "outputs": outputs, "logs": logs,
                    "uploads": uploads}
    return {"failed": None, "code": 0, "outputs": outputs, "logs": logs, "uploads": uploads}


def test_action_declares_what_its_steps_use() -> None:
    action = yaml.safe_load(ACTION.read_text())
    assert action["runs"]["using"] == "composite"
    text = ACTION.read_text()
    used = {m.group(1).removeprefix("inputs.") for m in _EXPRESSION.finditer(text)
            if m.group(1).startswith("inputs.")}
    assert used <= set(action["inputs"]), used - set(action["inputs"])
    for step in action["runs"]["steps"]:
        # inputs reach scripts through env, never pasted into them (script injection)
        assert "${{" not in step.get("run", ""), step["name"]


def test_action_installs_lints_and_fails_on_findings(venv: Venv, tmp_path: Path) -> None:
    write(tmp_path / "deploy" / "slice.yaml", SLICE.format(name="a", pool="p"))
    write(tmp_path / ".venv" / "lib" / "junk.json", "{")  # a runner's cache the walk must skip
    # default args: warnings pass
    result = _run_action(venv, tmp_path, {"paths": "deploy"})
    assert result["failed"] is None, result["logs"]
    assert result["outputs"]["lint"]["exit-code"] == "0"
    assert "::warning file=deploy/slice.yaml,line=13,col=24" in result["logs"]["lint"]
    assert result["uploads"] == ["dra-affinity.sarif"]
    assert_valid_sarif(json.loads((tmp_path / "dra-affinity.sarif").read_text()))
    assert (venv.bin / "dra-affinity").exists()  # installed by the action, not borrowed
    # --strict: the warnings fail the job, after the SARIF was written for the upload
    (tmp_path / "dra-affinity.sarif").unlink()
    strict = _run_action(venv, tmp_path, {"paths": "deploy", "args": "--strict", "upload-sarif": "false",
                                           "sarif-file": "out/report.sarif"})
    assert strict["failed"] == "Verdict" and strict["code"] == 1, strict["logs"]
    assert strict["outputs"]["lint"]["exit-code"] == "1"
    assert strict["uploads"] == []
    assert (tmp_path / "out" / "report.sarif").is_file()
    # a path that does not exist is a usage error, not a pass
    missing = _run_action(venv, tmp_path, {"paths": "manifests"})
    assert missing["failed"] == "Verdict" and missing["code"] == 2


def _docs() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _install_lines() -> list[tuple[Path, str]]:
    """Every `pip install` a user is told to run to get dra-affinity (not the dev setup)."""
    found = []
    for doc in _docs():
        for block in re.findall(r"```[a-z]*\n(.*?)```", doc.read_text(), flags=re.S):
            for line in block.splitlines():
                command = line.strip().removeprefix("- ").removeprefix("run: ")
                if "pip install" in command and "-e " not in command and "[test]" not in command:
                    found.append((doc, command))
    return found


def test_no_doc_installs_from_a_package_index() -> None:
    lines = _install_lines()
    assert lines
    for doc, line in lines:
        from_index = "dra-affinity==" in line or re.search(r"pip install\s+dra-affinity\b", line)
        assert not from_index, (doc, line)


def test_git_url_install_works_as_written(venv: Venv, tmp_path: Path) -> None:
    """The docs' git-URL install, with the URL and ref pointed at a snapshot commit of this checkout."""
    checkout = snapshot(tmp_path / "dra-affinity")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "."], cwd=checkout, check=True)
    subprocess.run([*git, "add", "-A"], cwd=checkout, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], cwd=checkout, check=True)
    subprocess.run([*git, "tag", "v-test"], cwd=checkout, check=True)
    lines = [line for _, line in _install_lines() if "DRA_AFFINITY_GIT" in line]
    assert lines, "the docs show a git-URL install"
    env = venv.env(DRA_AFFINITY_GIT=f"file://{checkout}", DRA_AFFINITY_REF="v-test")
    for line in set(lines):
        subprocess.run([str(venv.bin / "python"), "-m", "pip", "uninstall", "-q", "-y", "dra-affinity"],
                       env=env, capture_output=True, timeout=120)
        proc = subprocess.run(["bash", "-e", "-c", line.replace("pip install", "python -m pip install", 1)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        version = subprocess.run([str(venv.bin / "dra-affinity"), "--version"], env=env, capture_output=True,
                                 text=True, timeout=60)
        assert version.returncode == 0 and "dra-affinity" in version.stdout
