"""paxm's Kimi Code integration (agent ``kimi-code``, alias ``kimi``): see ``docs/integrations/kimi-code.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_kimi_code.integration import KimiCodeIntegration

__all__ = ["KimiCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"KimiCodeIntegration": "integration"})
