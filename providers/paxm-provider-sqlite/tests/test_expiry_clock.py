"""Expired-memory cleanup under a wall clock that jumps (``paxm_provider_sqlite.expiry``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite import provider as provider_module
from paxm_provider_sqlite.expiry import CONFIRM
from paxm_provider_sqlite.provider import SQLiteProvider

NO_LIMIT = Deadline.none()
# the file's own clock readings start at its creation (real time): the injected clock starts there
REAL = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(REAL)


@pytest.fixture
def provider(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[SQLiteProvider]:
    built = SQLiteProvider("sqlite", ProviderConfig(type="sqlite", path=str(tmp_path / "m.sqlite")))
    built.health(NO_LIMIT)  # opens (and creates) the file by the real clock
    monkeypatch.setattr(provider_module, "utcnow", clock)  # the clock the provider reads
    yield built
    built.close()


def _stm(provider: SQLiteProvider, key: str, expires_at: datetime) -> None:
    item = MemoryItem(
        text=f"{key} wombat", id=key, tier="stm", created_at=REAL - timedelta(hours=1), expires_at=expires_at
    )
    provider.put(item, NO_LIMIT)


def _stored(provider: SQLiteProvider) -> set[str]:
    import sqlite3

    with sqlite3.connect(provider.path) as conn:
        return {row[0] for row in conn.execute("SELECT id FROM memories")}


def test_a_forward_jump_then_back_deletes_nothing_still_valid(provider: SQLiteProvider, clock: Clock) -> None:
    _stm(provider, "valid", REAL + timedelta(hours=23))  # a 24h STM memory written an hour ago
    _stm(provider, "stale", REAL - timedelta(days=2))
    assert provider.cleanup_expired(100, NO_LIMIT) == 1  # the truly stale one
    clock.now = REAL + timedelta(minutes=5)
    provider.cleanup_expired(100, NO_LIMIT)
    # the clock jumps three days ahead; the delivery worker cleans up every few seconds
    for seconds in range(0, 20 * 60, 10):
        clock.now = REAL + timedelta(days=3, seconds=seconds)
        assert provider.cleanup_expired(100, NO_LIMIT) == 0
    # NTP sets it back; cleanups go on
    for minutes in range(6, 120, 7):
        clock.now = REAL + timedelta(minutes=minutes)
        assert provider.cleanup_expired(100, NO_LIMIT) == 0
    assert _stored(provider) == {"valid"}
    assert [h.id for h in provider.search(SearchQuery("wombat"), NO_LIMIT)] == ["valid"]


def test_a_jump_at_the_first_cleanup_then_back_deletes_nothing_still_valid(
    provider: SQLiteProvider, clock: Clock
) -> None:
    _stm(provider, "valid", REAL + timedelta(hours=23))
    clock.now = REAL + timedelta(days=3)
    assert provider.cleanup_expired(100, NO_LIMIT) == 0
    clock.now = REAL + timedelta(days=3) + CONFIRM / 2
    assert provider.cleanup_expired(100, NO_LIMIT) == 0
    clock.now = REAL + timedelta(minutes=1)
    for minutes in range(1, 180, 3):
        clock.now = REAL + timedelta(minutes=minutes)
        assert provider.cleanup_expired(100, NO_LIMIT) == 0
    assert _stored(provider) == {"valid"}


def test_expired_memories_go_once_the_clock_is_confirmed(provider: SQLiteProvider, clock: Clock) -> None:
    _stm(provider, "soon", REAL + timedelta(minutes=10))
    assert provider.cleanup_expired(100, NO_LIMIT) == 0
    clock.now = REAL + timedelta(minutes=20)  # expired by now, but the reading is not confirmed yet
    assert provider.cleanup_expired(100, NO_LIMIT) == 0
    clock.now = REAL + timedelta(minutes=20) + CONFIRM
    provider.cleanup_expired(100, NO_LIMIT)  # confirms the reading at minute 20 ... or earlier ones
    clock.now = REAL + timedelta(minutes=20) + 2 * CONFIRM
    provider.cleanup_expired(100, NO_LIMIT)
    assert _stored(provider) == set()


def test_a_clock_that_stays_ahead_is_believed_after_confirm(provider: SQLiteProvider, clock: Clock) -> None:
    _stm(provider, "valid", REAL + timedelta(hours=23))
    provider.cleanup_expired(100, NO_LIMIT)
    clock.now = REAL + timedelta(days=3)
    assert provider.cleanup_expired(100, NO_LIMIT) == 0
    clock.now = REAL + timedelta(days=3) + CONFIRM
    provider.cleanup_expired(100, NO_LIMIT)
    clock.now = REAL + timedelta(days=3) + 2 * CONFIRM
    provider.cleanup_expired(100, NO_LIMIT)
    assert _stored(provider) == set()
