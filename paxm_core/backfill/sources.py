"""Which registered integrations can read their harness's stored transcripts, and a scan of them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.errors import UsageError
from paxm_core.api.integration import PastTurn, SupportsTranscripts

if TYPE_CHECKING:
    from paxm_core.plugins import PaxmPluginManager

__all__ = ["ScanReport", "in_range", "scan", "transcript_reader", "turns_in"]


def transcript_reader(plugin_manager: PaxmPluginManager, agent: str) -> tuple[str, SupportsTranscripts]:
    """``(canonical name, integration)`` for ``agent``; a clear error when it cannot be backfilled."""
    integration = plugin_manager.integration(agent)
    if integration is None:
        known = ", ".join(sorted(plugin_manager.integrations())) or "none"
        raise UsageError(f"no integration installed for {agent!r} (installed: {known})")
    name = str(getattr(integration, "name", agent))
    if not isinstance(integration, SupportsTranscripts):
        raise UsageError(f"no transcript reader installed for {name}: its integration cannot read past sessions")
    return name, integration


def in_range(turn: PastTurn, after: float | None, before: float | None) -> bool:
    """Whether ``turn`` started inside ``[after, before)`` (an unknown start time is kept)."""
    if not turn.started_at:
        return True
    if after is not None and turn.started_at < after:
        return False
    return before is None or turn.started_at < before


def turns_in(reader: SupportsTranscripts, path: Path) -> Iterator[PastTurn]:
    """``reader.read_turns(path)``, never raising for one bad file (it yields nothing more)."""
    try:
        yield from reader.read_turns(path)
    except (OSError, ValueError, UnicodeError):
        return


@dataclass
class ScanReport:
    """What ``paxm backfill scan`` found for one agent."""

    agent: str
    files: int = 0
    bytes: int = 0
    turns: int = 0
    sessions: int = 0
    first_turn_at: float | None = None
    last_turn_at: float | None = None


def scan(agent: str, reader: SupportsTranscripts, after: float | None, before: float | None) -> ScanReport:
    """Count the files, bytes and in-range turns of ``reader``'s stored sessions."""
    report = ScanReport(agent)
    sessions: set[str] = set()
    for path in reader.transcript_files():
        try:
            size = path.stat().st_size
        except OSError:
            continue
        found = 0
        for turn in turns_in(reader, path):
            if not in_range(turn, after, before):
                continue
            found += 1
            sessions.add(turn.session_id)
            if turn.started_at:
                report.first_turn_at = min(report.first_turn_at or turn.started_at, turn.started_at)
                report.last_turn_at = max(report.last_turn_at or turn.started_at, turn.started_at)
        if found:
            report.files += 1
            report.bytes += size
            report.turns += found
    report.sessions = len(sessions)
    return report
