"""Terminal habits shared by every command: colour, quiet and verbose, progress.

The group's options (`--color`, `-q`, `-v`) are decided once, in the group's callback, into a
`Terminal` kept as the click context's object, which every subcommand's context inherits;
nothing here is global. Colour follows click's own switch (`Context.color`), so every
`click.echo` of a styled text obeys it: `auto` colours only a terminal and honours `NO_COLOR`
(no-color.org: set and not empty disables colour), `always` and `never` override both.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

T = TypeVar("T")

COLOR_CHOICES = ("auto", "always", "never")
PROGRESS_DELAY_ENV = "DRA_AFFINITY_PROGRESS_DELAY"
"""Seconds a run goes on before a progress bar appears (default 2): a short run stays silent."""
DEFAULT_PROGRESS_DELAY = 2.0


@dataclass(frozen=True, slots=True)
class Terminal:
    """What the group's options asked of every command's terminal output."""

    color: bool | None = None
    """True/False forces colour on/off; None lets click colour only a terminal."""
    quiet: bool = False
    """Print findings, reports and errors only: no summary line, warnings or progress."""
    verbose: bool = False
    """Also say on stderr which settings and inputs a run uses."""


def color_setting(choice: str, environ: Mapping[str, str] | None = None) -> bool | None:
    """`--color` as click's `Context.color`: `auto` is click's terminal check unless NO_COLOR is set."""
    env = os.environ if environ is None else environ
    if choice == "always":
        return True
    if choice == "never" or env.get("NO_COLOR", ""):
        return False
    return None


def current() -> Terminal:
    """The running command's terminal settings (defaults outside a command, e.g. in a library call)."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_object(Terminal) if ctx is not None else None
    return obj if obj is not None else Terminal()


def warn(command: str, message: str) -> None:
    """A warning on stderr, `dra-affinity CMD: warning: …`; -q silences it."""
    if not current().quiet:
        click.echo(f"dra-affinity {command}: warning: {message}", err=True)


def verbose(message: str) -> None:
    """A line about the run itself on stderr, only with -v, prefixed by the command's name."""
    if current().verbose:
        ctx = click.get_current_context(silent=True)
        click.echo(f"{ctx.command_path if ctx is not None else 'dra-affinity'}: {message}", err=True)


def progress_delay(environ: Mapping[str, str] | None = None) -> float:
    env = os.environ if environ is None else environ
    try:
        return max(0.0, float(env.get(PROGRESS_DELAY_ENV, DEFAULT_PROGRESS_DELAY)))
    except ValueError:
        return DEFAULT_PROGRESS_DELAY


def with_progress(items: Iterable[T], total: int, label: str,
                  step: Callable[[T], int] = lambda _: 1) -> Iterator[T]:
    """`items`, drawing a progress bar on stderr once the run has lasted a few seconds.

    `total` is the work to do and `step(item)` the part of it an item completes (a file's
    result counts its files; a report of what a walk skipped counts none).

    Only on a terminal (a log or a pipe gets no control characters) and not with -q. The bar
    is click's (`click.progressbar`): click is already what draws the whole command line, so
    progress costs no new dependency and no start-up import.
    """
    if total <= 1 or current().quiet or not sys.stderr.isatty():
        yield from items
        return
    start = time.monotonic()
    delay = progress_delay()
    bar: ProgressBar[int] | None = None
    done = 0
    with ExitStack() as stack:
        for item in items:
            yield item
            advanced = step(item)
            done += advanced
            if bar is None and time.monotonic() - start >= delay:
                bar = stack.enter_context(click.progressbar(
                    length=total, label=label, file=sys.stderr, show_pos=True, show_eta=True))
                bar.update(done)
            elif bar is not None and advanced:
                bar.update(advanced)
