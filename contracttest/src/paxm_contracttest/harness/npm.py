"""Pinned npm packages installed once into a shared cache (``~/.cache/paxm-tests/npm``).

Each package goes into ``<cache>/<name>``: built in a staging directory and renamed into place
under an flock, so parallel test processes install it once and never see a half-built tree.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["npm_cache_dir", "npm_install_cached", "require_npm"]

from paxm_contracttest.harness import npm_cache_dir  # one cache location for every installer


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
    """``<cache>/<name>`` with ``npm install <specs>`` done in it; ``probe`` (relative) must exist after."""
    cache = cache or npm_cache_dir()
    dest = cache / name
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (dest / probe).exists():
            return dest
        staging = cache / f".{name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        (staging / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", *specs],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0 or not (staging / probe).exists():
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"npm install {' '.join(specs)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    return dest
