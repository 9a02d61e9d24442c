"""The SQLite provider's staged recall on PostgreSQL (``docs/providers/postgres.md``, Retrieval).

The SQLite analyzer's term stream is stored as a positional ``tsvector`` (lexemes verbatim) under
GIN, and the SQLite stages run on this module's plan, so both stores rank alike; a ``verbatim``
stage (tokens too long for the term index, through ``pg_trgm``) comes first.  Every statement is
a bounded index lookup (``tests/test_plans.py`` checks each ``EXPLAIN``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paxm_core import Deadline
from paxm_provider_sqlite.retrieval.analyzer import Group, IndexedText, analyze_query
from paxm_provider_sqlite.retrieval.frequency import DF_CAP
from paxm_provider_sqlite.retrieval.model import Candidate, Request, Trace
from paxm_provider_sqlite.retrieval.search import (
    MAX_STRICT_GROUPS,
    Light,
    load_candidates,
    order_candidates,
    probed_groups,
    relaxed_stage,
    strict_stage,
)

if TYPE_CHECKING:
    import psycopg

    from paxm_provider_postgres.db import Database

__all__ = ["RAW_SCORE_KIND", "STAMP", "search", "tsquery_of", "tsvector_text"]

RAW_SCORE_KIND = "postgres_ts_rank"
#: tsvector limits: positions above 16383 are clamped, at most 256 positions per lexeme.
_MAX_POS = 16383
_MAX_POSITIONS = 255
#: A whitespace-free run this long is not in the term index (see the analyzer's _MAX_PART).
_VERBATIM = re.compile(r"[A-Za-z0-9+/=_\-.:]{65,}")
#: A timestamp column as the SQLite provider's fixed-width UTC text (its string order is time order).
STAMP = """to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
#: The SQLite provider's ``ROW_COLUMNS``, so rows load into its ``Candidate`` (keyed by ``seq``).
_ROW = (
    f"m.seq, m.id, m.text, m.source, m.metadata::text, {STAMP.format('m.created_at')}, m.tier,"
    f" COALESCE({STAMP.format('m.expires_at')}, '')"
)


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


class _Plan:
    """The shared stages' :class:`~paxm_provider_sqlite.retrieval.search.StagePlan` on PostgreSQL."""

    def __init__(
        self, conn: psycopg.Connection[Any], db: Database, request: Request, scopes: Sequence[str], trace: Trace
    ) -> None:
        self.conn = conn
        self.db = db
        self.request = request
        self.scopes = list(scopes)
        self.trace = trace
        self.table = f'"{db.settings.schema}".paxm_memories'
        self.where, self.args = where_clause(request, self.scopes)
        #: The memory id of each candidate's ``seq`` (candidates are keyed by ``seq``, rows load by id).
        self.ids: dict[int, str] = {}

    def run(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        self.db.log(sql, params)
        return self.conn.execute(sql, params).fetchall()

    def ranked(
        self,
        name: str,
        expr: str,
        *,
        by_rank: bool = True,
        limit: int = 0,
        whole: bool = False,
        walk_recent: bool = True,
    ) -> list[Light]:
        """Candidates matching the ``tsquery`` ``expr``, with their term streams.

        ``whole`` is a SQLite hint and has no use here: chosen rows load by id in one statement.
        """
        rank = "ts_rank(m.tsv, %(q)s::tsquery, 1)" if by_rank else "NULL::real"
        # Ties break as SQLite's do: rank ties by insertion order, newest-first by insertion too.
        # ``walk_recent=False`` hides the recency order from the planner (an expression no index
        # provides): a phrase's frequency is badly over-estimated, and walking the recency index
        # for a phrase that matches nothing reads the whole index; the GIN lookup plus a small
        # sort is bounded by the phrase's matches.
        hidden = "(m.created_at + interval '0 s') DESC, (m.seq + 0) DESC"
        newest = "m.created_at DESC, m.seq DESC" if walk_recent else hidden
        order = f"{rank} DESC, m.created_at DESC, m.seq" if by_rank else newest
        # The rank is negated into the candidate row: ``Light`` reads a lower-is-better rank (bm25).
        rows = self.run(
            f"""SELECT m.seq, -{rank}, {STAMP.format("m.created_at")}, m.nterms, m.terms, m.extras, m.id
                FROM {self.table} AS m WHERE m.tsv @@ %(q)s::tsquery AND {self.where}
                ORDER BY {order} LIMIT %(limit)s""",
            {**self.args, "q": expr, "limit": limit or self.request.candidate_limit},
        )
        self.trace.branches[name] = len(rows)
        self.ids.update((int(row[0]), str(row[6])) for row in rows)
        return [Light(row[:6], i) for i, row in enumerate(rows)]

    def all_of(self, groups: Sequence[Group]) -> str:
        """``tsquery``: every group."""
        return " & ".join(tsquery_of(g) for g in groups)

    def any_of(self, groups: Sequence[Group]) -> str:
        """``tsquery``: any group."""
        return " | ".join(tsquery_of(g) for g in groups)

    def exact_phrase(self, stream: Sequence[str]) -> list[Light]:
        """A ``<->`` phrase, confirmed on the stored stream (positions are clamped in very long texts)."""
        phrase = " <-> ".join(_lexeme(t) for t in stream)
        padded = " " + " ".join(stream) + " "
        found = self.ranked("exact_phrase_common", phrase, by_rank=False, walk_recent=False)
        return [c for c in found if padded in c.hay]

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
        params: dict[str, Any] = {"scopes": self.scopes}
        params.update({f"q{i}": tsquery_of(g) for i, g in enumerate(groups)})
        rows = self.run(f"SELECT {probes}", params)
        return [int(v) for v in rows[0]]


def where_clause(query: Request, scopes: list[str]) -> tuple[str, dict[str, Any]]:
    """Conditions every candidate satisfies (alias ``m``): visible scope, unexpired, tiers, workspace, filters."""
    clauses = ["m.scope = ANY(%(scopes)s)", "(m.expires_at IS NULL OR m.expires_at > now())"]
    args: dict[str, Any] = {"scopes": scopes}
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


def _rows(raw: list[tuple[Any, ...]], score: float) -> list[Candidate]:
    out = [Candidate.from_row(row) for row in raw]
    for cand in out:
        cand.score = score
    return out


def _load(plan: _Plan, chosen: list[Light]) -> list[Candidate]:
    if not chosen:
        return []
    ids = [plan.ids[c.rowid] for c in chosen]
    rows = plan.run(f"SELECT {_ROW} FROM {plan.table} AS m WHERE m.id = ANY(%(ids)s)", {"ids": ids})
    return load_candidates(chosen, {int(row[0]): row for row in rows})


def _recent(plan: _Plan) -> list[Candidate]:
    sql = f"""SELECT {_ROW} FROM {plan.table} AS m WHERE {plan.where}
              ORDER BY m.created_at DESC, m.seq DESC LIMIT %(limit)s"""
    return _rows(plan.run(sql, {**plan.args, "limit": plan.request.result_limit}), 0.1)


def _verbatim(plan: _Plan) -> list[Candidate]:
    tokens = list(dict.fromkeys(_VERBATIM.findall(plan.request.text)))[:4]
    if not tokens:
        return []
    likes = " AND ".join(f"m.text LIKE %(v{i})s" for i in range(len(tokens)))
    args = {f"v{i}": "%" + re.sub(r"([\\%_])", r"\\\1", t) + "%" for i, t in enumerate(tokens)}
    rows = _rows(
        plan.run(
            f"SELECT {_ROW} FROM {plan.table} AS m WHERE {likes} AND {plan.where} LIMIT %(limit)s",
            {**plan.args, **args, "limit": plan.request.candidate_limit},
        ),
        1.0,
    )
    plan.trace.branches["verbatim"] = len(rows)
    rows.sort(key=lambda r: r.created_at, reverse=True)
    return rows


def search(
    conn: psycopg.Connection[Any],
    db: Database,
    request: Request,
    scopes: Sequence[str],
    deadline: Deadline,
    trace: Trace,
) -> list[Candidate]:
    """Run the staged plan over the visible ``scopes``; best first, at most ``request.result_limit``.

    Long hits come back whole; the provider excerpts them.
    """
    plan = _Plan(conn, db, request, scopes, trace)
    verbatim = _verbatim(plan)
    if verbatim:
        trace.selected = "verbatim"
        return verbatim[: request.result_limit]
    analysis = analyze_query(request.text)
    trace.terms = [g.surface for g in analysis.groups]
    if not analysis.groups:
        if "verbatim" in trace.branches:
            # The query was a long token that nothing contains: newest memories would be noise.
            trace.selected = "none"
            return []
        trace.selected = "recent"
        return _recent(plan)
    probed = probed_groups(analysis)
    deadline.check("postgres search")
    frequencies = list(zip(plan.document_frequencies(probed), probed, strict=True))
    chosen: list[Light] = []
    if len(analysis.groups) <= MAX_STRICT_GROUPS:
        stage, chosen = strict_stage(plan, analysis, frequencies)
        if chosen:
            trace.selected = stage
    if not chosen:
        deadline.check("postgres search")
        chosen = relaxed_stage(plan, analysis, frequencies)
        trace.selected = "relaxed" if chosen else "none"
    order_candidates(chosen)
    return _load(plan, chosen[: request.result_limit])
