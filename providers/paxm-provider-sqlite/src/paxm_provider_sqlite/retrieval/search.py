"""The retrieval plan: candidate generation, stage selection and ranking."""

from __future__ import annotations

import re
import sqlite3

from paxm_core import Deadline
from paxm_core.timefmt import utcnow
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Request, Trace
from paxm_provider_sqlite.timestamps import stamp

__all__ = ["search"]

_WORD = re.compile(r"\w+", re.UNICODE)


def _terms(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group().strip("_")
        if word:
            seen.setdefault(word, None)
    return list(seen)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _json_path(key: str) -> str:
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def filter_clause(request: Request) -> tuple[str, list[object]]:
    """SQL conditions every candidate must satisfy (alias ``m`` = memories)."""
    clauses = ["(m.expires_at = '' OR m.expires_at > ?)"]
    args: list[object] = [stamp(utcnow())]
    if request.tiers:
        clauses.append(f"m.tier IN ({','.join('?' * len(request.tiers))})")
        args.extend(request.tiers)
    if request.workspace:
        clauses.append("COALESCE(json_extract(m.metadata_json, '$.workspace'), '') IN ('', ?)")
        args.append(request.workspace)
    for key, value in sorted(request.filters.items()):
        clauses.append("json_extract(m.metadata_json, ?) = ?")
        args.extend((_json_path(key), value))
    return " AND ".join(clauses), args


def _recent(conn: sqlite3.Connection, request: Request) -> list[Candidate]:
    where, args = filter_clause(request)
    rows = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE {where} ORDER BY m.created_at DESC LIMIT ?",
        (*args, request.result_limit),
    ).fetchall()
    out = [Candidate.from_row(row) for row in rows]
    for cand in out:
        cand.score = 0.1
    return out


def search(conn: sqlite3.Connection, request: Request, deadline: Deadline, trace: Trace) -> list[Candidate]:
    """Run the plan for ``request`` on ``conn``; best first, at most ``request.result_limit``."""
    terms = _terms(request.text)
    trace.terms = terms
    if not terms:
        trace.selected = "recent"
        return _recent(conn, request)
    where, args = filter_clause(request)
    rows = conn.execute(
        f"""SELECT {ROW_COLUMNS}, bm25(memory_fts) AS rank FROM memory_fts
            JOIN memories AS m ON m.rowid = memory_fts.rowid
            WHERE memory_fts MATCH ? AND {where}
            ORDER BY rank, m.created_at DESC LIMIT ?""",
        (" OR ".join(_quote(t) for t in terms), *args, request.candidate_limit),
    ).fetchall()
    trace.branches["fts_or"] = len(rows)
    phrase = request.text.strip().lower()
    stages: dict[str, list[Candidate]] = {"exact": [], "strict": [], "relaxed": []}
    for rank, row in enumerate(rows):
        cand = Candidate.from_row(row, -float(row[8]))
        cand.rrf = 1.0 / (60 + rank + 1)
        text_terms = set(_terms(cand.text))
        lower = cand.text.lower()
        matched = sum(1 for t in terms if t in text_terms or t in lower)
        if not matched:
            continue
        cand.matched = matched
        cand.density = matched / max(1, len(text_terms))
        if phrase and phrase in lower:
            cand.score = 1.0
            stages["exact"].append(cand)
        elif matched == len(terms):
            cand.score = 1.0
            stages["strict"].append(cand)
        else:
            cand.score = matched / len(terms)
            stages["relaxed"].append(cand)
    trace.exact, trace.strict, trace.relaxed = (len(v) for v in stages.values())
    for name, chosen in stages.items():
        if chosen:
            trace.selected = name
            chosen.sort(key=lambda c: (-c.score, -c.density, -c.rrf, -(c.raw_score or 0.0), _neg(c.created_at)))
            return chosen[: request.result_limit]
    trace.selected = "none"
    return []


def _neg(text: str) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in text)
