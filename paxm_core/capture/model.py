"""Value types of the capture queue: what goes in, what comes out, what status shows."""

from __future__ import annotations

from dataclasses import asdict, field
from datetime import datetime

from paxm_core.api.json import JSONObject
from paxm_core.api.types import MemoryItem
from paxm_core.api.values import value_dataclass

__all__ = [
    "AppendResult",
    "CaptureEvent",
    "DeadDelivery",
    "DeliveryClaim",
    "DeliveryOutcome",
    "DrainReport",
    "FlushReport",
    "InboxEntry",
    "QueueStatus",
    "session_key_for",
]


def session_key_for(
    target: str,
    *,
    workspace: str = "",
    session_id: str = "",
    transcript_path: str = "",
    event_id: str = "",
) -> str:
    """Upstream's session key: ``<target>/workspace/<ws|unknown>/session/<id>``.

    Falls back to ``/transcript/<path>`` and then ``/event/<event_id>`` (an event with no
    session identity becomes its own episode).
    """
    base = f"{target.strip() or 'unknown'}/workspace/{workspace.strip() or 'unknown'}"
    if session_id.strip():
        return f"{base}/session/{session_id.strip()}"
    if transcript_path.strip():
        return f"{base}/transcript/{transcript_path.strip()}"
    return f"{base}/event/{event_id.strip()}"


@value_dataclass(frozen=True, compiled_init=True)
class CaptureEvent:
    """One rendered hook write waiting to become part of an episode.

    :param event_id: stable id (``evt_<32 hex>``); the idempotency key of :meth:`CaptureQueue.append`.
    :param session_key: groups events into episodes (see :func:`session_key_for`).
    :param item: the rendered memory item (text, metadata, tier, expiry, origin...).
    :param profile: write profile whose providers receive it.
    :param terminal: ``turn_end``: seals this session's open events in the same transaction.
    :param source_sequence: the harness's own per-turn sequence, if it sends one.
    :param final_sequence: the last source sequence of the turn, if known.
    :param captured_at: when the hook saw it (default: append time).
    :param truncated_bytes: bytes cut from an oversized text (:mod:`~paxm_core.capture.truncate`);
        the queue counts such events for ``paxm queue status``.
    """

    event_id: str
    session_key: str
    item: MemoryItem
    profile: str = "default"
    terminal: bool = False
    source_sequence: int | None = None
    final_sequence: int | None = None
    captured_at: datetime | None = None
    truncated_bytes: int = 0


@value_dataclass(frozen=True)
class AppendResult:
    """Returned by ``append`` after COMMIT: the event is durable and may be acknowledged."""

    event_id: str
    sequence: int
    duplicate: bool = False
    sealed_episode: str = ""


@value_dataclass(frozen=True)
class InboxEntry:
    """A raw hook payload stored by the stdlib hook client while the daemon was down."""

    event_id: str
    target: str
    event: str
    raw: bytes
    received_at: datetime
    attempts: int = 0


@value_dataclass(frozen=True)
class DrainReport:
    """What ``drain_inbox`` did: entries turned into events, and entries kept because they failed."""

    processed: int = 0
    events: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)


@value_dataclass(frozen=True)
class DeliveryClaim:
    """One delivery leased to a worker: deliver ``items`` to ``provider``, then report back."""

    episode_id: str
    provider: str
    session_key: str
    attempt: int
    profiles: tuple[str, ...]
    items: list[MemoryItem]
    capture_times: list[float]
    lease: str
    #: the delivery row's SQLite rowid, so recording the outcome needs no primary-key lookup
    row: int


@value_dataclass(frozen=True)
class DeliveryOutcome:
    """The recorded result of one delivery attempt (also what telemetry reports)."""

    episode_id: str
    provider: str
    session_key: str
    attempt: int
    state: str
    ref: str = ""
    error: str = ""
    duration: float = 0.0
    passive_latency_total: float = 0.0
    passive_samples: int = 0


@value_dataclass(frozen=True)
class DeadDelivery:
    """A delivery that gave up (attempts exhausted or integrity failure)."""

    episode_id: str
    provider: str
    session_key: str
    attempts: int
    last_error: str
    last_attempt_at: str


@value_dataclass(frozen=True)
class QueueStatus:
    """Counts by state plus what an operator needs to act on."""

    path: str
    open_events: int
    episodes: dict[str, int]
    deliveries: dict[str, int]
    inbox: dict[str, int]
    oldest_pending_age: float | None
    dead: list[DeadDelivery]
    dead_episodes: list[tuple[str, str]]
    failed_inbox: list[tuple[str, str]]
    providers: dict[str, dict[str, int]] = field(default_factory=dict)
    #: events kept in the spool while the queue file was locked, not yet imported
    spooled: int = 0
    #: events stored cut to ``limits.max_text_bytes`` (ever), and when the last one was
    truncated: int = 0
    last_truncated_at: str = ""

    @property
    def undelivered(self) -> int:
        """Deliveries still owed (pending, retry, delivering) plus work not yet sealed or drained."""
        owed = sum(self.deliveries.get(s, 0) for s in ("pending", "retry", "delivering"))
        return owed + self.open_events + self.inbox.get("pending", 0) + self.spooled

    def to_json(self) -> JSONObject:
        return {
            "path": self.path,
            "open_events": self.open_events,
            "episodes": dict(self.episodes),
            "deliveries": dict(self.deliveries),
            "providers": {name: dict(counts) for name, counts in self.providers.items()},
            "inbox": dict(self.inbox),
            "spooled": self.spooled,
            "truncated": {"events": self.truncated, "last_at": self.last_truncated_at or None},
            "oldest_pending_age_seconds": self.oldest_pending_age,
            "dead_deliveries": [asdict(d) for d in self.dead],
            "dead_episodes": [{"episode_id": e, "error": err} for e, err in self.dead_episodes],
            "failed_inbox": [{"event_id": e, "error": err} for e, err in self.failed_inbox],
        }


@value_dataclass(frozen=True)
class FlushReport:
    """Result of ``DeliveryWorker.flush``: ``ok`` only if nothing is left undelivered."""

    sealed: int
    delivered: int
    failed: int
    dead: int
    remaining: int
    timed_out: bool
    dead_total: int = 0
    #: open events of live turns that this flush left whole (not owed: their turn is not over)
    live: int = 0

    @property
    def ok(self) -> bool:
        return self.remaining == 0 and self.dead_total == 0 and not self.timed_out

    def to_json(self) -> JSONObject:
        return {"ok": self.ok, **asdict(self)}
