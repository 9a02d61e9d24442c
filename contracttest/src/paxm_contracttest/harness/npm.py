"""Pinned npm packages installed once into a shared cache (``~/.cache/paxm-tests/npm``).

Each package goes into ``<cache>/<name>`` through the kit's one installer,
:func:`paxm_contracttest.harness.npm_install_into` (staging directory, rename, flock).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["npm_cache_dir", "npm_install_cached", "require_npm"]

from paxm_contracttest.harness import npm_cache_dir, npm_install_into  # one cache, one installer


def require_npm(skip: Callable[[str], Any], what: str = "the real-harness end-to-end tests") -> str:
    """``npm``'s path; without it fail under CI (the harness tests must run there), else skip."""
    npm = shutil.which("npm")
    if npm is None:
        message = f"npm is not installed: {what} need Node and npm"
        if os.environ.get("CI"):
            raise RuntimeError(message)
        skip(message)
    assert npm is not None
    return npm


def npm_install_cached(npm: str, name: str, specs: list[str], probe: str, *, cache: Path | None = None) -> Path:
    """``<cache>/<name>`` with ``npm install <specs>`` done in it; ``probe`` (relative) must exist after.

    Kept for the integrations that call it; it is :func:`paxm_contracttest.harness.npm_install_into`.
    """
    return npm_install_into(name, specs, probe, npm=npm, cache=cache)
