"""Local telemetry: a rolling JSONL event log, compact metrics, history and logs.

Nothing here leaves the machine.  By default no query or memory text is stored: queries are
kept as length + sha256 prefix unless ``telemetry.capture_query_preview`` is true.
"""

from __future__ import annotations

from paxm_core.telemetry.metrics import Counter, Metrics
from paxm_core.telemetry.recorder import Telemetry, TelemetryError
from paxm_core.telemetry.settings import TelemetrySettings

__all__ = ["Counter", "Metrics", "Telemetry", "TelemetryError", "TelemetrySettings"]
