"""paxm's Pi coding agent integration (agent ``pi``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/pi.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_pi.integration import PiIntegration

__all__ = ["PiIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(__name__, {"PiIntegration": "integration"})
