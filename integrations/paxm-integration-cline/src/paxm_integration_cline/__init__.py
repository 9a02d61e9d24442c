"""paxm's Cline integration (agent ``cline``): see ``docs/integrations/cline.md``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_cline.integration import ClineIntegration

__all__ = ["ClineIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"ClineIntegration": "integration"})
