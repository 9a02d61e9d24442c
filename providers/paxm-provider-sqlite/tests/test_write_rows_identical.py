"""The leaner write path stores byte-identical rows.

``put_batch`` no longer builds the core's synchronized item a second time (the router built
it already), analyses each distinct text of a batch once, and encodes metadata outside the
write lock.  The oracle is the previous path: ``dict(sync_attribution(item).metadata)`` plus
turn boundaries, every item written by its own ``put``.  Items come through the router's
``prepare_items`` first, as delivered captures and CLI writes do, and also raw, as a library
caller may hand them to the provider directly; every column of every row is compared.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core import (
    Deadline,
    MemoryItem,
    MemoryOrigin,
    MemoryScope,
    Provenance,
    ProviderConfig,
    TurnContext,
    sync_attribution,
)
from paxm_core.attribution import ATTRIBUTION_KEYS, attribution_metadata
from paxm_core.router import PutPolicy, Route, Router
from paxm_provider_sqlite import provider as sqlite_provider
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.timestamps import stamp

NO_LIMIT = Deadline.none()
NOW = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def previous_prepare_metadata(item: MemoryItem) -> dict[str, str]:
    """What ``prepare_metadata`` computed before (the oracle)."""
    meta = dict(sync_attribution(item).metadata)
    turn = item.turn
    if turn is not None:
        meta["session_id"], meta["turn_id"] = turn.session_id.strip(), turn.turn_id.strip()
        if turn.started_at is not None:
            meta["started_at"] = stamp(turn.started_at)
        if turn.ended_at is not None:
            meta["ended_at"] = stamp(turn.ended_at)
    return meta


def _columns(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        names = [r[1] for r in conn.execute("PRAGMA table_info(memories)")]
        return conn.execute(f"SELECT {', '.join(names)}, rowid FROM memories ORDER BY rowid").fetchall()


def _terms(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT rowid, * FROM memory_terms ORDER BY rowid").fetchall()


def _items() -> list[MemoryItem]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    out: list[MemoryItem] = []
    for n in range(40):
        turn = TurnContext(session_id=f"s{n % 3}", turn_id=f"t{n}", started_at=at, ended_at=at + timedelta(seconds=n))
        out.append(
            MemoryItem(
                text=f"deploy HTTPServer v0.9.{n % 4} naïve retries, ticket{n % 7:04d}",  # repeated texts
                id=f"ep{n % 30:03d}",  # repeated ids: later rows overwrite earlier ones
                source="hook:episode",
                metadata={"agent": "claude-code", "paxm_user_id": "forged", "z": str(n)},
                created_at=at + timedelta(minutes=n),
                origin=MemoryOrigin(user_id="u", agent_id="a") if n % 2 else MemoryOrigin(),
                scope=MemoryScope(type="personal", id="u") if n % 3 else MemoryScope(),
                provenance=Provenance(user_id=" pv ", scope_type="team", scope_id="t1") if n % 5 == 0 else Provenance(),
                turn=turn if n % 4 else None,
                tier="stm" if n % 6 == 0 else "",
                expires_at=at + timedelta(days=1) if n % 6 == 0 else None,
            )
        )
    fp = {"paxm_fingerprint": "abc", "paxm_occurrences": "1"}
    out.append(
        MemoryItem(text="Prefers tabs", id="ltm_abc", metadata={**fp, "paxm_last_seen_at": "2026-01-02T00:00:00Z"})
    )
    out.append(
        MemoryItem(text="Prefers tabs", id="ltm_abc", metadata={**fp, "paxm_first_seen_at": "2025-12-01T00:00:00Z"})
    )
    return out


@pytest.mark.parametrize("through_router", [True, False], ids=["router-prepared", "raw"])
def test_rows_are_byte_identical_to_the_previous_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through_router: bool
) -> None:
    monkeypatch.setattr(sqlite_provider, "utcnow", lambda: NOW)
    ours, previous = SQLiteProvider("s", ProviderConfig(path=str(tmp_path / "ours.sqlite"))), None
    items = _items()
    if through_router:
        router = Router({"s": ours}, clock=lambda: NOW)
        items = router.prepare_items(items, PutPolicy([Route("s", required=True)], "", None, MemoryScope()))
    try:
        for start in range(0, len(items), 16):
            ours.put_batch(items[start : start + 16], NO_LIMIT)
        with monkeypatch.context() as patch:
            patch.setattr(sqlite_provider, "prepare_metadata", previous_prepare_metadata)
            previous = SQLiteProvider("s", ProviderConfig(path=str(tmp_path / "previous.sqlite")))
            for item in items:
                previous.put(item, NO_LIMIT)
    finally:
        ours.close()
        if previous is not None:
            previous.close()
    rows = _columns(tmp_path / "ours.sqlite")
    assert len(rows) == 31  # 30 episode ids + the consolidated LTM row
    assert rows == _columns(tmp_path / "previous.sqlite")
    assert _terms(tmp_path / "ours.sqlite") == _terms(tmp_path / "previous.sqlite")
    ltm = [r for r in rows if "ltm_abc" in r][0]
    assert '"paxm_occurrences":"2"' in str(ltm)


_TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "\t", "x"]), max_size=4)
_KEYS = st.sampled_from([*ATTRIBUTION_KEYS, "sequence", "agent", "paxm_tier", "zz"])


@settings(max_examples=400, deadline=None)
@given(
    meta=st.dictionaries(_KEYS, _TEXT, max_size=8),
    origin=st.builds(MemoryOrigin, _TEXT, _TEXT, _TEXT, _TEXT),
    scope=st.builds(MemoryScope, _TEXT, _TEXT),
    provenance=st.builds(Provenance, _TEXT, _TEXT, _TEXT, _TEXT),
    turn=st.none() | st.builds(TurnContext, session_id=_TEXT, turn_id=_TEXT),
    prepared=st.booleans(),
)
def test_attribution_metadata_is_sync_attributions_metadata(
    meta: dict[str, str],
    origin: MemoryOrigin,
    scope: MemoryScope,
    provenance: Provenance,
    turn: TurnContext | None,
    prepared: bool,
) -> None:
    item = MemoryItem(text="t", metadata=meta, origin=origin, scope=scope, provenance=provenance, turn=turn)
    if prepared:  # what the router hands the provider, with a key added after the canonical ones
        item = sync_attribution(item)
        item = item.replace(metadata={**item.metadata, "sequence": "7"})
    expected = sync_attribution(item).metadata
    got = attribution_metadata(item)
    assert list(got.items()) == list(expected.items())  # same keys, values and order
    got["new"] = "x"
    assert "new" not in item.metadata  # a fresh dict, never the item's own
