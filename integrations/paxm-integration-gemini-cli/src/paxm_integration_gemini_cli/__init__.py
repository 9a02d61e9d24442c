"""paxm's Gemini CLI integration (agent ``gemini-cli``), registered through the ``paxm`` entry point group.

See ``docs/integrations/gemini-cli.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_gemini_cli.integration import GeminiCliIntegration

__all__ = ["GeminiCliIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``gemini-cli`` integration."""
    register(GeminiCliIntegration())
