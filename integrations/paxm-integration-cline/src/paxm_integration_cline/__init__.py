"""paxm's Cline integration (agent ``cline``), registered through the ``paxm`` entry point group.

See ``docs/integrations/cline.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_cline.integration import ClineIntegration

__all__ = ["ClineIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``cline`` integration."""
    register(ClineIntegration())
