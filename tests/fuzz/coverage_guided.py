"""Coverage-guided fuzzing of the same grammar with atheris (libFuzzer), part of the test extra.

    .venv/bin/pip install -e '.[test]'
    nice -n 19 .venv/bin/python -m tests.fuzz.coverage_guided --target expressions -- \
        -runs=100000 -fork=1 -artifact_prefix=fuzz-findings/
    .venv/bin/python -m tests.fuzz.coverage_guided --target expressions --show fuzz-findings/crash-…

Why next to `campaign`: the campaign draws cases at random; here libFuzzer's bytes make the
grammar's choices (`AtherisSource`), and inputs that reach new lines of our Python (the CEL
walk, the Kubernetes libraries, the rules, the loader) are kept and mutated. It runs in
process (atheris instruments the imported code), so crash isolation is libFuzzer's: it
catches SIGSEGV itself and writes the input bytes to `crash-<sha1>` (with `-fork=1` a child
process runs the inputs and the parent carries on). `--show FILE` prints the case those bytes
make, to save as a campaign finding (`{"case": …}`) and replay in the child process. The
reviews target lints and dry-runs the generated slice and claim in process (no webhook).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tests.fuzz import grammar


class AtherisSource:
    """The grammar's choices from libFuzzer's bytes (atheris's `FuzzedDataProvider`); when
    the bytes run out every choice is the smallest, so generation still ends."""

    def __init__(self, data: bytes) -> None:
        import atheris

        self._fdp = atheris.FuzzedDataProvider(data)

    def integer(self, lo: int, hi: int) -> int:
        return int(self._fdp.ConsumeIntInRange(lo, hi))

    def floating(self) -> float:
        return float(self._fdp.ConsumeRegularFloat())

    def text(self, max_size: int) -> str:
        return str(self._fdp.ConsumeUnicodeNoSurrogates(self.integer(0, max_size)))


def case_of(target: str, data: bytes) -> dict[str, Any]:
    return grammar.TARGETS[target](AtherisSource(data))


def one_input(target: str) -> Any:
    from tests.fuzz import child

    def expressions(data: bytes) -> None:
        child.check_expression(case_of(target, data))

    def reviews(data: bytes) -> None:
        case = case_of(target, data)
        obj = case["review"]["request"].get("object")
        if isinstance(obj, dict):
            problems = child.lint_verdict(obj, None, case["claim"])[2]
            if problems:
                raise AssertionError("; ".join(problems))

    return expressions if target == "expressions" else reviews


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--target", choices=tuple(grammar.TARGETS), default="expressions")
    parser.add_argument("--show", type=Path, help="print the case a saved input makes")
    args, libfuzzer_args = parser.parse_known_args()
    if args.show is not None:
        print(json.dumps({"case": case_of(args.target, args.show.read_bytes())}, indent=1))
        return
    import atheris

    with atheris.instrument_imports(include=["dra_affinity"]):
        from tests.fuzz import child  # noqa: F401  (imports what the target runs, instrumented)
    target = one_input(args.target)
    atheris.Setup([sys.argv[0], *[a for a in libfuzzer_args if a != "--"]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
