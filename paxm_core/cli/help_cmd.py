"""``paxm help [COMMAND]...``: the same text as ``paxm [COMMAND]... --help``."""

from __future__ import annotations

import click

from paxm_core.api.errors import UsageError

__all__ = ["help_cmd"]


@click.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_cmd(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Show help for paxm or for one of its commands (paxm help queue status)."""
    root = ctx.find_root()
    command: click.Command = root.command
    current = root
    for word in words:
        if not isinstance(command, click.Group):
            raise UsageError(f"'{current.command_path}' has no subcommands; see paxm help {' '.join(words[:-1])}")
        sub = command.get_command(current, word)
        if sub is None:
            known = ", ".join(command.list_commands(current))
            raise UsageError(f"no such command '{current.command_path} {word}'; commands: {known}")
        current = click.Context(sub, info_name=word, parent=current)
        command = sub
    click.echo(current.get_help())
