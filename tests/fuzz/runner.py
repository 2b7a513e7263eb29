"""Runs fuzz cases in a child process (`child`), so a native crash is caught and saved.

`Runner.run(case)` returns an `Outcome`; a child that dies (a signal: SIGSEGV is -11) or
stops answering within `case_timeout` seconds is replaced, and the case is written to
`crash_dir` as JSON so it can be replayed (`python -m tests.fuzz.campaign --replay FILE`).
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "problem", "traceback", "crash", "hang"
    detail: str = ""


@dataclass
class Runner:
    crash_dir: Path
    case_timeout: float = 60.0
    start_timeout: float = 300.0
    _proc: subprocess.Popen[str] | None = field(default=None, init=False, repr=False)

    def _start(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRA_AFFINITY_")}
        proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.child"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env,
                                cwd=Path(__file__).resolve().parents[2])
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], self.start_timeout)
        if not ready or proc.stdout.readline().strip() != "ready":
            proc.kill()
            raise RuntimeError("the fuzz child did not start")
        return proc

    def run(self, case: dict[str, Any]) -> Outcome:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = self._start()
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(case) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([proc.stdout], [], [], self.case_timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            if proc.poll() is None:
                proc.kill()
                kind, detail = "hang", f"no answer in {self.case_timeout}s"
            else:
                kind, detail = "crash", f"exit {proc.wait()}"
            self._proc = None
            self._save(case, kind, detail)
            return Outcome(kind, detail)
        answer = json.loads(line)
        if "traceback" in answer:
            self._save(case, "traceback", answer["traceback"])
            return Outcome("traceback", answer["traceback"])
        if answer["problems"]:
            detail = "; ".join(answer["problems"])
            self._save(case, "problem", detail)
            return Outcome("problem", detail)
        return Outcome("ok")

    def _save(self, case: dict[str, Any], kind: str, detail: str) -> None:
        self.crash_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(case, sort_keys=True)
        name = f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
        (self.crash_dir / name).write_text(json.dumps({"case": case, "kind": kind,
                                                       "detail": detail[:4000]}, indent=1))

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc = None
