"""Run the installed `dra-affinity` console script the way a user or CI does."""

from __future__ import annotations

import json
import os
import shutil
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


def snapshot(dest: Path) -> Path:
    """A copy of the checkout as git sees it (tracked and new files, nothing ignored): what a
    fresh clone of it would hold once the working changes are committed."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest
