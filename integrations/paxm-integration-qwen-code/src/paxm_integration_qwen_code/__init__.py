"""paxm's Qwen Code integration (agent ``qwen``): see ``docs/integrations/qwen-code.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_qwen_code.integration import QwenCodeIntegration

__all__ = ["QwenCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"QwenCodeIntegration": "integration"})
