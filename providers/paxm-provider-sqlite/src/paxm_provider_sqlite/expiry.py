"""When an expired short-term memory may be deleted, given a wall clock that can jump.

Cleanup deletes only up to a *horizon*: a clock reading the clock has kept running forward from
for :data:`CONFIRM` (a *candidate* until then); a clock seen going back drops the readings ahead
of it.  So a clock that jumps forward and is set back within :data:`CONFIRM` deletes nothing
valid by the corrected clock (``docs/sqlite-provider.md``, Writes).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = ["CONFIRM", "advance_horizon", "start_clock"]

#: how long the clock must keep running forward from a reading before cleanup deletes up to it
CONFIRM = timedelta(minutes=30)

_HORIZON = "cleanup_horizon"
_CANDIDATE = "cleanup_candidate"


def _read(conn: sqlite3.Connection, key: str) -> datetime | None:
    row = conn.execute("SELECT value FROM _paxm_meta WHERE key = ?", (key,)).fetchone()
    return parse_stamp(row[0]) if row else None


def _store(conn: sqlite3.Connection, horizon: datetime, candidate: datetime) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO _paxm_meta(key, value) VALUES (?, ?)",
        ((_HORIZON, stamp(horizon)), (_CANDIDATE, stamp(candidate))),
    )


def start_clock(conn: sqlite3.Connection, now: datetime) -> None:
    """Record ``now`` as both readings (a new file: nothing in it can have expired before now)."""
    _store(conn, now, now)


def advance_horizon(conn: sqlite3.Connection, now: datetime) -> str:
    """Apply the module's rule for a cleanup at ``now``; return the horizon as stored text.

    Runs inside the caller's write transaction, so concurrent cleanups see each other's readings.
    """
    horizon = _read(conn, _HORIZON)
    candidate = _read(conn, _CANDIDATE)
    if horizon is None or candidate is None:
        horizon, candidate = now - CONFIRM, now
    elif now < candidate or now < horizon:
        horizon, candidate = min(horizon, now), now
    elif now - candidate >= CONFIRM:
        horizon, candidate = candidate, now
    _store(conn, horizon, candidate)
    return stamp(horizon)
