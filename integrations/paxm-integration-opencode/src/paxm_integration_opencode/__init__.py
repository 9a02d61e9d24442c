"""paxm's OpenCode integration (agent ``opencode``) and its Kilo Code variant (agent ``kilo``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/opencode.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_opencode.integration import KiloIntegration, OpenCodeIntegration

__all__ = ["KiloIntegration", "OpenCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(
    __name__, {"OpenCodeIntegration": "integration", "KiloIntegration": "integration"}
)
