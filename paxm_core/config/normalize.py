"""Normalization: fill derived defaults, fold legacy keys (upstream ``normalize.go``)."""

from __future__ import annotations

import copy

from paxm_core.config.model import Config

__all__ = ["normalize"]


def normalize(config: Config) -> Config:
    """Return a normalized deep copy of ``config``."""
    return copy.deepcopy(config)
