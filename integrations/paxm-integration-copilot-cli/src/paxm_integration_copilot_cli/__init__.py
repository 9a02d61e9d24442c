"""paxm's GitHub Copilot CLI integration (agent ``copilot-cli``): see ``docs/integrations/copilot-cli.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_copilot_cli.integration import CopilotCliIntegration

__all__ = ["CopilotCliIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"CopilotCliIntegration": "integration"})
