"""Terminal habits through the installed console script: colour and NO_COLOR, -q/-v, progress on a
terminal only, shell completion.

A terminal is a real pseudo-terminal (`pty`): click decides colour and the progress bar draws
from `isatty()`, which a pipe answers no.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli import REPO, SCRIPT, run

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BROKEN = "examples/broken-slice.yaml"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"GITHUB_ACTIONS", "GITHUB_WORKSPACE", "NO_COLOR", "DRA_AFFINITY_PROGRESS_DELAY"}}
    env.update(extra)
    return env


def piped(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, env=_env(**env),
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def in_terminal(*args: str, **env: str) -> tuple[int, str]:
    """Run with stdout and stderr on one pseudo-terminal; its exit code and everything it wrote."""
    main, secondary = pty.openpty()
    proc = subprocess.Popen([str(SCRIPT), *args], stdin=subprocess.DEVNULL, stdout=secondary,
                            stderr=secondary, cwd=REPO, env=_env(**env))
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    code = proc.wait(timeout=120)
    text = b"".join(chunks).decode()
    assert "Traceback" not in text, text
    return code, text


def test_a_terminal_gets_colour_unless_no_color_or_never() -> None:
    code, coloured = in_terminal("lint", BROKEN)
    assert code == 1 and ANSI.search(coloured), coloured
    code, plain = in_terminal("lint", BROKEN, NO_COLOR="1")
    assert code == 1 and not ANSI.search(plain) and "SA102 error: " in plain
    code, never = in_terminal("--color", "never", "lint", BROKEN)
    assert not ANSI.search(never) and ANSI.sub("", coloured) == never
    code, empty = in_terminal("lint", BROKEN, NO_COLOR="")  # set but empty: no-color.org says ignore it
    assert ANSI.search(empty)


def test_color_always_colours_a_pipe_and_beats_no_color() -> None:
    assert not ANSI.search(piped("lint", BROKEN).stdout)
    for env in ({}, {"NO_COLOR": "1"}):
        always = piped("--color", "always", "lint", BROKEN, **env).stdout
        assert "\x1b[31m" in always and "\x1b[1mSA102\x1b[0m" in always, always
    failed = piped("--color", "always", "test", "examples/suites/kep.yaml").stdout
    assert "\x1b[32mPASS\x1b[0m" in failed


def test_quiet_prints_findings_and_nothing_else() -> None:
    loud = piped("lint", BROKEN)
    quiet = piped("-q", "lint", BROKEN)
    assert quiet.returncode == loud.returncode == 1
    assert quiet.stdout.splitlines() == loud.stdout.splitlines()[:-1]  # all but the summary line
    assert "errors" in loud.stdout.splitlines()[-1]
    clean = piped("--quiet", "lint", "examples/rdma-pkey.yaml")
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")
    suite = piped("-q", "test", "examples/suites/kep.yaml")
    assert suite.returncode == 0 and suite.stdout.strip() == ""
    annotations = piped("-q", "lint", BROKEN, GITHUB_ACTIONS="true").stdout.splitlines()
    assert annotations and all(line.startswith("::") for line in annotations)


def test_verbose_says_what_the_run_uses_on_stderr() -> None:
    out = piped("-v", "lint", "--format", "json", "examples/rdma-pkey.yaml")
    assert out.returncode == 0
    assert "dra-affinity lint: config: " in out.stderr
    assert "dra-affinity lint: report: json to standard output" in out.stderr
    assert "dra-affinity lint: 1 file(s) to check" in out.stderr
    assert out.stdout.startswith("{")  # the report itself is untouched
    both = piped("-q", "-v", "lint", "examples/rdma-pkey.yaml")
    assert both.returncode == 2 and "exclude each other" in both.stderr


def test_progress_only_on_a_terminal_and_not_when_quiet() -> None:
    piped_run = piped("lint", "examples/", DRA_AFFINITY_PROGRESS_DELAY="0")
    assert "Checking files" not in piped_run.stderr and not ANSI.search(piped_run.stderr)
    code, shown = in_terminal("lint", "examples/", DRA_AFFINITY_PROGRESS_DELAY="0")
    assert code == 1 and "Checking files" in shown, shown
    files = sum(p.suffix in (".yaml", ".yml", ".json") for p in (REPO / "examples").rglob("*"))
    assert re.search(rf"{files}/{files}", shown), shown  # every file counted
    code, quiet = in_terminal("-q", "lint", "examples/", DRA_AFFINITY_PROGRESS_DELAY="0")
    assert "Checking files" not in quiet
    code, short = in_terminal("lint", "examples/", DRA_AFFINITY_PROGRESS_DELAY="3600")  # a shorter run: none
    assert "Checking files" not in short


def test_progress_of_one_large_file_counts_its_objects(tmp_path: Path) -> None:
    """A dump in one file is one step of the file count: the objects checked show it moving."""
    one = (REPO / "examples" / "rdma-pkey.yaml").read_text().strip().removeprefix("---\n")
    dump = tmp_path / "dump.yaml"
    dump.write_text("\n---\n".join([one] * 40))
    objects = run("lint", "--format", "json", str(dump)).json()["summary"]["objects"]
    assert objects >= 40
    _, shown = in_terminal("lint", str(dump), DRA_AFFINITY_PROGRESS_DELAY="0")
    assert "Checking files" in shown and "1/1" in shown, shown
    assert f"{objects} objects" in shown, shown


def test_completion_scripts_for_each_shell() -> None:
    for shell, marker in (("bash", "complete -o nosort -F _dra_affinity_completion dra-affinity"),
                          ("zsh", "#compdef dra-affinity"),
                          ("fish", "complete --no-files --command dra-affinity")):
        out = run("completion", shell)
        assert out.code == 0 and marker in out.out, (shell, out.out)
        assert f"_DRA_AFFINITY_COMPLETE={shell}_complete" in out.out
    assert run("completion", "powershell").code == 2


def test_the_completion_protocol_answers_commands_options_and_choices() -> None:
    def complete(words: str) -> list[str]:
        cword = len(words.split()) - (0 if words.endswith(" ") else 1)
        proc = subprocess.run([str(SCRIPT)], capture_output=True, text=True, cwd=REPO, timeout=60,
                              env=_env(_DRA_AFFINITY_COMPLETE="bash_complete", COMP_WORDS=words,
                                       COMP_CWORD=str(cword)))
        return proc.stdout.splitlines()

    assert "plain,lint" in complete("dra-affinity li")
    assert "plain,--format" in complete("dra-affinity lint --for")
    formats = set(complete("dra-affinity locks --format "))
    assert {"plain,text", "plain,json", "plain,html", "plain,prometheus"} <= formats
    assert "plain,zsh" in complete("dra-affinity completion ")


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_loads_the_script(tmp_path: Path) -> None:
    script = tmp_path / "completion.bash"
    script.write_text(run("completion", "bash").out)
    proc = subprocess.run(["bash", "-c", f"source {script} && complete -p dra-affinity"], capture_output=True,
                          text=True, timeout=60, env=_env())
    assert proc.returncode == 0 and "_dra_affinity_completion" in proc.stdout, proc.stderr


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_load_the_script(shell: str, tmp_path: Path) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed here (apt-get install {shell}); the script is checked above")
    script = tmp_path / f"completion.{shell}"
    script.write_text(run("completion", shell).out)
    command = (f"autoload -Uz compinit && compinit -u && source {script}" if shell == "zsh"
               else f"source {script}; complete --command dra-affinity")
    proc = subprocess.run([shell, "-c", command], capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr
