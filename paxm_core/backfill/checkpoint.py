"""The backfill checkpoint store: which turns are queued, which files are finished, the runs.

One SQLite file (0600 in a 0700 directory, opened under :mod:`paxm_core.private_files`' rules).
A turn is recorded in the same step that appends it to the backfill queue, so after a kill -9
a run skips exactly what is already durable; a finished file (same size and mtime) is not even re-read.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paxm_core.private_files import connect_private, private_umask
from paxm_core.processes import pid_alive
from paxm_core.sqlite_locks import retry_locked

__all__ = ["CheckpointStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS turns (turn_id TEXT PRIMARY KEY, agent TEXT NOT NULL, how TEXT NOT NULL,"
    " at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS files (agent TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,"
    " mtime_ns INTEGER NOT NULL, turns INTEGER NOT NULL, PRIMARY KEY (agent, path))",
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL,"
    " provider TEXT NOT NULL, pid INTEGER NOT NULL, started_at REAL NOT NULL, updated_at REAL NOT NULL,"
    " finished_at REAL, state TEXT NOT NULL, found INTEGER NOT NULL DEFAULT 0, queued INTEGER NOT NULL DEFAULT 0,"
    " skipped INTEGER NOT NULL DEFAULT 0, delivered INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '')",
)

#: the counters and state :meth:`CheckpointStore.record_step` may set
_RUN_FIELDS = frozenset({"found", "queued", "skipped", "delivered", "state", "error", "finished_at"})


class CheckpointStore:
    """What a backfill has done, per agent; survives kill -9 (SQLite WAL, short transactions)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # created 0600 in a 0700 directory before SQLite opens it, never through a link
        self._conn: sqlite3.Connection = connect_private(
            path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        # a parallel backfill opens one new file from several processes at once
        with private_umask():  # the -wal/-shm SQLite creates now are 0600 too
            retry_locked(lambda: self._conn.execute("PRAGMA journal_mode = WAL"))
            self._conn.execute("PRAGMA synchronous = FULL")
            retry_locked(lambda: [self._conn.execute(statement) for statement in _SCHEMA])

    def close(self) -> None:
        """Close the database."""
        self._conn.close()

    # -- turns and files -------------------------------------------------------------------

    def done_turns(self, agent: str) -> set[str]:
        """Every turn id of ``agent`` already queued or skipped."""
        return {r[0] for r in self._conn.execute("SELECT turn_id FROM turns WHERE agent = ?", (agent,))}

    def record_step(
        self,
        run_id: int,
        agent: str = "",
        turns: Iterable[tuple[str, str]] = (),
        files: Iterable[tuple[Path, int, int, int]] = (),
        **fields: str | float | None,
    ) -> None:
        """One durable transaction: ``(turn_id, how)`` pairs, the files finished, the run's counters.

        A file is recorded with the turns that finish it, so a kill -9 never leaves a finished
        file without its turns.
        """
        now = time.time()
        sets = {k: v for k, v in fields.items() if k in _RUN_FIELDS}
        sets["updated_at"] = now
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "INSERT OR IGNORE INTO turns(turn_id, agent, how, at) VALUES (?, ?, ?, ?)",
                [(t, agent, how, now) for t, how in turns],
            )
            self._conn.executemany(
                "INSERT OR REPLACE INTO files(agent, path, size, mtime_ns, turns) VALUES (?, ?, ?, ?, ?)",
                [(agent, str(path), size, mtime_ns, count) for path, size, mtime_ns, count in files],
            )
            self._conn.execute(
                f"UPDATE runs SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?", (*sets.values(), run_id)
            )

    def file_done(self, agent: str, path: Path, size: int, mtime_ns: int) -> bool:
        """Whether ``path`` was read to its end at exactly this size and mtime."""
        row = self._conn.execute(
            "SELECT size, mtime_ns FROM files WHERE agent = ? AND path = ?", (agent, str(path))
        ).fetchone()
        return row is not None and tuple(row) == (size, mtime_ns)

    def counts(self) -> dict[str, dict[str, int]]:
        """``{agent: {how: count}}`` of recorded turns."""
        out: dict[str, dict[str, int]] = {}
        for agent, how, count in self._conn.execute("SELECT agent, how, COUNT(*) FROM turns GROUP BY agent, how"):
            out.setdefault(agent, {})[how] = count
        return out

    # -- runs ------------------------------------------------------------------------------

    def start_run(self, agent: str, provider: str) -> int:
        """Record a new run (state ``running``) and return its id."""
        now = time.time()
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            cursor = self._conn.execute(
                "INSERT INTO runs(agent, provider, pid, started_at, updated_at, state)"
                " VALUES (?, ?, ?, ?, ?, 'running')",
                (agent, provider, os.getpid(), now, now),
            )
        return int(cursor.lastrowid or 0)

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first; a ``running`` run whose process is gone shows ``interrupted``."""
        cursor = self._conn.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        for row in rows:
            if row["state"] == "running" and not pid_alive(int(row["pid"])):
                row["state"] = "interrupted"
        return rows
