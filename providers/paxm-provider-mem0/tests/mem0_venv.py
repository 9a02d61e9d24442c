"""The pinned Mem0 engine in its own cached virtual environment, created on first use.

``mem0ai`` pulls qdrant-client, openai, sqlalchemy and posthog, which must not leak into the
workspace venv, so the REST shim runs as a subprocess from a venv under
``~/.cache/paxm-tests/venvs/mem0-<version>``.  It is built in a staging directory and renamed
into place under an ``flock``, so parallel test processes install it once and a half-built
venv is never used.  The cache root is read from the real home at import time, before test
fixtures point ``HOME`` at a temp dir.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MEM0_VERSION = "2.2.1"
CACHE_ROOT = Path(os.environ.get("PAXM_TESTS_CACHE") or Path.home() / ".cache" / "paxm-tests")
VENV = CACHE_ROOT / "venvs" / f"mem0-{MEM0_VERSION}"
READY_MARKER = ".paxm-ready"


def _uv() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else None


def _ready(venv: Path) -> bool:
    return (venv / READY_MARKER).exists() and (venv / "bin" / "python").exists()


def mem0_python() -> Path:
    """The interpreter of the cached mem0 venv, installing it when missing.

    Fails in CI when it cannot be provisioned; elsewhere skips with the reason.
    """
    if _ready(VENV):
        return VENV / "bin" / "python"
    uv = _uv()
    if uv is None:
        _unavailable("uv is not installed, so the mem0 venv cannot be created")
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / f".mem0-{MEM0_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test processes install once
        if _ready(VENV):
            return VENV / "bin" / "python"
        staging = VENV.parent / f".mem0-{MEM0_VERSION}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            subprocess.run(
                [uv, "venv", "-q", "--python", f"{sys.version_info.major}.{sys.version_info.minor}", str(staging)],
                check=True,
                capture_output=True,
                text=True,
                timeout=300,
            )
            subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(staging / "bin" / "python"), f"mem0ai=={MEM0_VERSION}"],
                check=True,
                capture_output=True,
                text=True,
                timeout=900,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(staging, ignore_errors=True)
            stderr = getattr(exc, "stderr", "") or ""
            _unavailable(f"installing mem0ai=={MEM0_VERSION} failed: {str(stderr)[-800:]}")
        (staging / READY_MARKER).write_text(MEM0_VERSION + "\n")
        shutil.rmtree(VENV, ignore_errors=True)
        # venvs are relocatable enough for `bin/python -m`: uv writes pyvenv.cfg with the
        # base interpreter, and nothing we run uses the staging path baked into scripts
        staging.rename(VENV)
    return VENV / "bin" / "python"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the real Mem0 engine is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


if __name__ == "__main__":  # warm the cache by hand: python tests/mem0_venv.py
    print(mem0_python())
