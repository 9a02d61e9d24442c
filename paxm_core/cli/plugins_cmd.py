"""``paxm plugins``: what is installed, what it registered, and what failed to load."""

from __future__ import annotations

import click

from paxm_core.cli.common import echo_json, json_flag
from paxm_core.plugins import get_plugin_manager


@click.command()
@json_flag("Print machine-readable JSON.")
def plugins(as_json: bool) -> None:
    """List installed plugins, the provider types and integrations they register, and load errors.

    Set PAXM_LOAD_PLUGINS=name1,name2 to load only those plugins (empty loads none).
    """
    pm = get_plugin_manager()
    infos = pm.plugin_infos()
    errors = pm.load_errors
    if as_json:
        payload = {
            "plugins": [info.to_json() for info in infos],
            "errors": [{"plugin": e.plugin, "distribution": e.distribution, "error": e.error} for e in errors],
        }
        echo_json(payload, ascii=True)
        return
    if not infos:
        click.echo("No plugins loaded.")
    for info in infos:
        dist = f"{info.distribution} {info.version}".strip() or "(not from a distribution)"
        click.echo(f"{info.name}: {dist}")
        if info.providers:
            click.echo(f"  providers: {', '.join(sorted(info.providers))}")
        if info.integrations:
            click.echo(f"  integrations: {', '.join(sorted(info.integrations))}")
    for err in errors:
        click.echo(f"error: {err.plugin} ({err.distribution or 'unknown distribution'}): {err.error}", err=True)
