"""paxm's Claude Code integration (agent ``claude``; aliases ``claude-code``, ``claude_code``, ``claudecode``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/claude-code.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import hookimpl
from paxm_integration_claude_code.integration import ClaudeCodeIntegration
from paxm_integration_claude_code.plugin import MARKETPLACE_DIR

__all__ = ["MARKETPLACE_DIR", "ClaudeCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``claude`` integration."""
    register(ClaudeCodeIntegration())
