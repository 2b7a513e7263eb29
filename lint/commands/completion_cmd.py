"""`dra-affinity completion SHELL`: the shell completion script, printed for the user to source.

click writes the script and answers the shell's completion requests itself (the
`_DRA_AFFINITY_COMPLETE` environment variable the script sets); this command only names the
shell and prints click's script for it, so completion follows every command and option as
declared.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")
PROG_NAME = "dra-affinity"
COMPLETE_VAR = "_DRA_AFFINITY_COMPLETE"


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(dra-affinity completion bash)"        (in ~/.bashrc)
    zsh:   eval "$(dra-affinity completion zsh)"         (in ~/.zshrc)
    fish:  dra-affinity completion fish > ~/.config/fish/completions/dra-affinity.fish

    Exit code 0; 2 on usage errors.
    """
    from ..cli import main

    cls = get_completion_class(shell)
    assert cls is not None  # every name in SHELLS is one click ships
    click.echo(cls(main, {}, PROG_NAME, COMPLETE_VAR).source())
