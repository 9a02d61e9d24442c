"""``paxm eval provider``: the group provider distributions add their conformance checks to.

The core names no provider type: a distribution adds ``paxm eval provider <type>`` through
the ``paxm_register_commands`` hook (``paxm-provider-jsonrpc`` adds ``jsonrpc``).  The group
asks plugins for their commands the first time it is listed or used.
"""

from __future__ import annotations

import click

__all__ = ["provider"]


class _ProviderGroup(click.Group):
    """Loads the plugins' commands before listing or resolving subcommands."""

    @staticmethod
    def _load_plugins(ctx: click.Context) -> None:
        root = ctx.find_root().command
        load = getattr(root, "_load_plugin_commands", None)
        if callable(load):
            load()

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugins(ctx)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._load_plugins(ctx)
        return super().get_command(ctx, cmd_name)


@click.group("provider", cls=_ProviderGroup)
def provider() -> None:
    """Check provider plugins against the paxm provider protocol (each provider distribution adds its own)."""
