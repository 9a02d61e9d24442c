"""paxm's OpenAI Codex CLI integration (agent ``codex``; aliases ``codex-cli``, ``openai-codex``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/codex.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core.api.hookspecs import hookimpl, lazy_exports

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

#: public name -> the submodule defining it, imported on first use: every paxm process that
#: loads plugins imports this module, and only the ones using the integration need its code
_LAZY = {
    "OWNER_CODEX_PLUGIN": "integration",
    "CodexIntegration": "integration",
    "MARKETPLACE_DIR": "plugin",
    "PLUGIN_ID": "plugin",
}


__getattr__ = lazy_exports(__name__, _LAZY)


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``codex`` integration."""
    from paxm_integration_codex.integration import CodexIntegration

    register(CodexIntegration())
