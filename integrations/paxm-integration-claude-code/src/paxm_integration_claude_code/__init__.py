"""paxm's Claude Code integration (agent ``claude``; aliases ``claude-code``, ``claude_code``, ``claudecode``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/claude-code.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_claude_code.integration import ClaudeCodeIntegration
    from paxm_integration_claude_code.plugin import MARKETPLACE_DIR

__all__ = ["ClaudeCodeIntegration", "MARKETPLACE_DIR", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(
    __name__, {"ClaudeCodeIntegration": "integration"}, {"MARKETPLACE_DIR": "plugin"}
)
