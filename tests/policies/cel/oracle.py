"""The real cel-go beside the project's CEL: a JSON-lines process that answers case by case.

Why a process and not a library: the reference is `../shared/oracle/celoracle`, cel-go with the
Kubernetes CEL libraries built from upstream source (its README gives the commits and the
environment: the sharing-affinity extractor's, `object` typed `dyn`, stored expressions, cost
limit 1,000,000). It is a reference tool that users do not have, so `unavailable()` says why
it cannot be used and the tests skip with that reason.

`LineProcess` keeps one child answering line after line. The oracle can exhaust memory on a
few inputs (`lists.range(9223372036854775807)` in cel-go itself), so it runs under an address
space limit; a child that dies or stays silent past the timeout is restarted and the case is
answered with `None`.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
ORACLE_DIR = REPO.parent / "shared" / "oracle"
CELORACLE = ORACLE_DIR / "celoracle"

ORACLE_MEMORY = 3 * 1024 * 1024 * 1024
"""Address space of the oracle process (its README's `prlimit --as=3221225472`)."""


def _limit_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class LineProcess:
    """A child process that answers one JSON line with one JSON line."""

    def __init__(self, argv: Sequence[str], *, timeout: float = 30.0,
                 memory: int | None = None, env: dict[str, str] | None = None) -> None:
        self._argv = list(argv)
        self._timeout = timeout
        self._memory = memory
        self._env = env
        self._proc: subprocess.Popen[str] | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen[str]:
        memory = self._memory
        self._proc = subprocess.Popen(
            self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1, env=self._env,
            preexec_fn=(lambda: _limit_memory(memory)) if memory else None)
        return self._proc

    def ask(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
        """The answer to `request`, or None when the child died or timed out on it (`timeout`
        seconds, by default the process's)."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None \
            else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            self._kill()
            return None
        ready, _, _ = select.select([proc.stdout], [], [],
                                    self._timeout if timeout is None else timeout)
        line = proc.stdout.readline() if ready else ""
        if not line:
            self._kill()
            return None
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
            self.restarts += 1

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


def unavailable(binary: Path = CELORACLE) -> str | None:
    """Why the oracle cannot be used here (None: it answers)."""
    if not binary.exists():
        return f"the cel-go oracle is not present at {binary} (see shared/oracle/README.md)"
    if not os.access(binary, os.X_OK):
        return f"the cel-go oracle at {binary} is not executable"
    probe = LineProcess([str(binary)], timeout=60.0, memory=ORACLE_MEMORY)
    try:
        answer = probe.ask({"expr": "'a'", "object": {}})
    except OSError as exc:
        return f"the cel-go oracle at {binary} cannot run: {exc}"
    finally:
        probe.close()
    if answer is None or answer.get("value") != {"t": "string", "v": "a"}:
        return f"the cel-go oracle at {binary} does not answer as its README says: {answer!r}"
    return None


def celoracle(timeout: float = 30.0) -> LineProcess:
    """The extractor oracle, memory-limited."""
    return LineProcess([str(CELORACLE)], timeout=timeout, memory=ORACLE_MEMORY)
