"""paxm's OpenAI Codex CLI integration (agent ``codex``; aliases ``codex-cli``, ``openai-codex``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/codex.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_codex.integration import OWNER_CODEX_PLUGIN, CodexIntegration
from paxm_integration_codex.plugin import MARKETPLACE_DIR, PLUGIN_ID

__all__ = [
    "MARKETPLACE_DIR",
    "OWNER_CODEX_PLUGIN",
    "PLUGIN_ID",
    "CodexIntegration",
    "__version__",
    "paxm_register_integrations",
]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``codex`` integration."""
    register(CodexIntegration())
