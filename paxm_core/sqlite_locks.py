"""Waiting out the SQLite locks that the busy handler does not wait for.

SQLite skips its busy handler where waiting could deadlock: switching a fresh file to WAL
while another process opens it, or reading the WAL index during another process's recovery.
Both fail at once with "database is locked", so two processes opening one new file together
(two hooks on a first run, a backfill beside the daemon) could fail although nothing is
wrong. :func:`retry_locked` retries such an idempotent step for up to the busy timeout.

``paxm_core.capture._inbox`` restates this rule because the hook client loads that file
without importing paxm.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["BUSY_TIMEOUT", "is_locked", "retry_locked"]

T = TypeVar("T")

BUSY_TIMEOUT = 5.0
"""Seconds a paxm SQLite connection waits for another's lock (its ``busy_timeout``)."""


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite reporting another connection's lock ("locked"/"busy")."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def retry_locked(step: Callable[[], T], *, ceiling: float = BUSY_TIMEOUT) -> T:
    """Run ``step``, retrying while it fails on a lock, for at most ``ceiling`` seconds.

    ``step`` must be idempotent (a pragma, ``CREATE ... IF NOT EXISTS``). Any other error,
    or a lock still held at the ceiling, is raised unchanged.
    """
    give_up = time.monotonic() + ceiling
    pause = 0.002
    while True:
        try:
            return step()
        except sqlite3.Error as exc:
            if not is_locked(exc) or time.monotonic() + pause > give_up:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
