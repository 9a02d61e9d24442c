"""The paxm plugin hooks.  Hooks only *register* objects; objects do the work."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

__all__ = ["hookimpl", "hookspec"]

hookspec = pluggy.HookspecMarker("paxm")
hookimpl = pluggy.HookimplMarker("paxm")


@hookspec
def paxm_register_providers(register: Callable[..., None]) -> None:
    """Register provider types.

    :param register: call ``register(ProviderType(type=..., factory=...))`` or
        ``register("type", factory, description=...)`` once per provider type.  The factory is
        ``(instance_name, ProviderConfig) -> Provider`` and must import its SDK lazily.
    """


@hookspec
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register harness integrations.

    :param register: call ``register(integration)`` with an object satisfying
        :class:`paxm_core.protocols.Integration`.
    """


@hookspec
def paxm_register_commands(cli: click.Group) -> None:
    """Add commands to the ``paxm`` CLI.

    :param cli: the root ``click.Group``; use ``@cli.command()`` or ``cli.add_command``.
    """
