"""paxm's OpenCode integration (agent ``opencode``) and its Kilo Code variant (agent ``kilo``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/opencode.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_opencode.integration import KiloIntegration, OpenCodeIntegration

__all__ = ["KiloIntegration", "OpenCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``opencode`` and ``kilo`` integrations."""
    register(OpenCodeIntegration())
    register(KiloIntegration())
