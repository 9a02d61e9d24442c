"""``paxm dashboard``: a loopback-only web page over telemetry, the capture queue and memory.

Imported only by the ``paxm dashboard`` command: it pulls in Starlette and uvicorn, which the
hook path and ``import paxm_core`` must never pay for.  See ``docs/dashboard.md``.
"""

from __future__ import annotations

__all__: list[str] = []
