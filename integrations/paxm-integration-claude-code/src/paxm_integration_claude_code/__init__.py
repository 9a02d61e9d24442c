"""paxm's Claude Code integration (agent ``claude``; aliases ``claude-code``, ``claude_code``, ``claudecode``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/claude-code.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core.api.hookspecs import hookimpl, lazy_exports

if TYPE_CHECKING:
    from paxm_integration_claude_code.integration import ClaudeCodeIntegration
    from paxm_integration_claude_code.plugin import MARKETPLACE_DIR

__all__ = ["ClaudeCodeIntegration", "MARKETPLACE_DIR", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

#: public name -> the submodule defining it, imported on first use: every paxm process that
#: loads plugins imports this module, and only the ones using the integration need its code
_LAZY = {"ClaudeCodeIntegration": "integration", "MARKETPLACE_DIR": "plugin"}


__getattr__ = lazy_exports(__name__, _LAZY)


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``claude`` integration."""
    from paxm_integration_claude_code.integration import ClaudeCodeIntegration

    register(ClaudeCodeIntegration())
