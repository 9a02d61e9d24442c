"""``Telemetry``: the one object the rest of paxm records through."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from paxm_core.api.errors import PaxmError
from paxm_core.api.json import JSONObject
from paxm_core.telemetry.events import (
    count_by,
    normalize_event,
    provider_error_details,
    query_fields,
    recall_hit_details,
    telemetry_error,
)
from paxm_core.telemetry.settings import TelemetrySettings
from paxm_core.telemetry.store import TelemetryStore

if TYPE_CHECKING:
    from paxm_core.telemetry.history import HistorySummary
    from paxm_core.telemetry.sessions import SessionStats

__all__ = ["Telemetry", "TelemetryError"]


class TelemetryError(PaxmError):
    """Reading telemetry failed (``paxm history``/``logs``); recording never raises it."""


class Telemetry:
    """Records operations to the local event log and metrics, and reads them back.

    Every ``on_*``/``record`` call is best effort: a failure prints ``paxm telemetry skipped:
    <reason>`` to stderr, so telemetry never fails the operation it describes.  ``config``'s
    ``telemetry`` section picks the files and limits; its profiles name each operation's providers.
    """

    def __init__(self, config: object = None, *, settings: TelemetrySettings | None = None) -> None:
        self.config = config
        self.settings = settings if settings is not None else TelemetrySettings.from_config(config)
        self.store = TelemetryStore(self.settings)
        self._sessions: SessionStats | None = None  # the session table (paxm impact), opened on its first signal

    # -- recording ---------------------------------------------------------------------------

    def on_recall(self, **fields: Any) -> None:
        """Record one recall: the event :meth:`recall_event` builds from the same keywords."""
        try:
            self._record_many([self.recall_event(**fields)])
        except Exception as exc:  # best effort by contract
            _skipped(exc)

    def recall_event(
        self,
        *,
        query: str,
        profile: str,
        source: str,
        command: str,
        result: object,
        error: object = "",
        duration_ms: float,
        kind: str = "recall",
        target: str = "",
        hook_event: str = "",
        session_key: str = "",
        skipped: bool = False,
    ) -> dict[str, object]:
        """The event of one recall (``result``: the RecallResult, ``None`` when there is none); may raise."""
        event = _operation(kind, source, command, profile, error, duration_ms, result)
        profile = str(event["profile"])
        hits = list(getattr(result, "hits", None) or [])
        event |= {
            "target": target,
            "hook_event": hook_event,
            "skipped": skipped,
            "hit_count": len(hits),
            "inserted_count": len(hits) if kind == "hook_recall" else 0,
            "provider_recalls": {} if skipped else self._routes("recall_profiles", profile),
            "provider_hits": count_by(hits, "provider"),
            "provider_recall_details": list(getattr(result, "provider_recalls", None) or []),
            "recall_hits": recall_hit_details(hits, capture_preview=self.settings.capture_query_preview),
            "recall_timed_out": bool(getattr(result, "timed_out", False)),
            "session_key": session_key,
        }
        query_text = str(getattr(result, "query", "") or "").strip() or query
        event.update(self.query_fields(query_text))
        return event

    def on_remember(
        self,
        *,
        profile: str,
        source: str,
        command: str,
        result: object,
        error: object = "",
        duration_ms: float,
        item_count: int = 1,
        kind: str = "remember",
    ) -> None:
        """Record one write (``result`` is the RememberResult, ``None`` when none was produced)."""
        try:
            event = _operation(kind, source, command, profile, error, duration_ms, result)
            refs = list(getattr(result, "refs", None) or [])
            event |= {
                "item_count": item_count,
                "ref_count": len(refs),
                "provider_writes": self._routes("write_profiles", str(event["profile"])),
                "provider_refs": count_by(refs, "provider"),
            }
            self._record_many([event])
        except Exception as exc:
            _skipped(exc)

    def record(self, event: Mapping[str, object]) -> None:
        """Record a prepared event (upstream's field names, docs/telemetry.md).

        A raw ``query`` key becomes ``query_hash``/``query_length`` (a preview only on opt-in).
        """
        self.record_many([event])

    def record_many(self, events: Iterable[Mapping[str, object]]) -> None:
        """Record events in order under one lock and one metrics rewrite (a drained backlog has hundreds)."""
        try:
            self._record_many(list(events))
        except Exception as exc:
            _skipped(exc)

    def query_fields(self, query: str) -> dict[str, str | int]:
        """``query_hash``/``query_length`` (and ``query_preview`` on opt-in) for ``query``."""
        return query_fields(
            query, capture_preview=self.settings.capture_query_preview, preview_chars=self.settings.query_preview_chars
        )

    def _record_many(self, events: list[Mapping[str, object]]) -> None:
        if not self.settings.enabled or not events:
            return
        # per-session signal counts live in their own table (``paxm impact``), not in the log
        signals = [e for e in events if e.get("kind") in _SESSION_KINDS]
        if signals:
            if self._sessions is None:
                from paxm_core.telemetry.sessions import SessionStats

                self._sessions = SessionStats(self.settings.dir)
            self._sessions.add_many(signals, self.settings.retention_days)
            events = [e for e in events if e.get("kind") != "session_signal"]
            if not events:
                return
        clean = [
            normalize_event(
                event,
                capture_preview=self.settings.capture_query_preview,
                preview_chars=self.settings.query_preview_chars,
            )
            for event in events
        ]
        # receipts and holdback arms are log lines, not operations: they leave the counters of
        # ``paxm history`` alone (and a batch of only them rewrites no metrics file)
        counted = [e for e in clean if e["kind"] not in _LOG_ONLY_KINDS]
        with self.store.locked():
            self.store.append_many(clean)
            if counted:
                metrics = self.store.load_metrics(repair=True)
                metrics.update_many(counted, self.settings.retention_days)
                self.store.save_metrics(metrics)

    def _routes(self, section: str, profile: str) -> dict[str, int]:
        profiles = getattr(self.config, section, None) or {}
        chosen = profiles.get(profile) if isinstance(profiles, Mapping) else None
        return count_by(getattr(chosen, "providers", None) or [], "name")

    # -- reading -----------------------------------------------------------------------------

    def history(self, days: int = 7) -> HistorySummary:
        """Summary of the last ``days`` days (``<= 0`` means the whole retention window)."""
        # here: every recall records an event, only ``paxm history`` and the dashboard summarise
        from paxm_core.telemetry.history import HistorySummary, summarize

        if days <= 0:
            days = self.settings.retention_days
        storage = self.store.storage_info()
        if not self.settings.enabled:
            return HistorySummary(days=days, storage=storage)
        try:
            metrics = self.store.load_metrics()
        except (OSError, ValueError) as exc:
            raise TelemetryError(f"cannot read telemetry: {exc}") from exc
        return summarize(metrics, days, storage)

    def tail(self, limit: int = 50) -> list[JSONObject]:
        """The last ``limit`` events, oldest first."""
        try:
            return self.store.tail(limit)
        except OSError as exc:
            raise TelemetryError(f"cannot read telemetry events: {exc}") from exc

    def follow(
        self,
        tail: int,
        emit: Callable[[JSONObject], None],
        *,
        poll_interval: float = 0.25,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Emit the last ``tail`` events, then new ones until ``should_stop()``; follows rotation."""
        self.store.follow(tail, emit, poll_interval=poll_interval, should_stop=should_stop)


#: events that update the session table: signals (only there) and holdback arms (also logged)
_SESSION_KINDS = ("session_signal", "session_arm")
#: events written to the log only (see docs/impact.md)
_LOG_ONLY_KINDS = ("injection", "session_arm")


def _operation(
    kind: str, source: str, command: str, profile: str, error: object, duration_ms: float, result: object
) -> dict[str, object]:
    """The fields of every recall and write event (field order is ``normalize_event``'s)."""
    return {
        "kind": kind,
        "source": source,
        "command": command or ("hook" if source == "hook" else kind),
        "profile": (profile or "").strip() or "default",
        "success": not error,
        "duration_ms": duration_ms,
        "provider_errors": provider_error_details(getattr(result, "provider_errors", None) or []),
        "error": telemetry_error(error) if error else "",
    }


def _skipped(exc: BaseException) -> None:
    try:
        print(f"paxm telemetry skipped: {exc}", file=sys.stderr)
    except Exception:  # stderr closed: nothing left to tell
        pass
