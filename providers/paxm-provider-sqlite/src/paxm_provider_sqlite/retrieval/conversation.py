"""A hit brings the settled decision of its conversation, and of a later one that amends it.

The rules and their bounds are in ``docs/sqlite-provider.md`` (Conversations); every lookup runs
under the search's own filters, so it never reaches a memory the search could not return.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Protocol

from paxm_provider_sqlite.records import decode_metadata
from paxm_provider_sqlite.retrieval.analyzer import index_text
from paxm_provider_sqlite.retrieval.frequency import probe
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Trace
from paxm_provider_sqlite.retrieval.ranking import TEMPLATE_WORDS
from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = [
    "AMEND_AFTER",
    "AMEND_DF",
    "AMEND_MUTUAL",
    "AMEND_SHARED",
    "AMEND_TERMS",
    "SESSION_KEY",
    "SETTLED_HITS",
    "SETTLED_SCAN",
    "SETTLED_SHARED",
    "SETTLED_WINDOW",
    "concepts",
    "with_settled_turns",
]

#: The capture metadata naming a turn's conversation (harness, workspace and session).
SESSION_KEY = "paxm_session_key"
#: Hits whose conversation is looked at (the ones a passive injection carries).
SETTLED_HITS = 2
#: How long after a hit its conversation's later turns are looked for.
SETTLED_WINDOW = timedelta(hours=12)
#: Most rows of that window read (newest first) to find the conversation's latest turn.
SETTLED_SCAN = 256
#: Content words the latest turn must have in common with the hit (a farewell has none).
SETTLED_SHARED = 2
#: How much later than a conversation's latest turn an amending conversation starts.
AMEND_AFTER = timedelta(hours=1)
#: Words of the first conversation probed, the longest first (each one bounded count).
AMEND_PROBED = 32
#: Its rarest words (each counted once whatever its indexed form) looked for in later
#: conversations, and how rare they must be.
AMEND_TERMS = 16
AMEND_DF = 16
#: Of those, how many a later turn must hold to be on the same subject.
AMEND_SHARED = 4
#: Share of either side's rare words the other side must hold (see the module docstring).
AMEND_MUTUAL = 0.4
#: Later turns ranked (bm25 over the rare words) and examined.
AMEND_CANDIDATES = 32


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
    """``found`` with each leading hit's conversation's latest turn before it, at most ``limit``."""
    out = list(found)
    placed = 0
    for hit in found[:SETTLED_HITS]:
        key = decode_metadata(hit.metadata_json).get(SESSION_KEY, "")
        if not key:
            continue  # not a captured turn
        row = _latest_turn(conn, where, args, hit, key)
        if row is None:
            continue  # the hit is its conversation's latest turn
        if not _on_subject(hit.text, str(row[2])):
            continue  # the conversation moved on (a farewell, another topic)
        rowid = int(row[0])  # type: ignore[call-overload]
        settled = next((c for c in out if c.rowid == rowid), None)
        if settled is not None:
            out.remove(settled)
        else:
            settled = Candidate.from_row(row)
        placed += 1
        settled.score = max(settled.score, hit.score)
        out.insert(out.index(hit), settled)  # the settled decision before the turn that raised it
    trace.branches["settled_turns"] = placed
    return out[:limit]


def _words(*texts: str) -> set[str]:
    words: set[str] = set()
    for text in texts:
        indexed = index_text(text)
        words.update(indexed.terms.split(), indexed.extras.split())
    return {w for w in words if len(w) > 3 and w not in TEMPLATE_WORDS and not w.isdigit() and '"' not in w}


class _Where(Protocol):
    """The search plan's filters (``search._Plan``): SQL over alias ``m`` and its arguments."""

    where: str
    args: list[object]
    trace: Trace


def _on_subject(first: str, later: str) -> bool:
    """Whether ``later`` shares :data:`SETTLED_SHARED` content words with ``first``."""
    return len(_words(first) & _words(later)) >= SETTLED_SHARED


def _pieces(word: str) -> set[str]:
    # an identifier's joined form and its longer parts: parse_quantity -> parsequantity, parse, quantity
    return {word.replace("_", ""), *(p for p in word.split("_") if len(p) > 4)}


def _one_word(a: str, b: str) -> bool:
    """Whether two indexed terms are forms of one word (``case_insensitive``, ``caseinsensitive``, ``insensitiv``)."""
    for x in _pieces(a):
        for y in _pieces(b):
            short, long = (x, y) if len(x) <= len(y) else (y, x)
            if len(short) > 4 and long.startswith(short):
                return True
    return False


def concepts(words: list[str]) -> list[frozenset[str]]:
    """``words`` grouped into the words they are forms of, in the order of each group's first form.

    The index keeps an identifier whole, joined and in parts, and a hyphenated word too, so one
    word of a conversation can fill three slots of its rarest words; a later conversation on the
    subject is judged by how many distinct words it shares, each counted once whatever its form.
    """
    groups: list[set[str]] = []
    for word in words:
        for group in groups:
            if any(_one_word(word, other) for other in group):
                group.add(word)
                break
        else:
            groups.append({word})
    return [frozenset(g) for g in groups]


def _amending_turn(
    conn: sqlite3.Connection,
    plan: _Where,
    first: Candidate,
    last: Candidate,
    key: str,
) -> tuple[object, ...] | None:
    """A turn of a later conversation on the subject of ``first``..``last`` (one conversation)."""
    end = parse_stamp(last.created_at)
    if end is None:
        return None
    mine = _words(first.text, last.text)
    rare = _rare_concepts(conn, mine)
    if len(rare) < AMEND_SHARED:
        return None
    rows = conn.execute(
        f"""SELECT {ROW_COLUMNS}, m.terms, m.extras FROM memory_terms
            JOIN memories AS m ON m.rowid = memory_terms.rowid
            WHERE memory_terms MATCH ? AND {plan.where} AND m.created_at >= ?
            ORDER BY bm25(memory_terms) LIMIT ?""",
        (
            " OR ".join(f'"{w}"' for c in rare for w in sorted(c)),
            *plan.args,
            stamp(end + AMEND_AFTER),
            AMEND_CANDIDATES,
        ),
    ).fetchall()
    best: tuple[int, str, tuple[object, ...]] | None = None
    for row in rows:
        tokens = set(f"{row[8]} {row[9]}".split())
        shared = sum(not tokens.isdisjoint(c) for c in rare)
        meta = decode_metadata(str(row[4] or ""))
        other = meta.get(SESSION_KEY, "")
        if shared < AMEND_SHARED or not other or other == key:
            continue
        if best is None or (shared, str(row[5])) > best[:2]:
            best = (shared, str(row[5]), tuple(row[:8]))
    if best is None or not _mutual(conn, best[0] / len(rare), mine, str(best[2][2])):
        return None
    return best[2]


def _rare_concepts(conn: sqlite3.Connection, words: set[str]) -> list[frozenset[str]]:
    """The rarest of ``words`` (the longest :data:`AMEND_PROBED` probed), as :func:`concepts`."""
    probed = sorted(words, key=lambda w: (-len(w), w))[:AMEND_PROBED]
    counts = probe(conn, [f'"{w}"' for w in probed])
    return concepts([w for df, w in sorted(zip(counts, probed, strict=True)) if 1 < df <= AMEND_DF])[:AMEND_TERMS]


def _mutual(conn: sqlite3.Connection, forward: float, mine: set[str], later: str) -> bool:
    """Whether the shared words are :data:`AMEND_MUTUAL` of the first conversation's rare words
    (``forward``) or of the ``later`` turn's own rare words (each found in ``mine`` in any form)."""
    if forward >= AMEND_MUTUAL:
        return True
    theirs = _rare_concepts(conn, _words(later))
    back = sum(any(w in mine or any(_one_word(w, m) for m in mine) for w in c) for c in theirs)
    return bool(theirs) and back >= AMEND_MUTUAL * len(theirs)


def with_amendment(conn: sqlite3.Connection, plan: _Where, found: list[Candidate], limit: int) -> list[Candidate]:
    """``found`` led by the settled decision of a later conversation amending the best hit's, if any."""
    if not found:
        return found
    hit = found[0]
    key = decode_metadata(hit.metadata_json).get(SESSION_KEY, "")
    if not key:
        return found
    same = [c for c in found if decode_metadata(c.metadata_json).get(SESSION_KEY) == key]
    last = max(same, key=lambda c: c.created_at)
    row = _amending_turn(conn, plan, hit, last, key)
    plan.trace.branches["amending_turns"] = int(row is not None)
    if row is None:
        return found
    other = decode_metadata(str(row[4] or "")).get(SESSION_KEY, "")
    start = Candidate.from_row(row)
    settled_row = _latest_turn(conn, plan.where, plan.args, start, other)
    settled = Candidate.from_row(settled_row) if settled_row is not None else start
    out = [c for c in found if c.rowid != settled.rowid]
    settled.score = max(settled.score, hit.score)
    return [settled, *out][:limit]
