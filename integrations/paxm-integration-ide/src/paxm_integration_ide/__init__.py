"""paxm's config-file integrations for IDEs: Cursor, TRAE, TRAE CN, Kiro and ZCode.

Each writes upstream's hook and MCP registrations into the IDE's own files, takes exactly them
out again, and renders paxm's hook output the way the IDE reads it.  Registered through the
``paxm`` entry point group.  See ``docs/integrations/ide.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from paxm_core.api.hookspecs import integration_exports

if TYPE_CHECKING:
    from paxm_integration_ide.cursor import CursorIntegration
    from paxm_integration_ide.kiro import KiroIntegration
    from paxm_integration_ide.trae import TraeCNIntegration, TraeIntegration
    from paxm_integration_ide.zcode import ZCodeIntegration

__all__ = [
    "CursorIntegration",
    "KiroIntegration",
    "TraeCNIntegration",
    "TraeIntegration",
    "ZCodeIntegration",
    "__version__",
    "paxm_register_integrations",
]

__version__ = "0.1.0"

__getattr__, paxm_register_integrations = integration_exports(
    __name__,
    {
        "CursorIntegration": "cursor",
        "TraeIntegration": "trae",
        "TraeCNIntegration": "trae",
        "KiroIntegration": "kiro",
        "ZCodeIntegration": "zcode",
    },
)
