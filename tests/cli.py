"""Run the installed `dra-affinity` console script the way a user or CI does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(sys.executable).with_name("dra-affinity")
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run(*args: str, stdin: str | bytes | None = None, cwd: Path | None = None) -> Run:
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    data = stdin.encode() if isinstance(stdin, str) else stdin
    # CI variables change defaults (GITHUB_ACTIONS picks the github format): tests state theirs.
    env = {k: v for k, v in os.environ.items() if k not in {"GITHUB_ACTIONS", "GITHUB_WORKSPACE"}}
    proc = subprocess.run(
        [str(SCRIPT), *args], input=data, capture_output=True, cwd=cwd or REPO, timeout=120, env=env
    )
    result = Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result
