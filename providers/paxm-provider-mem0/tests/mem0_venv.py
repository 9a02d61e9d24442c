"""The pinned Mem0 engine in its own cached virtual environment, created on first use.

``mem0ai`` pulls qdrant-client, openai, sqlalchemy and posthog, which must not leak into the
workspace venv, so the REST shim runs as a subprocess from a venv built by the shared
:func:`paxm_contracttest.servers.provision_venv` (cached, flock-guarded, renamed into place).
"""

from __future__ import annotations

from pathlib import Path

from paxm_contracttest.servers import missing, provision_venv, venv_python

MEM0_VERSION = "2.2.1"
REQUIREMENTS = (f"mem0ai=={MEM0_VERSION}",)


def mem0_python() -> Path:
    """The interpreter of the cached mem0 venv, installing it when missing.

    Fails in CI when it cannot be provisioned; elsewhere skips with the reason.
    """
    try:
        return venv_python(provision_venv("mem0", MEM0_VERSION, REQUIREMENTS))
    except RuntimeError as exc:
        missing(f"the real Mem0 engine could not be installed: {exc}")
        raise


if __name__ == "__main__":  # CI warm-up: build the venv ahead of the tests
    print(mem0_python())
