"""Per-session hook state: first-input detection, local-time refresh and the session ledger.

Stored at ``<configdir>/hooks/session_state.json`` (0600) in upstream's v2 format plus a
``ledgers`` key upstream ignores.  Entries older than 7 days are pruned and at most 1000 kept; a
corrupt file counts as empty.  Writes are atomic renames, so concurrent writers may lose an
update but never corrupt the file (a lost ledger update only re-injects a memory).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from paxm_core.api.events import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT, HookEvent
from paxm_core.api.json import JSONObject
from paxm_core.atomic import write_atomic

__all__ = ["LOCAL_TIME_REFRESH", "SessionState", "ledger_strings", "session_hash", "session_key"]

VERSION = 2
MAX_ENTRIES = 1000
TTL = timedelta(days=7)
LOCAL_TIME_REFRESH = timedelta(hours=12)
#: ledgers kept (the most recently changed), and for how long: a session resumed later than
#: that gets its memories once more, which is only ever a repeat (the file is rewritten whole)
MAX_LEDGERS = 200
LEDGER_TTL = timedelta(days=3)
_TRACKED = frozenset({EVENT_SESSION_START, EVENT_USER_INPUT, EVENT_TURN_END})


def session_key(event: HookEvent) -> str:
    """``target/session/<id>``, else ``target/transcript/<path>``, else ``target/workspace/<ws>``; or ``""``."""
    target = event.target.strip()
    for kind, value in (
        ("session", event.metadata.get("session_id", "")),
        ("transcript", event.metadata.get("transcript_path", "")),
        ("workspace", event.workspace),
        ("workspace", event.metadata.get("cwd", "")),
    ):
        if value.strip():
            return f"{target}/{kind}/{value.strip()}"
    return ""


@dataclass(slots=True)
class _Data:
    seen: dict[str, datetime] = field(default_factory=dict)
    activity: dict[str, datetime] = field(default_factory=dict)
    pruned: bool = False
    #: session key -> ledger (plain JSON; its ``at`` is the last change, RFC 3339)
    ledgers: dict[str, JSONObject] = field(default_factory=dict)


def ledger_strings(ledger: Mapping[str, object], name: str) -> list[str]:
    """The strings of a ledger's list field ``name`` (memory keys, queries, prompt prints)."""
    value = ledger.get(name)
    return [item for item in value if isinstance(item, str)] if isinstance(value, list | tuple) else []


def _fmt(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _prune(values: dict[str, datetime], cutoff: datetime, limit: int) -> bool:
    """Drop the entries dated before ``cutoff``, then the oldest beyond ``limit``; whether any went."""
    old = [key for key, at in values.items() if at < cutoff]
    for key in old:
        del values[key]
    if len(values) <= limit:
        return bool(old)
    for key in sorted(values, key=values.__getitem__)[: len(values) - limit]:
        del values[key]
    return True


class SessionState:
    """The state file under a process-local lock.

    :param write_behind: ``0`` reads and writes the file on every call; ``> 0`` keeps the state
        in memory and :meth:`flush_due` writes it once a change is that many seconds old (the
        daemon, the file's only writer while it runs); :meth:`close` writes it out.
    """

    def __init__(self, path: Path, *, write_behind: float = 0.0) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._write_behind = write_behind
        self._cached: _Data | None = None
        #: monotonic time of the oldest change not yet written (``None``: nothing to write)
        self._dirty_at: float | None = None

    def _load(self) -> _Data:
        if self._write_behind > 0:
            if self._cached is None:
                self._cached = self._read()
            return self._cached
        return self._read()

    def _save(self, data: _Data, *, now: bool = False) -> None:
        if self._write_behind <= 0:
            self._write(data)
            return
        self._cached = data
        if now:
            # a ledger emptied at a compaction: losing it would withhold memories the model lost
            self._write(data)
            self._dirty_at = None
        elif self._dirty_at is None:
            self._dirty_at = time.monotonic()

    def flush_due(self) -> None:
        """Write the in-memory state if a change has waited ``write_behind`` seconds (never on a prompt's way)."""
        dirty_at = self._dirty_at
        if dirty_at is not None and time.monotonic() - dirty_at >= self._write_behind:
            self.flush()

    def flush(self) -> None:
        """Write a pending in-memory state to disk now."""
        with self._lock:
            self._dirty_at = None
            if self._cached is not None:
                try:
                    self._write(self._cached)
                except OSError:
                    pass  # best effort: the state only tunes context blocks

    def close(self) -> None:
        """Write pending state."""
        self.flush()

    def _read(self) -> _Data:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable or corrupt: empty
            return _Data()
        if not isinstance(data, dict):
            return _Data()

        def times(value: object) -> dict[str, datetime]:
            out: dict[str, datetime] = {}
            if isinstance(value, dict):
                for key, raw in value.items():
                    parsed = _parse(raw)
                    if parsed is not None:
                        out[str(key)] = parsed
            return out

        raw_ledgers = data.get("ledgers")
        ledgers = (
            {str(k): v for k, v in raw_ledgers.items() if isinstance(v, dict) and _parse(v.get("at")) is not None}
            if isinstance(raw_ledgers, dict)
            else {}
        )
        return _Data(times(data.get("seen")), times(data.get("activity")), bool(data.get("activity_pruned")), ledgers)

    def _write(self, data: _Data) -> None:
        from paxm_core.private_files import private_dir

        private_dir(self.path.parent)
        body: JSONObject = {"version": VERSION, "seen": {k: _fmt(v) for k, v in data.seen.items()}}
        if data.activity:
            body["activity"] = {k: _fmt(v) for k, v in data.activity.items()}
        if data.pruned:
            body["activity_pruned"] = True
        if data.ledgers:
            body["ledgers"] = data.ledgers
        write_atomic(self.path, json.dumps(body, indent=2, ensure_ascii=False), durable=False)

    # -- the session ledger (paxm_core.passive.economy) -----------------------------------------

    def ledger(self, key: str) -> JSONObject:
        """A copy of the ledger of session ``key`` (``{}`` if none)."""
        with self._lock:
            found = self._load().ledgers.get(key)
            copy: JSONObject = json.loads(json.dumps(found)) if found else {}
            return copy

    def update_ledger(
        self, key: str, change: Callable[[JSONObject], object], now: datetime, *, durable: bool = False
    ) -> JSONObject:
        """Apply ``change`` to the ledger of ``key`` (created empty) and save; returns a copy.

        :param durable: write the file now even with write-behind (see :meth:`_save`).
        """
        with self._lock:
            data = self._load()
            ledger = data.ledgers.setdefault(key, {})
            change(ledger)
            ledger["at"] = _fmt(now)
            times = {k: _parse(v.get("at")) or now for k, v in data.ledgers.items()}
            if _prune(times, now - LEDGER_TTL, MAX_LEDGERS):
                data.ledgers = {k: v for k, v in data.ledgers.items() if k in times}
            self._save(data, now=durable)
            copy: JSONObject = json.loads(json.dumps(ledger))
            return copy

    def mark_initial(self, event: HookEvent, now: datetime) -> bool:
        """Record the key as seen; True if this is the first ``user_input`` of its session."""
        key = session_key(event)
        if not key:
            return False
        with self._lock:
            data = self._load()
            _prune(data.seen, now - TTL, MAX_ENTRIES)
            first = key not in data.seen
            data.seen[key] = now
            self._save(data)
        return first

    def observe(self, event: HookEvent, now: datetime) -> bool:
        """Record activity; True if a ``user_input`` should carry a fresh local-time block (the session was
        idle over 12 hours, or is unknown although others were recorded)."""
        if event.event not in _TRACKED:
            return False
        key = session_key(event)
        if not key:
            return False
        with self._lock:
            data = self._load()
            previous = data.activity.get(key)
            missing_after_shared = previous is None and (data.pruned or bool(data.activity))
            refresh = event.event == EVENT_USER_INPUT and (
                (previous is not None and now - previous > LOCAL_TIME_REFRESH) or missing_after_shared
            )
            data.activity[key] = now
            if _prune(data.activity, now - TTL, MAX_ENTRIES):
                data.pruned = True
            self._save(data)
        return refresh


def session_hash(key: str) -> str:
    """A session key as it appears in telemetry: 16 hex digits (the key holds a workspace path)."""
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:16]
