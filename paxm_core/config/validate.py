"""Config validation: every problem names the key path and the fix."""

from __future__ import annotations

from paxm_core.config.model import Config

__all__ = ["validate"]


def validate(config: Config) -> None:
    """Raise :class:`~paxm_core.errors.ConfigError` for the first problem found in ``config``."""
