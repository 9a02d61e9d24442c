"""A hit brings the settled decision of its conversation: the conversation's latest turn.

A conversation settles a rule over several turns; the turn that matches a question best is
often an early one (the problem as first described), and what was finally decided comes
later.  For each of the first :data:`SETTLED_HITS` hits that is a captured turn (its metadata
carries the capture's ``paxm_session_key``), the latest later turn of the same conversation,
within :data:`SETTLED_WINDOW`, joins the result right after it with the hit's score.  The
lookup walks the ``created_at`` index over at most :data:`SETTLED_SCAN` rows, under the same
filters as the search (expiry, tiers, workspace, metadata), so it never reaches a memory the
search could not return.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta

from paxm_provider_sqlite.records import decode_metadata
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Trace
from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = ["SESSION_KEY", "SETTLED_HITS", "SETTLED_SCAN", "SETTLED_WINDOW", "with_settled_turns"]

#: The capture metadata naming a turn's conversation (harness, workspace and session).
SESSION_KEY = "paxm_session_key"
#: Hits whose conversation is looked at (the ones a passive injection carries).
SETTLED_HITS = 2
#: How long after a hit its conversation's later turns are looked for.
SETTLED_WINDOW = timedelta(hours=12)
#: Most rows of that window read (newest first) to find the conversation's latest turn.
SETTLED_SCAN = 256


def _latest_turn(
    conn: sqlite3.Connection, where: str, args: list[object], hit: Candidate, key: str
) -> tuple[object, ...] | None:
    born = parse_stamp(hit.created_at)
    if born is None:
        return None
    rows = conn.execute(
        f"""SELECT {ROW_COLUMNS} FROM memories AS m
            WHERE {where} AND m.created_at > ? AND m.created_at <= ?
            ORDER BY m.created_at DESC LIMIT ?""",
        (*args, hit.created_at, stamp(born + SETTLED_WINDOW), SETTLED_SCAN),
    ).fetchall()
    for row in rows:
        meta = str(row[4] or "")
        # a substring test first: most rows of the window belong to other conversations
        if key in meta and decode_metadata(meta).get(SESSION_KEY) == key:
            return tuple(row)
    return None


def with_settled_turns(
    conn: sqlite3.Connection, where: str, args: list[object], found: list[Candidate], limit: int, trace: Trace
) -> list[Candidate]:
    """``found`` with each leading hit's conversation's latest turn after it, at most ``limit``."""
    out = list(found)
    added = 0
    for hit in found[:SETTLED_HITS]:
        key = decode_metadata(hit.metadata_json).get(SESSION_KEY, "")
        if not key:
            continue  # not a captured turn
        row = _latest_turn(conn, where, args, hit, key)
        if row is None:
            continue  # the hit is its conversation's latest turn
        rowid = int(row[0])  # type: ignore[call-overload]
        settled = next((c for c in out if c.rowid == rowid), None)
        if settled is not None:
            out.remove(settled)
        else:
            settled = Candidate.from_row(row)
            added += 1
        settled.score = max(settled.score, hit.score)
        out.insert(out.index(hit) + 1, settled)
    trace.branches["settled_turns"] = added
    return out[:limit]
