"""paxm's Kimi Code integration (agent ``kimi-code``, alias ``kimi``), registered via the ``paxm`` entry points.

See ``docs/integrations/kimi-code.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_kimi_code.integration import KimiCodeIntegration

__all__ = ["KimiCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``kimi-code`` integration."""
    register(KimiCodeIntegration())
