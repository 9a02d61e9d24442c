"""Local telemetry: a rolling JSONL event log, compact metrics, history and logs.

Nothing here leaves the machine.  By default no query or memory text is stored: queries are
kept as length + sha256 prefix unless ``telemetry.capture_query_preview`` is true.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paxm_core.telemetry.metrics import Counter, Metrics
from paxm_core.telemetry.recorder import Telemetry, TelemetryError
from paxm_core.telemetry.settings import TelemetrySettings

if TYPE_CHECKING:
    from paxm_core.telemetry.history import HistorySummary

__all__ = ["Counter", "HistorySummary", "Metrics", "Telemetry", "TelemetryError", "TelemetrySettings"]


def __getattr__(name: str) -> Any:
    # every recall imports this package to record one event; summaries are for paxm history
    if name == "HistorySummary":
        from paxm_core.telemetry.history import HistorySummary

        return HistorySummary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
