"""paxm's Kimi Code integration (agent ``kimi-code``, alias ``kimi``), registered via the ``paxm`` entry points.

See ``docs/integrations/kimi-code.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from paxm_core.api.hookspecs import hookimpl, lazy_exports

if TYPE_CHECKING:
    from paxm_integration_kimi_code.integration import KimiCodeIntegration

__all__ = ["KimiCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"

#: public name -> the submodule defining it, imported on first use: every paxm process that
#: loads plugins imports this module, and only the ones using the integration need its code
_LAZY = {"KimiCodeIntegration": "integration"}


__getattr__ = lazy_exports(__name__, _LAZY)


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``kimi-code`` integration."""
    from paxm_integration_kimi_code.integration import KimiCodeIntegration

    register(KimiCodeIntegration())
