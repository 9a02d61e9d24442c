"""paxm's OpenAI Codex CLI integration (agent ``codex``; aliases ``codex-cli``, ``openai-codex``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/codex.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_codex.integration import OWNER_CODEX_PLUGIN, CodexIntegration
    from paxm_integration_codex.plugin import MARKETPLACE_DIR, PLUGIN_ID

__all__ = [
    "CodexIntegration",
    "MARKETPLACE_DIR",
    "OWNER_CODEX_PLUGIN",
    "PLUGIN_ID",
    "__version__",
    "paxm_register_integrations",
]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(
    __name__,
    {"CodexIntegration": "integration"},
    {"OWNER_CODEX_PLUGIN": "integration", "MARKETPLACE_DIR": "plugin", "PLUGIN_ID": "plugin"},
)
