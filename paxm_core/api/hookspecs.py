"""The paxm plugin hooks.  Hooks only *register* objects; objects do the work."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import TYPE_CHECKING, cast

import pluggy

if TYPE_CHECKING:
    import click

    from paxm_core.api.integration import Integration

__all__ = ["hookimpl", "hookspec", "integration_exports", "lazy_exports"]

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


def integration_exports(
    package: str, registered: Mapping[str, str], others: Mapping[str, str] | None = None
) -> tuple[Callable[[str], object], Callable[[Callable[[Integration], None]], None]]:
    """An integration's entry-point module in one line: its ``__getattr__`` (:func:`lazy_exports`
    of ``registered`` and ``others``: public name -> submodule) and its ``paxm_register_integrations``
    hook, which registers one instance of each class in ``registered``, in order (its module is
    imported then, not before).

    ``__getattr__, paxm_register_integrations = integration_exports(__name__, {"X": "integration"})``
    """
    attribute = lazy_exports(package, {**registered, **(others or {})})

    @hookimpl
    def paxm_register_integrations(register: Callable[[Integration], None]) -> None:
        for name in registered:
            register(cast("Callable[[], Integration]", attribute(name))())

    return attribute, paxm_register_integrations


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
