"""paxm's Pi coding agent integration (agent ``pi``).

Registered through the ``paxm`` entry point group.  See ``docs/integrations/pi.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_pi.integration import PiIntegration

__all__ = ["PiIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``pi`` integration."""
    register(PiIntegration())
