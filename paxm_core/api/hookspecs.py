"""The paxm plugin hooks.  Hooks only *register* objects; objects do the work."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from paxm_core.api.integration import Integration

__all__ = ["hookimpl", "hookspec", "lazy_exports"]

hookspec = pluggy.HookspecMarker("paxm")
hookimpl = pluggy.HookimplMarker("paxm")


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for a plugin's entry-point module: ``names`` maps each public name
    to the submodule defining it, imported on first use.

    Every paxm process that loads plugins imports the entry-point modules; only the ones that
    use a plugin should pay for its code (``__getattr__ = lazy_exports(__name__, {...})``).
    """

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(import_module(package), name, value)
        return value

    return __getattr__


@hookspec
def paxm_register_providers(register: Callable[..., None]) -> None:
    """Register provider types.

    :param register: call ``register(ProviderType(type=..., factory=...))`` or
        ``register("type", factory, description=...)`` once per provider type.  The factory is
        ``(instance_name, ProviderConfig) -> Provider`` and must import its SDK lazily.
    """


@hookspec
def paxm_register_integrations(register: Callable[[Integration], None]) -> None:
    """Register harness integrations.

    :param register: call ``register(integration)`` with an object satisfying
        :class:`paxm_core.api.integration.Integration`.
    """


@hookspec
def paxm_register_commands(cli: click.Group) -> None:
    """Add commands to the ``paxm`` CLI.

    :param cli: the root ``click.Group``; use ``@cli.command()`` or ``cli.add_command``.
    """
