"""docs/locks.md, explain.md, exporter.md, troubleshooting.md: every command block runs as written.

A ```sh block runs in bash from the repository root with the installed console script on PATH;
its exit code is 0, or N when the block says `# exit N`. The ```text block right after it, if
any, is its output: every line (`...` skips any number of lines) appears in stdout, in order.
The exporter's block runs against the local API stand-in loaded with the example cluster.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from tests.cli import REPO
from tests.docs import blocks, run_block
from tests.webhook.fake_apiserver import FakeApiServer


@pytest.mark.parametrize("name", ["locks.md", "explain.md"])
def test_command_blocks_run_as_written(name: str) -> None:
    for script, expected in blocks(name):
        run_block(script, expected)


def test_troubleshooting_page_runs() -> None:
    for script, expected in blocks("troubleshooting.md"):
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
