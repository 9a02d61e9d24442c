"""``paxm version``: paxm's version and every installed paxm distribution."""

from __future__ import annotations

import click

from paxm_core import __version__
from paxm_core.cli.common import echo_json, json_flag

__all__ = ["installed_distributions", "version"]


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
