"""paxm's OpenCode integration (agent ``opencode``) and its Kilo Code variant (agent ``kilo``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/opencode.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core.api.hookspecs import hookimpl, lazy_exports

if TYPE_CHECKING:
    from paxm_integration_opencode.integration import KiloIntegration, OpenCodeIntegration

__all__ = ["KiloIntegration", "OpenCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

#: public name -> the submodule defining it, imported on first use: every paxm process that
#: loads plugins imports this module, and only the ones using the integration need its code
_LAZY = {"KiloIntegration": "integration", "OpenCodeIntegration": "integration"}


__getattr__ = lazy_exports(__name__, _LAZY)


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``opencode`` and ``kilo`` integrations."""
    from paxm_integration_opencode.integration import KiloIntegration, OpenCodeIntegration

    register(OpenCodeIntegration())
    register(KiloIntegration())
