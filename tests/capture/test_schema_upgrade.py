"""A queue file written before ``m004_live_state_indexes`` upgrades in place and keeps its work."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from _capture_helpers import event

from paxm_core.capture._inbox import MIGRATIONS, SCHEMA_VERSION

_INDEXES = "SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"


def _schema_3_indexes(path: Path) -> list[str]:
    """The indexes of a file created by the first three migrations alone (what 0.1.0 shipped)."""
    with sqlite3.connect(path) as conn:
        for _, statements in MIGRATIONS[:3]:
            for statement in statements:
                conn.execute(statement)
        return [r[0] for r in conn.execute(_INDEXES)]


def _downgrade_to_schema_3(path: Path) -> None:
    """Undo m004 exactly: the file then is a schema-3 queue with rows in every live state."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX capture_deliveries_waiting")
        conn.execute("DROP INDEX capture_deliveries_dead")
        conn.execute(next(s for s in MIGRATIONS[0][1] if "capture_deliveries_schedule" in s))
        conn.execute("DELETE FROM _paxm_migrations WHERE name = 'm004_live_state_indexes'")
        conn.execute("PRAGMA user_version = 3")


def test_schema_3_queue_upgrades_and_delivers_everything(open_queue, queue_path: Path, tmp_path: Path) -> None:
    assert MIGRATIONS[3][0] == "m004_live_state_indexes" and SCHEMA_VERSION >= 4
    q = open_queue(routes={"default": ["a"]}, retry_min=3600)
    for n in range(6):
        q.append(event(f"e{n}", f"s{n % 2}", terminal=True))
    (first, second, *_), _ = q.claim_batch("a", limit=2)
    q.fail_many([first], "boom")  # retry, an hour away
    q.close()
    with sqlite3.connect(queue_path) as conn:
        # a worker killed mid-delivery (its pid is gone), and an episode that gave up
        conn.execute(
            "UPDATE capture_deliveries SET state = 'delivering', lease_owner = '999999999:dead' WHERE episode_id = ?",
            (second.episode_id,),
        )
        conn.execute("UPDATE capture_deliveries SET state = 'dead', last_error = 'x' WHERE rowid = 6")
    _downgrade_to_schema_3(queue_path)
    with sqlite3.connect(queue_path) as conn:
        assert [r[0] for r in conn.execute(_INDEXES)] == _schema_3_indexes(tmp_path / "pristine.sqlite")
        before = conn.execute("SELECT * FROM capture_deliveries ORDER BY rowid").fetchall()

    upgraded = open_queue(routes={"default": ["a"]}, retry_min=3600)
    with sqlite3.connect(queue_path) as conn:
        names = [r[0] for r in conn.execute(_INDEXES)]
        assert "capture_deliveries_schedule" not in names
        assert {"capture_deliveries_waiting", "capture_deliveries_dead"} <= set(names)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        after = {r[0]: r[1:] for r in conn.execute("SELECT rowid, state, lease_owner FROM capture_deliveries")}
    assert len(after) == len(before) == 6
    # opening recovered the dead worker's lease (found through the live-state index)
    assert after[second.row] == ("retry", "")
    assert upgraded.next_due_in() == 0.0  # pending work is due now
    assert upgraded.status().deliveries == {"pending": 3, "retry": 2, "dead": 1}
    assert upgraded.make_due() == 1  # the failed one's hour-long wait ends
    assert upgraded.retry_dead() == 1
    delivered: list[str] = []
    while True:
        claims, dead = upgraded.claim_batch("a", limit=10)
        assert dead == []
        if not claims:
            break
        upgraded.complete_many(claims, [f"ref-{c.episode_id}" for c in claims])
        delivered.extend(c.items[0].text for c in claims)
    assert sorted(delivered) == sorted(f"text of e{n}" for n in range(6))
    assert upgraded.status().deliveries == {"delivered": 6}
    assert upgraded.next_due_in() is None
