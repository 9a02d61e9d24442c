"""``paxm version``, ``paxm plugins`` and ``paxm help``: what is installed and how to use it."""

from __future__ import annotations

from dataclasses import asdict

import click

from paxm_core import __version__
from paxm_core.api.errors import UsageError
from paxm_core.cli.common import echo_json, json_flag

__all__ = ["help_cmd", "installed_distributions", "plugins", "version"]


def installed_distributions() -> list[tuple[str, str]]:
    """``(name, version)`` of every installed paxm distribution, sorted by name.

    That is ``paxm`` and ``paxm-*`` plus any distribution registering a ``paxm`` plugin entry
    point (a third-party provider need not follow the naming convention).
    """
    from importlib.metadata import distributions

    from paxm_core.plugins import ENTRY_POINT_GROUP

    found: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"] or ""
        if not name:
            continue
        key = name.lower().replace("_", "-")
        plugin = any(ep.group == ENTRY_POINT_GROUP for ep in dist.entry_points)
        if key == "paxm" or key.startswith("paxm-") or plugin:
            found.setdefault(key, dist.version)
    return sorted(found.items())


@click.command("version")
@json_flag('Print {"version": ..., "distributions": [...]} as JSON.')
def version(as_json: bool) -> None:
    """Print paxm's version and each installed paxm distribution (providers, integrations)."""
    dists = installed_distributions()
    if as_json:
        rows = [{"name": name, "version": ver} for name, ver in dists]
        echo_json({"version": __version__, "distributions": rows}, ascii=True)
        return
    click.echo(f"paxm {__version__}")
    width = max((len(name) for name, _ in dists), default=0)
    for name, ver in dists:
        click.echo(f"  {name.ljust(width)}  {ver}")


@click.command()
@json_flag("Print machine-readable JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, the provider types and integrations they register, and load errors.

    Set PAXM_LOAD_PLUGINS=name1,name2 to load only those plugins (empty loads none).
    """
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    infos = pm.plugin_infos()
    errors = pm.load_errors
    if as_json:
        payload = {
            "plugins": [asdict(info) for info in infos],
            "errors": [asdict(e) for e in errors],
        }
        echo_json(payload, ascii=True)
        return
    if not infos:
        click.echo("No plugins loaded.")
    for info in infos:
        dist = f"{info.distribution} {info.version}".strip() or "(not from a distribution)"
        click.echo(f"{info.name}: {dist}")
        if info.providers:
            click.echo(f"  providers: {', '.join(info.providers)}")
        if info.integrations:
            click.echo(f"  integrations: {', '.join(info.integrations)}")
    for err in errors:
        click.echo(f"error: {err.plugin} ({err.distribution or 'unknown distribution'}): {err.error}", err=True)


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
