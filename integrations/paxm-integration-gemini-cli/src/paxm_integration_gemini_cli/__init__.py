"""paxm's Gemini CLI integration (agent ``gemini-cli``): see ``docs/integrations/gemini-cli.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_gemini_cli.integration import GeminiCliIntegration

__all__ = ["GeminiCliIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"GeminiCliIntegration": "integration"})
