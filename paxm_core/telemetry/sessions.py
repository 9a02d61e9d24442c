"""Per-session signal counts for ``paxm impact``: ``<telemetry dir>/sessions.sqlite`` (docs/impact.md).

Sessions are keyed by a hash of the session key and no text is kept; the file is 0600 in a 0700
directory, and sessions older than the telemetry retention are pruned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.api.timefmt import format_time, parse_time, utcnow

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SESSIONS_FILE", "SIGNALS", "SessionRow", "SessionStats"]

SESSIONS_FILE = "sessions.sqlite"
#: the counted signals, in the order ``paxm impact`` shows them
SIGNALS = ("turns", "tool_calls", "tool_failures", "corrections", "repeats")
_COLUMNS = (*SIGNALS, "injected")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY,
    target TEXT NOT NULL DEFAULT '',
    arm TEXT NOT NULL DEFAULT '',
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    {", ".join(f"{c} INTEGER NOT NULL DEFAULT 0" for c in _COLUMNS)}
)
"""


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session's sums."""

    session: str
    target: str
    arm: str
    first_seen: datetime
    last_seen: datetime
    turns: int = 0
    tool_calls: int = 0
    tool_failures: int = 0
    corrections: int = 0
    repeats: int = 0
    injected: int = 0

    def signal(self, name: str) -> int:
        """The count of signal ``name`` (one of :data:`SIGNALS`)."""
        return int(getattr(self, name))


def _count(signal: Mapping[str, object], name: str) -> int:
    value = signal.get(name)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


class SessionStats:
    """The session table: :meth:`add_many` from the recorder, :meth:`rows` for ``paxm impact``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / SESSIONS_FILE
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None  # kept open by a long-lived writer (the daemon's telemetry)

    def _connect(self) -> sqlite3.Connection:
        from paxm_core.private_files import connect_private, private_dir
        from paxm_core.sqlite_locks import retry_locked

        private_dir(self.path.parent)
        conn: sqlite3.Connection = connect_private(
            self.path, what="telemetry sessions file", timeout=5.0, isolation_level=None, check_same_thread=False
        )
        try:
            retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
            conn.execute("PRAGMA synchronous = NORMAL")  # counts: a power cut may lose the last ones
            retry_locked(lambda: conn.execute(_SCHEMA))
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def add_many(self, signals: Iterable[Mapping[str, object]], retention_days: int = 0) -> None:
        """Add ``session_signal`` events to their sessions' sums (one transaction)."""
        batch = [s for s in signals if str(s.get("session") or "")]
        if not batch:
            return
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
            try:
                self._add(self._conn, batch, retention_days)
            except BaseException:
                self._conn.close()  # a broken connection is not reused
                self._conn = None
                raise

    @staticmethod
    def _add(conn: sqlite3.Connection, batch: list[Mapping[str, object]], retention_days: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for signal in batch:
                when = str(signal.get("time") or "") or format_time(utcnow())
                counts = [_count(signal, c) for c in _COLUMNS]
                conn.execute(
                    "INSERT INTO sessions (session, target, arm, first_seen, last_seen, "
                    + ", ".join(_COLUMNS)
                    + ") VALUES (?, ?, ?, ?, ?, "
                    + ", ".join("?" for _ in _COLUMNS)
                    + ") ON CONFLICT(session) DO UPDATE SET "
                    + "arm = CASE WHEN excluded.arm != '' THEN excluded.arm ELSE sessions.arm END, "
                    + "last_seen = excluded.last_seen, "
                    + ", ".join(f"{c} = sessions.{c} + excluded.{c}" for c in _COLUMNS),
                    (
                        str(signal["session"]),
                        str(signal.get("target") or ""),
                        str(signal.get("arm") or ""),
                        when,
                        when,
                        *counts,
                    ),
                )
            if retention_days > 0:
                cutoff = format_time(utcnow() - timedelta(days=retention_days))
                conn.execute("DELETE FROM sessions WHERE last_seen < ?", (cutoff,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def rows(self, since: datetime | None = None) -> list[SessionRow]:
        """Every session last seen at or after ``since`` (all when ``None``); ``[]`` without a file."""
        if not self.path.exists():
            return []
        conn = self._connect()
        try:
            found = conn.execute(
                "SELECT session, target, arm, first_seen, last_seen, " + ", ".join(_COLUMNS) + " FROM sessions"
            ).fetchall()
        finally:
            conn.close()
        out: list[SessionRow] = []
        for session, target, arm, first, last, *counts in found:
            try:
                first_at, last_at = parse_time(first), parse_time(last)
            except ValueError:  # not written by paxm: skipped
                continue
            if first_at is None or last_at is None or (since is not None and last_at < since):
                continue
            out.append(SessionRow(session, target, arm, first_at, last_at, *(int(c) for c in counts)))
        return out
