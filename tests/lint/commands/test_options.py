"""One option vocabulary: every command's options, walked, and compared across commands.

An option name means one thing everywhere: the same flags (`-o` wherever `--output` is), the same
kind (flag or value), the same choices, the same metavar and a help text of the same shape; the
options declared once in `lint/options.py` have the same help word for word. `--format` names the
human report `text` on every command and accepts `table` for it. Each command's help states its
exit codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from dra_affinity.lint.cli import main

from tests.cli import run

MULTIPLE_MAY_DIFFER = {
    "--format": "lint, dry-run and test write several reports in one run (pairs with --output)",
    "--output": "the same pairs",
    "--claim": "dry-run filters its results to one claim; locks shows the devices of several",
    "--pool": "dry-run filters its results to one pool; locks and simulate take several",
    "--mode": "explain explains one device choice; simulate compares both on the same arrivals",
}
"""Options whose repeatability differs by command, and why."""
CHOICES_MAY_DIFFER = {"--format": "each command has its own reports (sarif, prometheus, html, ...)"}
PER_COMMAND_MEANING = {
    "--feature-gate", "--summary", "--only-failing", "--claim", "--pool", "--mode", "--namespace",
    "--out-dir", "--secret", "--days", "--ca-days",
}
"""Same name, same flags and kind, but a help text about what the command does with it."""
SERVERS = {"serve", "exporter"}
"""Long-running servers: their `--kubeconfig`/`--context` reach the cluster they serve, not `--cluster`."""
SHARED = ("--output", "--config", "--exclude", "--cluster", "--kubeconfig", "--context", "--chunk-size",
          "--complete-pools", "--kubernetes-version")
"""Declared once (lint/options.py): the same help wherever they appear."""
REPORTING = ("lint", "dry-run", "test", "pools", "locks", "explain", "cel check", "simulate",
             "policy export")


def commands() -> Iterator[tuple[str, click.Command]]:
    def walk(group: click.Group, ctx: click.Context, path: str) -> Iterator[tuple[str, click.Command]]:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            full = f"{path} {name}".strip()
            if isinstance(command, click.Group):
                yield from walk(command, click.Context(command, info_name=name, parent=ctx), full)
            else:
                yield full, command

    yield from walk(main, click.Context(main, info_name="dra-affinity"), "")


def options() -> dict[str, list[tuple[str, click.Option]]]:
    by_name: dict[str, list[tuple[str, click.Option]]] = {}
    for path, command in commands():
        for param in command.params:
            if isinstance(param, click.Option):
                by_name.setdefault(max(param.opts, key=len), []).append((path, param))
    return by_name


def _choices(option: click.Option) -> tuple[str, ...] | None:
    return tuple(option.type.choices) if isinstance(option.type, click.Choice) else None  # type: ignore[arg-type]


def test_the_same_option_name_has_the_same_flags_kind_choices_and_metavar() -> None:
    divergent = []
    for name, uses in options().items():
        def shape(option: click.Option, name: str = name) -> tuple[object, ...]:
            return (sorted(option.opts + option.secondary_opts), option.is_flag, option.metavar,
                    None if name in MULTIPLE_MAY_DIFFER else option.multiple,
                    None if name in CHOICES_MAY_DIFFER else _choices(option))

        shapes = {repr(shape(option)): path for path, option in uses}
        if len(shapes) > 1:
            divergent.append((name, shapes))
    assert not divergent, divergent


def test_every_option_has_a_help_sentence_and_shared_ones_say_the_same() -> None:
    unshaped = [(path, name, option.help) for name, uses in options().items() for path, option in uses
                if not option.help or not option.help[0].isupper() or not option.help.rstrip().endswith(".")]
    assert not unshaped, unshaped
    for name in SHARED:
        for multiple in (False, True):  # --output: one report, or one of several --format/-o pairs
            helps = {option.help: path for path, option in options()[name]
                     if path not in SERVERS and option.multiple is multiple}
            assert len(helps) <= 1, (name, helps)
    for name, uses in options().items():
        if name not in SHARED and name not in PER_COMMAND_MEANING and name != "--format":
            assert len({option.help for _, option in uses}) == 1, name


def test_every_reporting_command_writes_to_o_and_names_its_human_format_text() -> None:
    found = dict(commands())
    for path in REPORTING:
        flags = {opt for param in found[path].params for opt in getattr(param, "opts", [])}
        assert {"-o", "--output"} <= flags, path
    for path, option in options()["--format"]:
        choices = _choices(option)
        assert choices is not None and "text" in choices and "table" not in choices, path
        assert option.type.convert("table", option, None) == "text", path
        assert option.help is not None and option.help.startswith(f"Report format: {', '.join(choices)} ")
        assert option.multiple or option.default == "text", path


def test_commands_that_read_input_take_exclude_config_and_cluster() -> None:
    found = dict(commands())
    for path in ("lint", "dry-run", "pools", "simulate", "locks", "explain"):
        flags = {opt for param in found[path].params for opt in getattr(param, "opts", [])}
        assert {"--exclude", "--config", "--cluster", "--kubeconfig", "--context"} <= flags, path


def test_every_command_states_its_exit_codes() -> None:
    missing = [path for path, command in commands() if "Exit code" not in (command.help or "")]
    assert not missing, missing
    top = run("--help").out
    assert "Exit codes, every command:" in top


@pytest.mark.parametrize("command", [
    ("pools", "--format", "text", "examples/rdma-pkey.yaml"),
    ("explain", "--format", "table", "team-a/a", "examples/cluster/dump.yaml"),
    ("locks", "--format", "table", "examples/cluster/dump.yaml"),
])
def test_both_names_of_the_human_format_are_accepted(command: tuple[str, ...]) -> None:
    result = run(*command)
    assert result.code == 0, result.out + result.err


DRY_RUN = ("examples/networking-node-a.yaml", "examples/claims.yaml")


def test_o_writes_the_report_of_every_reporting_command(tmp_path: Path) -> None:
    out = tmp_path / "report"
    cases = [
        (("locks", "--format", "html", "examples/cluster/dump.yaml"), "<!DOCTYPE html>"),
        (("pools", "--format", "json", "examples/rdma-pkey.yaml"), '"pools"'),
        (("explain", "team-a/a", "examples/cluster/dump.yaml"), "team-a/a"),
        (("cel", "check", 'object.?x.orValue("")'), "compiles: output type"),
        (("rules", "SA105"), "SA105"),
        (("lint", "examples/rdma-pkey.yaml"), "0 errors"),
        (("policy", "export"), "ValidatingAdmissionPolicy"),
        (("simulate", "--format", "json", "examples/cluster/dump.yaml"), '"steps"'),
        (("test", "examples/suites/kep.yaml"), " passed, 0 failed"),
        (("dry-run", *DRY_RUN), "CLAIM"),
        (("dry-run", "--explain", "ml/training-pod-a", *DRY_RUN), "Claim ml/training-pod-a"),
    ]
    for args, expected in cases:
        result = run(*args, "-o", str(out))
        assert result.code == 0 and result.out == "", (args, result.out, result.err)
        assert expected in out.read_text(), args
    unwritable = run("locks", "examples/cluster/dump.yaml", "-o", str(tmp_path / "no" / "such" / "x"))
    assert unwritable.code == 2 and "cannot write the report" in unwritable.err
