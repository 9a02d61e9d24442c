"""paxm's IDE integrations: Cursor, ZCode, Kimi Code and Cline (decode and hook output only).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/ide.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core import hookimpl
from paxm_integration_ide.integrations import (
    ClineIntegration,
    CursorIntegration,
    KimiIntegration,
    ZCodeIntegration,
)

__all__ = [
    "ClineIntegration",
    "CursorIntegration",
    "KimiIntegration",
    "ZCodeIntegration",
    "__version__",
    "paxm_register_integrations",
]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register ``cursor``, ``zcode``, ``kimi`` and ``cline``."""
    for integration in (CursorIntegration(), ZCodeIntegration(), KimiIntegration(), ClineIntegration()):
        register(integration)
