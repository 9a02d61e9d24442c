"""The SQLite provider declares ``deadline_bound``: every call returns by its deadline on its own.

The router runs a deadline-bound provider's call on the caller's thread (no bulkhead hand-off),
so a call that waited past its deadline would delay the recall itself.  These tests hold each
wait a call can meet and check the call gives up with :class:`DeadlineExceeded` close to its
deadline: the connection lock held by another thread, another process's write lock (SQLite's
``busy_timeout``); a long statement is interrupted by the progress handler (see
``test_write_path.py`` and ``test_provider.py``).  The hybrid provider embeds
with a model no deadline interrupts, so it must not declare the capability.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from paxm_core import Deadline, DeadlineExceeded, MemoryItem, ProviderConfig, ProviderError, SearchQuery
from paxm_core.api.protocols import CAP_DEADLINE_BOUND, CAP_DELETE, CAP_PUT_BATCH, capabilities_of
from paxm_provider_sqlite.provider import SQLiteProvider

# Far below the 5 s busy timeout and far above scheduling noise on a loaded machine.
BUDGET = 0.3
# A call may overrun its deadline by the time one statement step or one lock poll takes; on a
# loaded 2-core machine that stays well under this.
SLACK = 2.0


def _provider(tmp_path: Path) -> SQLiteProvider:
    provider = SQLiteProvider("s", ProviderConfig(path=str(tmp_path / "m.sqlite")))
    provider.put(MemoryItem(text="the billing service retries three times"), Deadline.none())
    return provider


def test_the_provider_declares_deadline_bound_and_keeps_its_other_capabilities(tmp_path: Path) -> None:
    found = capabilities_of(_provider(tmp_path))
    assert {CAP_DEADLINE_BOUND, CAP_PUT_BATCH, CAP_DELETE} <= found


def test_a_search_waiting_for_the_connection_lock_gives_up_at_its_deadline(tmp_path: Path) -> None:
    provider = _provider(tmp_path)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        # Another thread of the same provider mid-statement: it owns the connection lock.
        with provider._db.session("put", Deadline.none()):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            provider.search(SearchQuery(text="billing"), Deadline.after(BUDGET))
        assert time.monotonic() - started < BUDGET + SLACK
    finally:
        release.set()
        holder.join(10)
    # The lock was released by the holder: the provider still answers.
    assert provider.search(SearchQuery(text="billing"), Deadline.after(10))


def test_a_write_waiting_for_another_connections_write_lock_gives_up_at_its_deadline(tmp_path: Path) -> None:
    provider = _provider(tmp_path)
    other = sqlite3.connect(tmp_path / "m.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's writer, holding the write lock
    try:
        started = time.monotonic()
        with pytest.raises((DeadlineExceeded, ProviderError)) as caught:
            provider.put(MemoryItem(text="a decision"), Deadline.after(BUDGET))
        elapsed = time.monotonic() - started
        # busy_timeout (5 s) would have waited far longer than the deadline.
        assert elapsed < BUDGET + SLACK, elapsed
        assert "locked" in str(caught.value) or isinstance(caught.value, DeadlineExceeded)
    finally:
        other.execute("ROLLBACK")
        other.close()
    # An unlimited call gets the full busy timeout back, and succeeds once the lock is free.
    provider.put(MemoryItem(text="a decision"), Deadline.none())
    assert provider._db._busy_ms == 5000


def test_an_unlimited_call_still_waits_for_a_briefly_held_write_lock(tmp_path: Path) -> None:
    provider = _provider(tmp_path)
    provider.put(MemoryItem(text="warm"), Deadline.after(BUDGET))  # leaves a short busy timeout set
    locked = threading.Event()

    def hold_briefly() -> None:
        other = sqlite3.connect(tmp_path / "m.sqlite", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        locked.set()
        time.sleep(0.5)
        other.execute("ROLLBACK")
        other.close()

    holder = threading.Thread(target=hold_briefly)
    holder.start()
    try:
        assert locked.wait(10)
        ref = provider.put(MemoryItem(text="written after the other writer let go"), Deadline.none())
    finally:
        holder.join(10)
    assert ref.id


def test_hybrid_provider_does_not_declare_deadline_bound(tmp_path: Path) -> None:
    hybrid = pytest.importorskip("paxm_provider_sqlite_hybrid.provider")
    provider = hybrid.HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "h.sqlite")), warm=False)
    try:
        found = capabilities_of(provider)
        assert CAP_DEADLINE_BOUND not in found
        assert CAP_PUT_BATCH in found
    finally:
        provider.close()
