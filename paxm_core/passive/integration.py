"""How the passive runtime finds the integration for a hook's ``--target``.

A harness distribution registers an :class:`~paxm_core.integration.Integration` through
``paxm_register_integrations``; targets without one are served by :class:`GenericIntegration`,
which decodes upstream's documented generic payload field names and prints plain text (or the
capture result object with ``--json``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.integration import Integration, IntegrationBase

if TYPE_CHECKING:
    from paxm_core.plugins import PaxmPluginManager

__all__ = ["GenericIntegration", "resolve_integration"]


class GenericIntegration(IntegrationBase):
    """The integration of a target no plugin serves: :class:`IntegrationBase`'s generic behaviour."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.label = name


def resolve_integration(target: str, plugin_manager: PaxmPluginManager | None = None) -> Integration:
    """The registered integration for ``target`` (name or alias), else a :class:`GenericIntegration`."""
    if plugin_manager is not None:
        try:
            found = plugin_manager.integration(target)
        except Exception:  # a broken plugin must not break the hook
            found = None
        if found is not None:
            return found
    return GenericIntegration(target)
