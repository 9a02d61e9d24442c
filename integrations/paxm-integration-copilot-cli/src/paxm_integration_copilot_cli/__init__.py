"""paxm's GitHub Copilot CLI integration (agent ``copilot-cli``), registered through the ``paxm`` entry point group.

See ``docs/integrations/copilot-cli.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_copilot_cli.integration import CopilotCliIntegration

__all__ = ["CopilotCliIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``copilot-cli`` integration."""
    register(CopilotCliIntegration())
