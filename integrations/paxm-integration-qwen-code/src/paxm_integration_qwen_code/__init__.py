"""paxm's Qwen Code integration (agent ``qwen``), registered through the ``paxm`` entry point group.

See ``docs/integrations/qwen-code.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from paxm_core.hookspecs import hookimpl
from paxm_integration_qwen_code.integration import QwenCodeIntegration

__all__ = ["QwenCodeIntegration", "__version__", "paxm_register_integrations"]

__version__ = "0.1.0"


@hookimpl
def paxm_register_integrations(register: Callable[[Any], None]) -> None:
    """Register the ``qwen`` integration."""
    register(QwenCodeIntegration())
