"""The SQLite provider's staged recall, expressed with PostgreSQL full-text search and ``pg_trgm``.

Text and queries are analysed by the SQLite provider's analyzer (``paxm_provider_sqlite.
retrieval.analyzer``), so identifiers, versions, CJK and morphology behave identically.  The
analysed term stream is stored as a positional ``tsvector`` (built here, lexemes verbatim: no
text-search dictionary runs, as with the ``simple`` configuration but without its parser
splitting ``provider_search_timeout`` apart) under a GIN index.

Stages, first non-empty wins (see the SQLite ``retrieval/search.py`` for the reasoning):

0. ``verbatim``: query tokens too long for the term index (hashes, base64) found as
   substrings through the ``pg_trgm`` GIN index.
1. ``exact``: the query's whole canonical stream as a phrase.
2. ``strict``: every query group present.
3. ``relaxed``: any informative group; score = matched groups / all groups.

Every statement is a bounded index lookup (GIN on ``tsv``/``text``, btree on ``created_at``
or the primary key); ``tests/test_plans.py`` runs ``EXPLAIN`` on each one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from paxm_core import Deadline
from paxm_provider_sqlite.retrieval.analyzer import Group, IndexedText, QueryAnalysis, analyze_query

if TYPE_CHECKING:
    import psycopg

    from paxm_provider_postgres.db import Database

__all__ = ["RAW_SCORE_KIND", "Query", "Row", "Trace", "search", "tsquery_of", "tsvector_text"]

RAW_SCORE_KIND = "postgres_ts_rank"
RRF_K = 60
MAX_PHRASE_TOKENS = 24
MAX_STRICT_GROUPS = 12
MAX_RELAXED_GROUPS = 8
MAX_SCORED_GROUPS = 64
DF_CAP = 256
RELAXED_RANK_BUDGET = 768
#: tsvector limits: positions above 16383 are clamped, at most 256 positions per lexeme.
_MAX_POS = 16383
_MAX_POSITIONS = 255
#: A whitespace-free run this long is not in the term index (see the analyzer's _MAX_PART).
_VERBATIM = re.compile(r"[A-Za-z0-9+/=_\-.:]{65,}")
_ROW = "m.id, m.text, m.source, m.metadata, m.created_at, m.tier, m.expires_at, m.scope"


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_text(indexed: IndexedText) -> str:
    """The ``tsvector`` literal of an analysed memory: stream terms at their positions, then extras."""
    positions: dict[str, list[int]] = {}
    pos = 0
    for pos, token in enumerate(indexed.terms.split(), start=1):
        slots = positions.setdefault(token, [])
        p = min(pos, _MAX_POS)
        if len(slots) < _MAX_POSITIONS and (not slots or slots[-1] != p):
            slots.append(p)
    for offset, token in enumerate(indexed.extras.split(), start=pos + 2):
        slots = positions.setdefault(token, [])
        p = min(offset, _MAX_POS)
        if len(slots) < _MAX_POSITIONS and p not in slots:
            slots.append(p)
    return " ".join(f"{_lexeme(t)}:{','.join(map(str, sorted(ps)))}" for t, ps in positions.items())


def tsquery_of(group: Group) -> str:
    """One query group as ``tsquery`` text (alternatives OR-ed, a CJK bigram as a phrase)."""
    if group.phrase:
        return "(" + " <-> ".join(_lexeme(t) for t in group.phrase) + ")"
    if len(group.tokens) == 1:
        return _lexeme(group.tokens[0])
    return "(" + " | ".join(_lexeme(t) for t in group.tokens) + ")"


@dataclass(frozen=True)
class Query:
    """What the provider asks of the pipeline (the visible scopes are never caller-supplied)."""

    text: str
    scopes: tuple[str, ...]
    limit: int = 0
    tiers: tuple[str, ...] = ()
    workspace: str = ""
    filters: dict[str, str] = field(default_factory=dict)

    @property
    def result_limit(self) -> int:
        return self.limit if self.limit > 0 else 50

    @property
    def candidate_limit(self) -> int:
        return max(50, self.limit * 5) if self.limit > 0 else 50


@dataclass
class Row:
    """A loaded memory with its stage score."""

    id: str
    text: str
    source: str
    metadata: dict[str, Any]
    created_at: datetime
    tier: str
    expires_at: datetime | None
    scope: str
    raw_score: float | None = None
    score: float = 0.0
    extra_metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class Trace:
    """What each step of one search found (diagnostics, never on the wire)."""

    terms: list[str] = field(default_factory=list)
    dropped_terms: list[str] = field(default_factory=list)
    branches: dict[str, int] = field(default_factory=dict)
    selected: str = ""


class _Light:
    """A candidate before its row is loaded."""

    __slots__ = ("id", "raw", "created", "nterms", "hay", "rrf", "score", "density", "_tokens")

    def __init__(self, row: Sequence[Any], rank: int) -> None:
        self.id = str(row[0])
        self.raw = float(row[1]) if row[1] is not None else None
        self.created = float(row[2])
        self.nterms = max(1, int(row[3] or 0))
        self.hay = f" {row[4]} {row[5]} "
        self.rrf = 1.0 / (RRF_K + rank + 1)
        self.score = 1.0
        self.density = 0.0
        self._tokens: set[str] | None = None

    def has(self, group: Group) -> bool:
        if self._tokens is None:
            self._tokens = set(self.hay.split())
        return group.present(self.hay, self._tokens)


class _Plan:
    def __init__(self, conn: psycopg.Connection[Any], db: Database, query: Query, trace: Trace) -> None:
        self.conn = conn
        self.db = db
        self.query = query
        self.trace = trace
        self.table = f'"{db.settings.schema}".paxm_memories'
        self.where, self.args = where_clause(query)

    def run(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self.db.log(sql, params)
        return self.conn.execute(sql, params).fetchall()

    def ranked(
        self, name: str, tsquery: str, *, by_rank: bool = True, limit: int = 0, walk_recent: bool = True
    ) -> list[_Light]:
        rank = "ts_rank(m.tsv, %(q)s::tsquery, 1)" if by_rank else "NULL::real"
        # Ties break as SQLite's do: rank ties by insertion order, newest-first by insertion too.
        # ``walk_recent=False`` hides the recency order from the planner (an expression no index
        # provides): a phrase's frequency is badly over-estimated, and walking the recency index
        # for a phrase that matches nothing reads the whole index; the GIN lookup plus a small
        # sort is bounded by the phrase's matches.
        hidden = "(m.created_at + interval '0 s') DESC, (m.seq + 0) DESC"
        newest = "m.created_at DESC, m.seq DESC" if walk_recent else hidden
        order = f"{rank} DESC, m.created_at DESC, m.seq" if by_rank else newest
        rows = self.run(
            f"""SELECT m.id, {rank}, extract(epoch FROM m.created_at), m.nterms, m.terms, m.extras
                FROM {self.table} AS m WHERE m.tsv @@ %(q)s::tsquery AND {self.where}
                ORDER BY {order} LIMIT %(limit)s""",
            {**self.args, "q": tsquery, "limit": limit or self.query.candidate_limit},
        )
        self.trace.branches[name] = len(rows)
        return [_Light(row, i) for i, row in enumerate(rows)]

    def document_frequencies(self, groups: Sequence[Group]) -> list[int]:
        """Capped document frequency of each group, all probed in one round trip."""
        # Ordered by recency so a common term walks the created_at index and stops at the cap
        # rather than reading its whole posting list.
        probes = ", ".join(
            f"""(SELECT count(*) FROM (SELECT 1 FROM {self.table} AS m
                WHERE m.tsv @@ %(q{i})s::tsquery AND m.scope = ANY(%(scopes)s)
                ORDER BY m.created_at DESC LIMIT {DF_CAP}) AS hits{i})"""
            for i in range(len(groups))
        )
        params: dict[str, Any] = {"scopes": list(self.query.scopes)}
        params.update({f"q{i}": tsquery_of(g) for i, g in enumerate(groups)})
        rows = self.run(f"SELECT {probes}", params)
        return [int(v) for v in rows[0]]


def where_clause(query: Query) -> tuple[str, dict[str, Any]]:
    """Conditions every candidate satisfies (alias ``m``): visible scope, unexpired, tiers, workspace, filters."""
    clauses = ["m.scope = ANY(%(scopes)s)", "(m.expires_at IS NULL OR m.expires_at > now())"]
    args: dict[str, Any] = {"scopes": list(query.scopes)}
    if query.tiers:
        clauses.append("m.tier = ANY(%(tiers)s)")
        args["tiers"] = list(query.tiers)
    if query.workspace:
        bare = query.workspace.rstrip("/") or query.workspace
        # a project root also covers the directories below it (memories stored under the older
        # exact-directory rule); starts_with compares code points, whatever the collation
        clauses.append(
            "(COALESCE(m.metadata->>'workspace', '') = ANY(%(workspaces)s)"
            " OR starts_with(COALESCE(m.metadata->>'workspace', ''), %(workspace_prefix)s))"
        )
        args["workspaces"] = ["", bare]
        args["workspace_prefix"] = bare + "/"
    if query.filters:
        clauses.append("m.metadata @> %(filters)s::jsonb")
        args["filters"] = json.dumps(query.filters)
    return " AND ".join(clauses), args


def _fuse(lists: Sequence[Sequence[_Light]]) -> list[_Light]:
    merged: dict[str, _Light] = {}
    for items in lists:
        for cand in items:
            seen = merged.get(cand.id)
            if seen is None:
                merged[cand.id] = cand
            else:
                seen.rrf += cand.rrf
                if cand.raw is not None and (seen.raw is None or cand.raw > seen.raw):
                    seen.raw = cand.raw
    return list(merged.values())


def _order(cands: list[_Light]) -> None:
    cands.sort(key=lambda c: c.created, reverse=True)
    cands.sort(key=lambda c: (c.score, c.density, c.rrf, c.raw if c.raw is not None else -math.inf), reverse=True)


def _rows(raw: list[tuple[Any, ...]]) -> list[Row]:
    return [Row(str(r[0]), r[1], r[2] or "", dict(r[3] or {}), r[4], r[5] or "", r[6], r[7]) for r in raw]


def _load(plan: _Plan, chosen: list[_Light]) -> list[Row]:
    if not chosen:
        return []
    rows = plan.run(f"SELECT {_ROW} FROM {plan.table} AS m WHERE m.id = ANY(%(ids)s)", {"ids": [c.id for c in chosen]})
    by_id = {row.id: row for row in _rows(rows)}
    out = []
    for light in chosen:
        row = by_id.get(light.id)
        if row is not None:
            row.score, row.raw_score = light.score, light.raw
            out.append(row)
    return out


def _recent(plan: _Plan) -> list[Row]:
    rows = _rows(
        plan.run(
            f"""SELECT {_ROW} FROM {plan.table} AS m WHERE {plan.where}
                ORDER BY m.created_at DESC, m.seq DESC LIMIT %(limit)s""",
            {**plan.args, "limit": plan.query.result_limit},
        )
    )
    for row in rows:
        row.score = 0.1
    return rows


def _verbatim(plan: _Plan) -> list[Row]:
    tokens = list(dict.fromkeys(_VERBATIM.findall(plan.query.text)))[:4]
    if not tokens:
        return []
    likes = " AND ".join(f"m.text LIKE %(v{i})s" for i in range(len(tokens)))
    args = {f"v{i}": "%" + re.sub(r"([\\%_])", r"\\\1", t) + "%" for i, t in enumerate(tokens)}
    rows = _rows(
        plan.run(
            f"SELECT {_ROW} FROM {plan.table} AS m WHERE {likes} AND {plan.where} LIMIT %(limit)s",
            {**plan.args, **args, "limit": plan.query.candidate_limit},
        )
    )
    plan.trace.branches["verbatim"] = len(rows)
    for row in rows:
        row.score = 1.0
    rows.sort(key=lambda r: r.created_at, reverse=True)
    return rows


def _strict(plan: _Plan, query: QueryAnalysis, frequencies: list[tuple[int, Group]]) -> tuple[str, list[_Light]]:
    if any(df == 0 for df, _ in frequencies):
        return "", []
    rare = [g for df, g in sorted(frequencies, key=lambda p: p[0]) if df < DF_CAP]
    common = [g for df, g in frequencies if df >= DF_CAP]
    phrase_ok = 2 <= len(query.stream) <= MAX_PHRASE_TOKENS
    if rare:
        cands = plan.ranked("strict_all_terms", " & ".join(tsquery_of(g) for g in rare), limit=DF_CAP)
        if common:
            cands = [c for c in cands if all(c.has(g) for g in common)]
        cands = cands[: plan.query.candidate_limit]
    else:
        if phrase_ok:
            phrase = " <-> ".join(_lexeme(t) for t in query.stream)
            padded = " " + " ".join(query.stream) + " "
            # Positions are clamped in very long texts: confirm on the stored stream.
            found = plan.ranked("exact_phrase_common", phrase, by_rank=False, walk_recent=False)
            exact = [c for c in found if padded in c.hay]
            if exact:
                for cand in exact:
                    cand.density = len(query.groups) / cand.nterms
                return "exact", exact
        cands = plan.ranked("strict_common", " & ".join(tsquery_of(g) for g in common), by_rank=False)
    for cand in cands:
        cand.density = len(query.groups) / cand.nterms
    if not cands:
        return "", []
    if phrase_ok:
        padded = " " + " ".join(query.stream) + " "
        exact = [c for c in cands if padded in c.hay]
        plan.trace.branches["exact_phrase"] = len(exact)
        if exact:
            return "exact", exact
    return "strict", cands


def _weight(df: int) -> float:
    return math.log(1.0 + DF_CAP / max(1, df))


def _relaxed(plan: _Plan, query: QueryAnalysis, frequencies: list[tuple[int, Group]]) -> list[_Light]:
    groups = [g for _, g in frequencies]
    present = sorted(((df, g) for df, g in frequencies if df > 0), key=lambda p: p[0])
    plan.trace.dropped_terms = [g.surface for df, g in frequencies if df == 0]
    if not present:
        return []
    rare: list[Group] = []
    budget = RELAXED_RANK_BUDGET
    for df, g in present:
        if df >= DF_CAP or len(rare) >= MAX_RELAXED_GROUPS or (rare and df > budget):
            break
        rare.append(g)
        budget -= df
    lists = []
    if rare:
        lists.append(plan.ranked("relaxed_rare", " | ".join(tsquery_of(g) for g in rare)))
    if len(rare) < MAX_RELAXED_GROUPS:
        common = [g for _, g in present if g not in rare][: MAX_RELAXED_GROUPS - len(rare)]
        if common:
            lists.append(plan.ranked("relaxed_common", " | ".join(tsquery_of(g) for g in common), by_rank=False))
    cands = _fuse(lists)
    if len(query.groups) <= MAX_STRICT_GROUPS:
        scored = [(g, 1.0) for g in query.groups]
    else:
        scored = [(g, _weight(df)) for df, g in present[:MAX_RELAXED_GROUPS]]
    total = sum(w for _, w in scored)
    kept = []
    for cand in cands:
        matched = sum(1 for g in groups if cand.has(g))
        if not matched:
            continue
        cand.score = sum(w for g, w in scored if cand.has(g)) / total if total else 0.0
        cand.density = matched / cand.nterms
        kept.append(cand)
    return kept


def search(conn: psycopg.Connection[Any], db: Database, query: Query, deadline: Deadline, trace: Trace) -> list[Row]:
    """Run the staged plan; best first, at most ``query.result_limit`` rows (long ones whole)."""
    plan = _Plan(conn, db, query, trace)
    verbatim = _verbatim(plan)
    if verbatim:
        trace.selected = "verbatim"
        return verbatim[: query.result_limit]
    analysis = analyze_query(query.text)
    trace.terms = [g.surface for g in analysis.groups]
    if not analysis.groups:
        if "verbatim" in trace.branches:
            # The query was a long token that nothing contains: newest memories would be noise.
            trace.selected = "none"
            return []
        trace.selected = "recent"
        return _recent(plan)
    probed = analysis.groups
    if len(probed) > MAX_SCORED_GROUPS:
        probed = sorted(probed, key=lambda g: (g.salient, len(g.surface)), reverse=True)[:MAX_SCORED_GROUPS]
    deadline.check("postgres search")
    frequencies = list(zip(plan.document_frequencies(probed), probed, strict=True))
    chosen: list[_Light] = []
    if len(analysis.groups) <= MAX_STRICT_GROUPS:
        stage, chosen = _strict(plan, analysis, frequencies)
        if chosen:
            trace.selected = stage
    if not chosen:
        deadline.check("postgres search")
        chosen = _relaxed(plan, analysis, frequencies)
        trace.selected = "relaxed" if chosen else "none"
    _order(chosen)
    return _load(plan, chosen[: query.result_limit])
