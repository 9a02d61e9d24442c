"""Doctor check ``plugins``: plugins that failed to load (their providers/agents are missing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from paxm_core.doctor import DoctorFinding

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["check_plugins"]


def check_plugins(config: Config) -> Iterator[DoctorFinding]:
    """One ``error`` per plugin that could not be imported or registered."""
    from paxm_core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    pm.provider_types()
    pm.integrations()
    for failure in pm.load_errors:
        fix = f"pip install --force-reinstall {failure.distribution}" if failure.distribution else "paxm plugins"
        yield DoctorFinding("plugins", failure.plugin, "error", f"plugin failed to load: {failure.error}", fix)
