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
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar


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


class Progress:
    """A progress bar on stderr for a run that lasts: files done of the total, objects checked.

    Drawn only on a terminal (a log or a pipe gets no control characters), not with -q, and
    only once the run has lasted `DRA_AFFINITY_PROGRESS_DELAY` seconds (default 2), so a short
    run stays silent. The bar is click's (`click.progressbar`): click already draws the whole
    command line, so progress costs no new dependency and no start-up import.
    """

    def __init__(self, total: int, label: str) -> None:
        self.total = total
        self.label = label
        self.enabled = total > 0 and not current().quiet and sys.stderr.isatty()
        self.done = 0
        self.objects = 0
        self._start = time.monotonic()
        self._delay = progress_delay()
        self._drawn = 0.0
        self._bar: ProgressBar[int] | None = None
        self._stack = ExitStack()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def advance(self, steps: int) -> None:
        """`steps` more of the total are done (files checked)."""
        self.done += steps
        bar = self._shown()
        if bar is not None and steps:
            bar.update(steps)

    def tick(self) -> None:
        """One more object checked: a single large file shows its count grow (redrawn at most
        ten times a second)."""
        self.objects += 1
        now = time.monotonic()
        if now - self._drawn >= 0.1:
            self._drawn = now
            bar = self._shown()
            if bar is not None:
                bar.render_progress()

    def _shown(self) -> ProgressBar[int] | None:
        if self._bar is None and self.enabled and time.monotonic() - self._start >= self._delay:
            self._bar = self._stack.enter_context(click.progressbar(
                length=self.total, label=self.label, file=sys.stderr, show_pos=True, show_eta=True,
                item_show_func=lambda _: f"{self.objects:,} objects" if self.objects else None))
            self._bar.update(self.done)
        return self._bar
