"""paxm's config-file integrations for IDEs: Cursor, TRAE, TRAE CN, Kiro and ZCode.

Each writes upstream's hook and MCP registrations into the IDE's own files, takes exactly them
out again, and renders paxm's hook output the way the IDE reads it.  Registered through the
``paxm`` entry point group.  See ``docs/integrations/ide.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core.api.hookspecs import hookimpl, lazy_exports

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

#: public name -> the submodule defining it, imported on first use: every paxm process that
#: loads plugins imports this module, and only the ones using the integration need its code
_LAZY = {
    "CursorIntegration": "cursor",
    "KiroIntegration": "kiro",
    "TraeCNIntegration": "trae",
    "TraeIntegration": "trae",
    "ZCodeIntegration": "zcode",
}


__getattr__ = lazy_exports(__name__, _LAZY)


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register ``cursor``, ``trae``, ``trae-cn``, ``kiro`` and ``zcode``."""
    from paxm_integration_ide.cursor import CursorIntegration
    from paxm_integration_ide.kiro import KiroIntegration
    from paxm_integration_ide.trae import TraeCNIntegration, TraeIntegration
    from paxm_integration_ide.zcode import ZCodeIntegration

    for integration in (
        CursorIntegration(),
        TraeIntegration(),
        TraeCNIntegration(),
        KiroIntegration(),
        ZCodeIntegration(),
    ):
        register(integration)
