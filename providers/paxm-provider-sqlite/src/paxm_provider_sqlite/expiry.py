"""When an expired short-term memory may be deleted, given a wall clock that can jump.

Recall hides a memory once the clock passes its ``expires_at``; deleting it is permanent, so
cleanup trusts a clock reading only after the clock has kept running forward from it for
:data:`CONFIRM`.  The rule:

* Two readings are kept in ``_paxm_meta``: the *horizon* (up to which expired memories may be
  deleted) and the *candidate* (the clock at an earlier cleanup, waiting to become the horizon).
* At each cleanup, with the clock reading ``now``:

  - ``now`` is before the candidate or the horizon: the clock went back, so the readings taken
    ahead of it are dropped (horizon = ``min(horizon, now)``, candidate = ``now``);
  - ``now`` is at least :data:`CONFIRM` past the candidate: the candidate becomes the horizon
    and ``now`` the new candidate;
  - otherwise nothing moves.

  Then memories with ``expires_at <= horizon`` are deleted.
* Both readings start at the clock when the file is created (or upgraded to this rule); a
  file whose readings are missing starts at its first cleanup with horizon = ``now - CONFIRM``.

So a clock that jumps forward and is set back within :data:`CONFIRM` never deletes a memory
that is valid by the corrected clock (the jumped reading is dropped before it becomes the
horizon); a clock that stays wrong for longer is indistinguishable from the truth and is
believed.  An expired memory is deleted one to two :data:`CONFIRM` periods after it expires;
recall has hidden it since it expired.
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
