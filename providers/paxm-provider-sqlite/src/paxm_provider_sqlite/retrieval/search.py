"""The retrieval plan: staged, index-driven candidate generation, stage selection and ranking.

Stages run in order and the first non-empty one wins, so a weaker match never outranks or
pads out a stronger one:

1. ``exact``: the query's whole canonical stream as an FTS5 phrase over ``memory_terms``.
2. ``strict``: every query group present (an FTS5 ``AND``).
3. ``relaxed``: any informative group present; candidates come from the rarest groups
   (document frequency probed with bounded queries), score = matched groups / all groups.

Every step is an FTS5 index lookup with a ``LIMIT``; no step reads rows the index did not
select, so the cost follows the number of matches, not the table size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from paxm_core import Deadline
from paxm_core.timefmt import utcnow
from paxm_provider_sqlite.retrieval.analyzer import Group, QueryAnalysis, analyze_query
from paxm_provider_sqlite.retrieval.excerpt import excerpt_candidates
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Request, Trace
from paxm_provider_sqlite.timestamps import stamp

__all__ = ["search", "filter_clause"]

RRF_K = 60
#: Longest canonical stream tried as an exact phrase (longer prompts are never verbatim memories).
MAX_PHRASE_TOKENS = 24
#: Most groups a strict all-terms query may have; beyond this only relaxed matching makes sense.
MAX_STRICT_GROUPS = 12
#: Groups used to generate relaxed candidates (the rarest ones).
MAX_RELAXED_GROUPS = 8
#: Most groups scored per candidate (a 300-word prompt keeps its first 64 informative words).
MAX_SCORED_GROUPS = 64
#: Document-frequency probes stop counting here: beyond it a term is "common".
DF_CAP = 256


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


class _Plan:
    def __init__(self, conn: sqlite3.Connection, request: Request, trace: Trace) -> None:
        self.conn = conn
        self.request = request
        self.trace = trace
        self.where, self.args = filter_clause(request)

    def ranked(self, name: str, expr: str, *, with_terms: bool = False, by_rank: bool = True) -> list[Light]:
        cols = "m.rowid, bm25(memory_terms), m.created_at, m.nterms"
        if with_terms:
            cols += ", m.terms, m.extras"
        order = "ORDER BY bm25(memory_terms), m.created_at DESC" if by_rank else "ORDER BY m.rowid DESC"
        rows = self.conn.execute(
            f"""SELECT {cols} FROM memory_terms JOIN memories AS m ON m.rowid = memory_terms.rowid
                WHERE memory_terms MATCH ? AND {self.where} {order} LIMIT ?""",
            (expr, *self.args, self.request.candidate_limit),
        ).fetchall()
        self.trace.branches[name] = len(rows)
        return [Light(row, rank) for rank, row in enumerate(rows)]

    def document_frequency(self, group: Group) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM memory_terms WHERE memory_terms MATCH ? LIMIT ?)",
            (group.fts(), DF_CAP),
        ).fetchone()
        return int(row[0])


class Light:
    """A candidate before its row is loaded: what ranking needs and nothing more."""

    __slots__ = ("rowid", "raw", "created_at", "nterms", "hay", "rrf", "score", "density")

    def __init__(self, row: Sequence[object], rank: int) -> None:
        self.rowid = int(row[0])  # type: ignore[call-overload]
        self.raw = -float(row[1])  # type: ignore[arg-type]
        self.created_at = str(row[2])
        self.nterms = max(1, int(row[3] or 0))  # type: ignore[call-overload]
        self.hay = f" {row[4]} {row[5]} " if len(row) > 4 else ""
        self.rrf = 1.0 / (RRF_K + rank + 1)
        self.score = 1.0
        self.density = 0.0


def _fuse(lists: Sequence[Sequence[Light]]) -> list[Light]:
    """Reciprocal-rank fusion (k=60) of candidate lists that may share rows."""
    merged: dict[int, Light] = {}
    for items in lists:
        for cand in items:
            seen = merged.get(cand.rowid)
            if seen is None:
                merged[cand.rowid] = cand
            else:
                seen.rrf += cand.rrf
                seen.raw = max(seen.raw, cand.raw)
                if not seen.hay:
                    seen.hay = cand.hay
    return list(merged.values())


def _order(cands: list[Light]) -> None:
    # created_at is fixed-width text, so the string order is the time order.
    cands.sort(key=lambda c: c.created_at, reverse=True)
    cands.sort(key=lambda c: (c.score, c.density, c.rrf, c.raw), reverse=True)


def _load(conn: sqlite3.Connection, chosen: list[Light]) -> list[Candidate]:
    if not chosen:
        return []
    marks = ",".join("?" * len(chosen))
    rows = conn.execute(
        f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE m.rowid IN ({marks})", [c.rowid for c in chosen]
    )
    by_id = {int(row[0]): row for row in rows}
    out = []
    for light in chosen:
        row = by_id.get(light.rowid)
        if row is None:
            continue
        cand = Candidate.from_row(row, light.raw)
        cand.score, cand.rrf, cand.density = light.score, light.rrf, light.density
        out.append(cand)
    return out


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


def _all_present(plan: _Plan, name: str, query: QueryAnalysis, expr: str) -> list[Light]:
    cands = plan.ranked(name, expr)
    groups = len(query.groups)
    for cand in cands:
        cand.density = groups / cand.nterms
    return cands


def _relaxed(plan: _Plan, query: QueryAnalysis, deadline: Deadline) -> list[Light]:
    groups = query.groups[:MAX_SCORED_GROUPS]
    frequencies = []
    for group in groups:
        deadline.check("sqlite search")
        frequencies.append((plan.document_frequency(group), group))
    present = [(df, g) for df, g in frequencies if df > 0]
    plan.trace.dropped_terms = [g.surface for df, g in frequencies if df == 0]
    if not present:
        return []
    present.sort(key=lambda pair: pair[0])
    rare = [g for df, g in present if df < DF_CAP][:MAX_RELAXED_GROUPS]
    lists = []
    if rare:
        lists.append(plan.ranked("relaxed_rare", " OR ".join(g.fts() for g in rare), with_terms=True))
    if len(rare) < MAX_RELAXED_GROUPS:
        # Common groups are too frequent to rank by bm25 within bounds; take the newest
        # rows that contain them and let the group count decide.
        common = [g for df, g in present if df >= DF_CAP][: MAX_RELAXED_GROUPS - len(rare)]
        if common:
            expr = " OR ".join(g.fts() for g in common)
            lists.append(plan.ranked("relaxed_common", expr, with_terms=True, by_rank=False))
    cands = _fuse(lists)
    total = len(query.groups)
    kept = []
    for cand in cands:
        matched = sum(1 for g in groups if g.present(cand.hay, ""))
        if matched:
            cand.score = matched / total
            cand.density = matched / cand.nterms
            kept.append(cand)
    return kept


def search(conn: sqlite3.Connection, request: Request, deadline: Deadline, trace: Trace) -> list[Candidate]:
    """Run the plan for ``request`` on ``conn``; best first, at most ``request.result_limit``."""
    query = analyze_query(request.text)
    trace.terms = [g.surface for g in query.groups]
    if not query.groups:
        trace.selected = "recent"
        return _recent(conn, request)
    plan = _Plan(conn, request, trace)
    chosen: list[Light] = []
    if 2 <= len(query.stream) <= MAX_PHRASE_TOKENS:
        chosen = _all_present(plan, "exact_phrase", query, 'terms : "' + " ".join(query.stream) + '"')
        trace.exact = len(chosen)
        if chosen:
            trace.selected = "exact"
    if not chosen and len(query.groups) <= MAX_STRICT_GROUPS:
        deadline.check("sqlite search")
        chosen = _all_present(plan, "strict_all_terms", query, " AND ".join(g.fts() for g in query.groups))
        trace.strict = len(chosen)
        if chosen:
            trace.selected = "strict"
    if not chosen:
        deadline.check("sqlite search")
        chosen = _relaxed(plan, query, deadline)
        trace.relaxed = len(chosen)
        trace.selected = "relaxed" if chosen else "none"
    _order(chosen)
    hits = _load(conn, chosen[: request.result_limit])
    return excerpt_candidates(request.text, hits)
