"""Runs fuzz cases in a long-lived child process (`child`), so a native crash is caught and saved.

`Runner.run(case)` returns an `Outcome`. One child answers case after case (starting one costs
about a second; a case about a millisecond); one case is in flight at a time, so the case a
child dies on (a signal: SIGSEGV is -11) or stops answering on within `case_timeout` seconds is
known exactly. It is written to `crash_dir` as JSON with the cases that child ran before it
(heap corruption can crash a later case than the one that caused it), then confirmed in a fresh
child: alone first, then after those preceding cases; the file says which reproduced it. The
next case gets a fresh child. Replay a saved file with
`python -m tests.fuzz.campaign --replay FILE`.

With `webhook=True` (the reviews target) the runner also starts one real webhook
(`dra-affinity serve`: gunicorn over TLS, certificates generated for it) for the whole run and
tells each child its port and CA; a webhook that exits is started again.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import select
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HISTORY = 64
"""Preceding cases kept with a crash (and replayed to confirm one that does not crash alone)."""


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "problem", "traceback", "crash", "hang", "5xx", "dropped"
    detail: str = ""


@dataclass
class Runner:
    crash_dir: Path
    case_timeout: float = 60.0
    start_timeout: float = 300.0
    webhook: bool = False
    confirm: bool = True
    _proc: subprocess.Popen[str] | None = field(default=None, init=False, repr=False)
    _history: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=HISTORY), init=False, repr=False)
    _server: Any = field(default=None, init=False, repr=False)
    _tmp: tempfile.TemporaryDirectory[str] | None = field(default=None, init=False, repr=False)
    children: int = field(default=0, init=False)
    """Child processes started (the first, and one after every crash or hang)."""

    def _webhook_args(self) -> list[str]:
        if not self.webhook:
            return []
        from tests.webhook.support import generate_certs, start_server

        if self._server is None or self._server.proc.poll() is not None:
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="fuzz-webhook-")
                generate_certs(Path(self._tmp.name) / "certs")
            tmp = Path(self._tmp.name)
            self._server = start_server(tmp, tmp / "certs", workers=1, threads=2)
        return ["--webhook-port", str(self._server.port),
                "--ca-file", str(self._server.cert_dir / "ca.crt")]

    def _start(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DRA_AFFINITY_")}
        proc = subprocess.Popen([sys.executable, "-m", "tests.fuzz.child", *self._webhook_args()],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO)
        self.children += 1
        self._history.clear()
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], self.start_timeout)
        if not ready or proc.stdout.readline().strip() != "ready":
            proc.kill()
            proc.wait()
            raise RuntimeError("the fuzz child did not start")
        return proc

    def _ask(self, case: dict[str, Any]) -> tuple[str, str]:
        """(kind, detail) of one case in the current child; a dead or silent child is
        "crash" or "hang" and is discarded."""
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
        if line:
            answer = json.loads(line)
            self._history.append(case)
            return str(answer["kind"]), str(answer["detail"])
        self._proc = None
        self._history.clear()
        if not ready:  # alive and silent
            proc.kill()
            proc.wait()
            return "hang", f"no answer in {self.case_timeout}s"
        try:  # end of file: the child is dying (its exit status may not be there yet)
            return "crash", f"exit {proc.wait(timeout=self.start_timeout)}"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "hang", "closed its output but did not exit"

    def run(self, case: dict[str, Any]) -> Outcome:
        before = list(self._history)
        kind, detail = self._ask(case)
        if kind == "ok":
            return Outcome(kind)
        extra: dict[str, Any] = {}
        if kind in ("crash", "hang"):
            extra["preceding"] = before
            if self.confirm:
                extra["reproduced"] = self._confirm(case, kind, before)
        if kind == "dropped" and self._server is not None and self._server.proc.poll() is not None:
            detail += f"; the webhook exited ({self._server.proc.returncode})"
        self._save(case, kind, detail, extra)
        return Outcome(kind, detail)

    def _confirm(self, case: dict[str, Any], kind: str, before: list[dict[str, Any]]) -> str:
        """Does `case` give `kind` in a fresh child alone, or after the cases before it?"""
        if self._ask(case)[0] == kind:
            return "alone"
        self.close_child()
        for earlier in before:
            if self._ask(earlier)[0] in ("crash", "hang"):
                return "no (a preceding case failed first)"
        if self._ask(case)[0] == kind:
            return f"after the {len(before)} preceding cases"
        self.close_child()
        return "no"

    def replay(self, saved: dict[str, Any], fresh: bool = True) -> Outcome:
        """A saved finding again, after the cases that preceded it; in a fresh child unless
        `fresh=False` (the suite's corpus replay: one child for every saved case)."""
        if fresh:
            self.close_child()
        for earlier in saved.get("preceding", []):
            self._ask(earlier)
        kind, detail = self._ask(saved["case"])
        return Outcome(kind, detail)

    def _save(self, case: dict[str, Any], kind: str, detail: str, extra: dict[str, Any]) -> None:
        self.crash_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(case, sort_keys=True)
        name = f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
        (self.crash_dir / name).write_text(json.dumps(
            {"case": case, "kind": kind, "detail": detail[:4000], **extra}, indent=1))

    def close_child(self) -> None:
        proc, self._proc = self._proc, None
        self._history.clear()
        if proc is not None and proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        self.close_child()
        if self._server is not None:
            from tests.webhook.support import stop_server

            stop_server(self._server)
            self._server = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
