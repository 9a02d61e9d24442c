"""Per-session hook state: first-input detection and local-time refresh.

Stored at ``<configdir>/hooks/session_state.json`` (upstream's v2 format, so a switch between
implementations keeps state).  It holds keys and timestamps only, never prompt text.  Entries
older than 7 days are pruned and at most 1000 are kept.  A corrupt file counts as empty.
The daemon is the only writer while it runs; the in-process ``paxm __hook`` path writes with
an atomic rename, so concurrent writers can lose an update but never corrupt the file.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from paxm_core.api.events import EVENT_SESSION_START, EVENT_TURN_END, EVENT_USER_INPUT, HookEvent
from paxm_core.atomic import write_atomic

__all__ = ["LOCAL_TIME_REFRESH", "SessionState", "session_key"]

VERSION = 2
MAX_ENTRIES = 1000
TTL = timedelta(days=7)
LOCAL_TIME_REFRESH = timedelta(hours=12)
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


def _fmt(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class SessionState:
    """The state file under a process-local lock.

    :param write_behind: ``0`` reads and writes the file on every call (one-shot processes);
        ``> 0`` keeps the state in memory and writes it at most that many seconds after a change
        (the daemon, the file's only writer while it runs; losing the last second of state to a
        crash only costs a redundant local-time block).  Call :meth:`close` to write it out.
    """

    def __init__(self, path: Path, *, write_behind: float = 0.0) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._write_behind = write_behind
        self._cached: tuple[dict[str, datetime], dict[str, datetime], bool] | None = None
        self._timer: threading.Timer | None = None

    def _load(self) -> tuple[dict[str, datetime], dict[str, datetime], bool]:
        if self._write_behind > 0:
            if self._cached is None:
                self._cached = self._read()
            return self._cached
        return self._read()

    def _save(self, seen: dict[str, datetime], activity: dict[str, datetime], pruned: bool) -> None:
        if self._write_behind <= 0:
            self._write(seen, activity, pruned)
            return
        self._cached = (seen, activity, pruned)
        if self._timer is None:
            self._timer = threading.Timer(self._write_behind, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        """Write a pending in-memory state to disk now."""
        with self._lock:
            self._timer = None
            if self._cached is not None:
                try:
                    self._write(*self._cached)
                except OSError:
                    pass  # best effort: the state only tunes context blocks

    def close(self) -> None:
        """Cancel the timer and write pending state."""
        timer = self._timer
        if timer is not None:
            timer.cancel()
        self.flush()

    def _read(self) -> tuple[dict[str, datetime], dict[str, datetime], bool]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}, {}, False
        except (OSError, ValueError):
            return {}, {}, False
        if not isinstance(data, dict):
            return {}, {}, False

        def times(value: Any) -> dict[str, datetime]:
            out: dict[str, datetime] = {}
            if isinstance(value, dict):
                for key, raw in value.items():
                    parsed = _parse(raw)
                    if parsed is not None:
                        out[str(key)] = parsed
            return out

        return times(data.get("seen")), times(data.get("activity")), bool(data.get("activity_pruned"))

    def _write(self, seen: dict[str, datetime], activity: dict[str, datetime], pruned: bool) -> None:
        from paxm_core.private_files import private_dir

        private_dir(self.path.parent)
        body: dict[str, Any] = {"version": VERSION, "seen": {k: _fmt(v) for k, v in seen.items()}}
        if activity:
            body["activity"] = {k: _fmt(v) for k, v in activity.items()}
        if pruned:
            body["activity_pruned"] = True
        write_atomic(self.path, json.dumps(body, indent=2), durable=False)

    @staticmethod
    def _prune(values: dict[str, datetime], now: datetime) -> bool:
        cutoff = now - TTL
        pruned = False
        for key in [k for k, v in values.items() if v < cutoff]:
            del values[key]
            pruned = True
        if len(values) > MAX_ENTRIES:
            for key, _ in sorted(values.items(), key=lambda kv: kv[1])[: len(values) - MAX_ENTRIES]:
                del values[key]
            pruned = True
        return pruned

    def mark_initial(self, event: HookEvent, now: datetime) -> bool:
        """Record the key as seen; True if this is the first ``user_input`` of its session."""
        key = session_key(event)
        if not key:
            return False
        with self._lock:
            seen, activity, pruned = self._load()
            self._prune(seen, now)
            first = key not in seen
            seen[key] = now
            self._save(seen, activity, pruned)
        return first

    def observe(self, event: HookEvent, now: datetime) -> bool:
        """Record activity; True if a ``user_input`` should carry a fresh local-time block.

        That is when this session was last active more than 12 hours ago, or when the key is
        unknown although other sessions were recorded (the state was pruned or is shared).
        """
        if event.event not in _TRACKED:
            return False
        key = session_key(event)
        if not key:
            return False
        with self._lock:
            seen, activity, pruned = self._load()
            previous = activity.get(key)
            missing_after_shared = previous is None and (pruned or bool(activity))
            refresh = event.event == EVENT_USER_INPUT and (
                (previous is not None and now - previous > LOCAL_TIME_REFRESH) or missing_after_shared
            )
            activity[key] = now
            if self._prune(activity, now):
                pruned = True
            self._save(seen, activity, pruned)
        return refresh
