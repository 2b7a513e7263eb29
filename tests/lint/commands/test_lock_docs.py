"""docs/locks.md, docs/explain.md and docs/exporter.md: every command block runs as written.

A ```sh block runs in bash from the repository root with the installed console script on PATH;
its exit code is 0, or N when the block says `# exit N`. The ```text block right after it, if
any, is its output: every line (`...` skips any number of lines) appears in stdout, in order.
The exporter's block runs against the local API stand-in loaded with the example cluster.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli import REPO
from tests.webhook.fake_apiserver import FakeApiServer

DOCS = REPO / "docs"
_BLOCK = re.compile(r"```sh\n(.*?)\n```(?:\n\n```text\n(.*?)\n```)?", re.DOTALL)


def blocks(name: str, text: str | None = None) -> list[tuple[str, str | None]]:
    found = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text or (DOCS / name).read_text())]
    assert found, f"no command block in {name}"
    return found


def run_block(script: str, expected: str | None, env: dict[str, str] | None = None) -> None:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", script], cwd=REPO, capture_output=True, text=True,
                          timeout=180, env={**os.environ, **(env or {}), "PATH": path})
    code = re.search(r"# exit (\d+)", script)
    assert proc.returncode == (int(code.group(1)) if code else 0), f"{script}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    if expected is None:
        return
    lines = proc.stdout.splitlines()
    at = 0
    for want in expected.splitlines():
        if want.strip() == "...":
            continue
        while at < len(lines) and lines[at].rstrip() != want.rstrip():
            at += 1
        assert at < len(lines), f"{script}: line not in the output (in order): {want!r}\n{proc.stdout}"
        at += 1


@pytest.mark.parametrize("name", ["locks.md", "explain.md"])
def test_command_blocks_run_as_written(name: str) -> None:
    for script, expected in blocks(name):
        run_block(script, expected)


def test_readme_troubleshooting_section_runs() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Troubleshooting a pending pod", 1)[1].split("\n## ", 1)[0]
    for script, expected in blocks("README.md", section):
        run_block(script, expected)


def test_exporter_block_runs_against_a_cluster(tmp_path: Path) -> None:
    fake = FakeApiServer().start()
    try:
        for obj in yaml.safe_load((REPO / "examples" / "cluster" / "dump.yaml").read_text())["items"]:
            fake.put(obj)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        (script, expected), = blocks("exporter.md")
        run_block(script.replace("9464", port), expected,
                  {"KUBECONFIG": str(fake.kubeconfig(tmp_path / "kubeconfig"))})
    finally:
        fake.stop()
