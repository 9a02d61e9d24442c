"""The retrieval plan: staged, index-driven candidate generation, stage selection and ranking.

Stages run in order (exact phrase, strict: every group, relaxed: any informative group) and the
first non-empty one wins, so a weaker match never outranks or pads out a stronger one
(``docs/sqlite-provider.md``, Stages).  Every step is an FTS5 lookup with a ``LIMIT``, so the
cost follows the matches, not the table size.  The stages know no SQL: they ask a
:class:`StagePlan`, and the Postgres provider runs them on its own plan, so both rank alike.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from typing import Protocol

from paxm_core import Deadline
from paxm_core.api.timefmt import utcnow
from paxm_provider_sqlite.retrieval.analyzer import Group, QueryAnalysis, analyze_query
from paxm_provider_sqlite.retrieval.conversation import with_amendment, with_settled_turns
from paxm_provider_sqlite.retrieval.frequency import DF_CAP, probe
from paxm_provider_sqlite.retrieval.model import ROW_COLUMNS, Candidate, Request, Trace
from paxm_provider_sqlite.retrieval.ranking import (
    SUPERSEDE_AFTER,
    SUPERSEDE_BAND,
    SUPERSEDE_WINDOW,
    answer_terms,
    asks,
    only_asks,
    rerank,
)
from paxm_provider_sqlite.timestamps import parse_stamp, stamp

__all__ = [
    "DF_CAP",
    "Light",
    "StagePlan",
    "filter_clause",
    "load_candidates",
    "order_candidates",
    "probed_groups",
    "relaxed_stage",
    "search",
    "strict_stage",
]

RRF_K = 60
#: Longest canonical stream tried as an exact phrase (longer prompts are never verbatim memories).
MAX_PHRASE_TOKENS = 24
#: Most groups a strict all-terms query may have; beyond this only relaxed matching makes sense.
MAX_STRICT_GROUPS = 12
#: Groups used to generate relaxed candidates (the rarest ones).
MAX_RELAXED_GROUPS = 8
#: Most groups probed and scored per query (a long prompt keeps its 64 likeliest-distinctive words).
MAX_SCORED_GROUPS = 64
#: Most rows the relaxed stage ranks with bm25 (the sum of its rare groups' frequencies).
RELAXED_RANK_BUDGET = 768
#: A short query's relaxed candidate needs this share of the best candidate's coverage (the
#: rarity-weighted share of the query's groups it holds); below it, it matched in passing.
COVERAGE_SHARE = 0.5


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
        # "/repo/a" and "/repo/a/" name the same workspace, and a project root also covers the
        # directories below it: memories stored when the workspace was the exact directory
        # ("/repo/a/src") stay visible from the project ("/repo/a").  A half-open range rather
        # than LIKE: no wildcard escaping, no case folding, and an expression index could serve it
        # ("0" is the character after "/").
        bare = request.workspace.rstrip("/") or request.workspace
        ws = "COALESCE(json_extract(m.metadata_json, '$.workspace'), '')"
        clauses.append(f"({ws} IN ('', ?) OR ({ws} >= ? AND {ws} < ?))")
        args.extend((bare, bare + "/", bare + "0"))
    for key, value in sorted(request.filters.items()):
        clauses.append("json_extract(m.metadata_json, ?) = ?")
        args.extend((_json_path(key), value))
    return " AND ".join(clauses), args


class StagePlan(Protocol):
    """What the stages ask of a backend: candidate queries and its match-expression syntax."""

    request: Request
    trace: Trace

    def ranked(self, name: str, expr: str, *, by_rank: bool = True, limit: int = 0, whole: bool = False) -> list[Light]:
        """Candidates matching ``expr`` with their term streams, best rank first (newest first when not ``by_rank``)."""
        ...

    def all_of(self, groups: Sequence[Group]) -> str:
        """A match expression requiring every group."""
        ...

    def any_of(self, groups: Sequence[Group]) -> str:
        """A match expression requiring any group."""
        ...

    def exact_phrase(self, stream: Sequence[str]) -> list[Light]:
        """Newest candidates holding the canonical ``stream`` as a phrase (branch ``exact_phrase_common``)."""
        ...


class _Plan:
    def __init__(self, conn: sqlite3.Connection, request: Request, trace: Trace) -> None:
        self.conn = conn
        self.request = request
        self.trace = trace
        self.where, self.args = filter_clause(request)

    def ranked(self, name: str, expr: str, *, by_rank: bool = True, limit: int = 0, whole: bool = False) -> list[Light]:
        """Candidates matching ``expr`` with their term streams; ``whole`` also fetches the rows' stored columns.

        ``whole`` is for queries known to match at most a result's worth of rows: loading them
        here saves ``_load`` its own statement (a third of a rare hit's SQL time).
        """
        cols = f"m.rowid, {'bm25(memory_terms)' if by_rank else 'NULL'}, m.created_at, m.nterms, m.terms, m.extras"
        if whole:
            cols += ", " + _WHOLE_COLUMNS
        # Newest-first must follow the FTS5 table's own rowid order: ordering by the joined
        # table's rowid makes SQLite sort every match (a full scan for common terms).
        order = "ORDER BY bm25(memory_terms), m.created_at DESC" if by_rank else "ORDER BY memory_terms.rowid DESC"
        rows = self.conn.execute(
            f"""SELECT {cols} FROM memory_terms JOIN memories AS m ON m.rowid = memory_terms.rowid
                WHERE memory_terms MATCH ? AND {self.where} {order} LIMIT ?""",
            (expr, *self.args, limit or self.request.candidate_limit),
        ).fetchall()
        self.trace.branches[name] = len(rows)
        return [Light(row, rank) for rank, row in enumerate(rows)]

    def all_of(self, groups: Sequence[Group]) -> str:
        return " AND ".join(g.fts() for g in groups)

    def any_of(self, groups: Sequence[Group]) -> str:
        return " OR ".join(g.fts() for g in groups)

    def exact_phrase(self, stream: Sequence[str]) -> list[Light]:
        expr = 'terms : "' + " ".join(stream) + '"'
        return self.ranked("exact_phrase_common", expr, by_rank=False)


#: The stored columns a ``whole`` candidate query adds after ``terms, extras`` (index 6 on).
_WHOLE_COLUMNS = "m.id, m.text, m.source, m.metadata_json, m.tier, m.expires_at"


class Light:
    """A candidate before its row is loaded: what ranking needs and nothing more.

    ``row`` is ``(rowid, rank, created_at, nterms, terms, extras[, ROW_COLUMNS 1..])``: an
    integer key, a lower-is-better rank (bm25) or ``None``, fixed-width UTC text.
    """

    __slots__ = ("rowid", "raw", "created_at", "nterms", "hay", "rrf", "score", "density", "coverage", "_tokens", "row")

    def __init__(self, row: Sequence[object], rank: int) -> None:
        self.rowid = int(row[0])  # type: ignore[call-overload]
        self.raw = -float(row[1]) if row[1] is not None else None  # type: ignore[arg-type]
        self.created_at = str(row[2])
        self.nterms = max(1, int(row[3] or 0))  # type: ignore[call-overload]
        self.hay = f" {row[4]} {row[5]} "
        self.rrf = 1.0 / (RRF_K + rank + 1)
        self.score = 1.0
        self.density = 0.0
        #: Share of the query's rarity weight (idf) the candidate holds (relaxed stage only).
        self.coverage = 1.0
        self._tokens: set[str] | None = None
        #: The whole row in ``ROW_COLUMNS`` order when the candidate query fetched it.
        self.row: tuple[object, ...] | None = None
        if len(row) > 6:
            ident, text, source, meta, tier, expires = row[6:12]
            self.row = (row[0], ident, text, source, meta, row[2], tier, expires)

    def tokens(self) -> set[str]:
        """The distinct tokens of the candidate's stored term streams."""
        if self._tokens is None:
            self._tokens = set(self.hay.split())
        return self._tokens

    def has(self, group: Group) -> bool:
        return group.present(self.hay, self.tokens())


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
                if cand.raw is not None and (seen.raw is None or cand.raw > seen.raw):
                    seen.raw = cand.raw
    return list(merged.values())


def order_candidates(cands: list[Light]) -> None:
    """Sort best first: score, density, fused rank, raw score, then newest."""
    # created_at is fixed-width text, so the string order is the time order.
    cands.sort(key=lambda c: c.created_at, reverse=True)
    cands.sort(key=lambda c: (c.score, c.density, c.rrf, c.raw if c.raw is not None else -math.inf), reverse=True)


def _load(conn: sqlite3.Connection, chosen: list[Light]) -> list[Candidate]:
    if not chosen:
        return []
    by_id: dict[int, tuple[object, ...]] = {}
    wanted = []
    for light in chosen:
        if light.row is not None:
            by_id[light.rowid] = light.row
        else:
            wanted.append(light.rowid)
    if wanted:
        marks = ",".join("?" * len(wanted))
        rows = conn.execute(f"SELECT {ROW_COLUMNS} FROM memories AS m WHERE m.rowid IN ({marks})", wanted)
        by_id.update((int(row[0]), row) for row in rows)
    return load_candidates(chosen, by_id)


def load_candidates(chosen: list[Light], by_id: dict[int, tuple[object, ...]]) -> list[Candidate]:
    """The loaded rows (``ROW_COLUMNS`` order, keyed by rowid) of ``chosen``, in its order, with their scores."""
    out = []
    for light in chosen:
        row = by_id.get(light.rowid)
        if row is None:
            continue
        cand = Candidate.from_row(row, light.raw)
        cand.score, cand.rrf, cand.density = light.score, light.rrf, light.density
        out.append(cand)
    return out


#: Longest answer (in indexed terms) checked for only saying the question back: an echo is a
#: sentence or two, and the check reads and analyses the stored text.
ECHO_MAX_TERMS = 40


def _asking_texts(conn: sqlite3.Connection, cands: list[Light], groups: Sequence[Group]) -> dict[int, str]:
    """Stored text of the ranking head's short turns that ask and are answered with a query word.

    ``ranking.echoes`` reads them: such an answer may only say the question back.
    """
    head = [
        c
        for c in cands[:SUPERSEDE_WINDOW]
        if answer_terms(c.hay) <= ECHO_MAX_TERMS and asks(c.hay) and not only_asks(c.hay, groups)
    ]
    texts = {c.rowid: str(c.row[2]) for c in head if c.row is not None}
    wanted = [c.rowid for c in head if c.row is None]
    if wanted:
        marks = ",".join("?" * len(wanted))
        rows = conn.execute(f"SELECT rowid, text FROM memories WHERE rowid IN ({marks})", wanted)
        texts.update((int(row[0]), str(row[1])) for row in rows)
    return texts


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


def strict_stage(
    plan: StagePlan, query: QueryAnalysis, frequencies: list[tuple[int, Group]]
) -> tuple[str, list[Light]]:
    """Strict all-groups candidates, narrowed to the exact-phrase ones when there are any.

    FTS5's bm25 counts every document of every term it ranks, which costs milliseconds for
    a term in most rows.  So only the rare groups are matched (and ranked) by FTS5; the common
    ones are checked on the candidates' stored term streams.  With no rare group at all the
    newest matching rows are taken, unranked.  Exact phrase implies all groups, so the phrase
    is checked on the strict candidates' term streams too (an FTS5 phrase over common tokens
    reads every position list).
    """
    if any(df == 0 for df, _ in frequencies):
        return "", []
    rare = [g for df, g in sorted(frequencies, key=lambda p: p[0]) if df < DF_CAP]
    common = [g for df, g in frequencies if df >= DF_CAP]
    if rare:
        # The AND matches at most the rarest group's rows: when that fits in one result,
        # every candidate is likely returned, so fetch the rows with the candidates.
        whole = min(df for df, _ in frequencies) <= plan.request.result_limit
        cands = plan.ranked("strict_all_terms", plan.all_of(rare), limit=DF_CAP, whole=whole)
        if common:
            cands = [c for c in cands if all(c.has(g) for g in common)]
        cands = cands[: plan.request.candidate_limit]
    else:
        if 2 <= len(query.stream) <= MAX_PHRASE_TOKENS:
            # Newest-first strict rows could all be non-phrase rows while an older row holds
            # the exact phrase, so with only common groups ask the index for the phrase directly.
            exact = plan.exact_phrase(query.stream)
            if exact:
                for cand in exact:
                    cand.density = len(query.groups) / cand.nterms
                return "exact", exact
        cands = plan.ranked("strict_common", plan.all_of(common), by_rank=False)
    groups = len(query.groups)
    for cand in cands:
        cand.density = groups / cand.nterms
    if not cands:
        return "", []
    if 2 <= len(query.stream) <= MAX_PHRASE_TOKENS:
        phrase = " " + " ".join(query.stream) + " "
        exact = [c for c in cands if phrase in c.hay]
        plan.trace.branches["exact_phrase"] = len(exact)
        if exact:
            return "exact", exact
    return "strict", cands


def _weight(df: int) -> float:
    # idf with the probe cap standing in for the corpus size: rare groups weigh up to ~5.5,
    # groups at the cap ~0.7.
    return math.log(1.0 + DF_CAP / max(1, df))


def relaxed_stage(
    plan: StagePlan, query: QueryAnalysis, frequencies: list[tuple[int, Group]], *, common_rows: bool = True
) -> list[Light]:
    """Candidates holding any probed group, scored by the share of the query they hold.

    A short query scores every group alike; a long prompt weighs its rarest groups by rarity.
    Each candidate's ``coverage`` is set for :func:`_within_best_coverage`; ``common_rows=False``
    leaves out the newest-rows scan of common groups.
    """
    groups = [g for _, g in frequencies]
    present = [(df, g) for df, g in frequencies if df > 0]
    if not present:
        return []
    present.sort(key=lambda pair: pair[0])
    # The rarest groups, while their documents (each one ranked by bm25) stay few.
    rare: list[Group] = []
    budget = RELAXED_RANK_BUDGET
    for df, g in present:
        if df >= DF_CAP or len(rare) >= MAX_RELAXED_GROUPS or (rare and df > budget):
            break
        rare.append(g)
        budget -= df
    lists = []
    if rare:
        lists.append(plan.ranked("relaxed_rare", plan.any_of(rare)))
    if common_rows and len(rare) < MAX_RELAXED_GROUPS:
        # Common groups are too frequent to rank by bm25 within bounds; take the newest
        # rows that contain them and let the group count decide.
        common = [g for df, g in present if g not in rare][: MAX_RELAXED_GROUPS - len(rare)]
        if common:
            lists.append(plan.ranked("relaxed_common", plan.any_of(common), by_rank=False))
    cands = _fuse(lists)
    if len(query.groups) <= MAX_STRICT_GROUPS:
        # A short query: upstream's rule, the share of query groups the memory contains.
        scored = [(g, 1.0) for g in query.groups]
    else:
        # A long prompt: coverage of its most informative groups, weighted by rarity, so a
        # memory sharing the prompt's one distinctive identifier beats one sharing filler.
        scored = [(g, _weight(df)) for df, g in present[:MAX_RELAXED_GROUPS]]
    total = sum(w for _, w in scored)
    # Coverage: a short query's groups (all of them probed, so all in ``groups``) weighted by
    # rarity; an absent group weighs most, and no candidate holds it.
    weighed = [(g, _weight(df)) for df, g in frequencies] if len(query.groups) <= MAX_STRICT_GROUPS else scored
    whole = sum(w for _, w in weighed)
    # Each candidate is tested against every probed group (up to 64 x 100 tests for a long
    # prompt), so the tests are flattened: a phrase is a substring test on the padded term
    # string, any other group a C-level set intersection.  Same answers as ``Group.present``.
    tested = list(groups)
    slot = {id(g): i for i, g in enumerate(tested)}
    for g, _ in scored:
        if id(g) not in slot:
            slot[id(g)] = len(tested)
            tested.append(g)
    tests = [(" " + " ".join(g.phrase) + " " if g.phrase else "", frozenset(g.tokens)) for g in tested]
    scored_slots = [(slot[id(g)], w) for g, w in scored]
    weighed_slots = [(slot[id(g)], w) for g, w in weighed]
    counted = len(groups)
    kept = []
    for cand in cands:
        hay, tokens = cand.hay, cand.tokens()
        flags = [(phrase in hay) if phrase else not tokens.isdisjoint(alts) for phrase, alts in tests]
        matched = sum(flags[:counted])
        if not matched:
            continue
        weight = sum(w for i, w in scored_slots if flags[i])
        cand.score = weight / total if total else 0.0
        cand.coverage = sum(w for i, w in weighed_slots if flags[i]) / whole if whole else 0.0
        cand.density = matched / cand.nterms
        kept.append(cand)
    return kept


def _within_best_coverage(cands: list[Light]) -> list[Light]:
    """The relaxed candidates holding :data:`COVERAGE_SHARE` of the best one's coverage or more.

    A memory sharing one word of a question ("production", "days") with the memory that holds
    most of it matched in passing: next to that memory it is noise, and a relative threshold
    downstream cannot tell it from a second answer when the scores are plain word shares.
    """
    if not cands:
        return cands
    floor = COVERAGE_SHARE * max(c.coverage for c in cands)
    return [c for c in cands if c.coverage >= floor]


def probed_groups(query: QueryAnalysis) -> list[Group]:
    """The groups whose document frequency is probed: all of them, or a long prompt's 64 likeliest-distinctive."""
    if len(query.groups) <= MAX_SCORED_GROUPS:
        return query.groups
    # A long prompt: its identifier parts, numbers, CJK, then longer words, rather than
    # whatever comes first.
    ranked = sorted(query.groups, key=lambda g: (g.salient, len(g.surface)), reverse=True)
    return ranked[:MAX_SCORED_GROUPS]


def _beyond_stage(
    plan: _Plan, query: QueryAnalysis, frequencies: list[tuple[int, Group]], chosen: list[Light], deadline: Deadline
) -> list[Light]:
    """Relaxed candidates an exact or strict stage left out that the ranking rules need.

    When every chosen turn only asks, the answer is among them; otherwise only the memories
    written :data:`SUPERSEDE_AFTER` or more after the oldest chosen one (a later correction
    rarely repeats every word of the question) with at least :data:`SUPERSEDE_BAND` of the
    query's groups.  A one-group query's relaxed stage is its strict stage: nothing to add.
    """
    if len(query.groups) < 2:
        return []
    asking = all(only_asks(c.hay, query.groups) for c in chosen)
    oldest = parse_stamp(min(c.created_at for c in chosen))
    if oldest is None:
        return []
    deadline.check("sqlite search")
    seen = {c.rowid for c in chosen}
    where, args = plan.where, plan.args
    if not asking:
        plan.where, plan.args = f"{where} AND m.created_at >= ?", [*args, stamp(oldest + SUPERSEDE_AFTER)]
    try:
        # Under a created_at bound the newest-rows scan of common groups is not bounded by its
        # LIMIT (it reads every match older than the bound): only the rare groups, bm25-ranked.
        extra = [c for c in relaxed_stage(plan, query, frequencies, common_rows=asking) if c.rowid not in seen]
    finally:
        plan.where, plan.args = where, args
    if not asking:
        extra = [c for c in extra if c.score >= SUPERSEDE_BAND]
    plan.trace.branches["beyond_stage"] = len(extra)
    return extra


def search(
    conn: sqlite3.Connection,
    request: Request,
    deadline: Deadline,
    trace: Trace,
) -> list[Candidate]:
    """Run the plan for ``request`` on ``conn``; best first, at most ``request.result_limit``.

    Long hits come back whole; the caller excerpts them (outside the connection lock).
    """
    query = analyze_query(request.text)
    trace.terms = [g.surface for g in query.groups]
    if not query.groups:
        trace.selected = "recent"
        return _recent(conn, request)
    plan = _Plan(conn, request, trace)
    probed = probed_groups(query)
    deadline.check("sqlite search")
    # One bounded count per group, all in one statement (the progress handler interrupts it
    # once the deadline passes).
    frequencies_of = list(zip(probe(conn, [g.fts() for g in probed]), probed, strict=True))
    chosen: list[Light] = []
    if len(query.groups) <= MAX_STRICT_GROUPS:
        stage, chosen = strict_stage(plan, query, frequencies_of)
        if chosen:
            trace.selected = stage
    if chosen:
        chosen += _beyond_stage(plan, query, frequencies_of, chosen, deadline)
    if not chosen:
        deadline.check("sqlite search")
        chosen = relaxed_stage(plan, query, frequencies_of)
        if len(query.groups) <= MAX_STRICT_GROUPS:
            chosen = _within_best_coverage(chosen)
        trace.selected = "relaxed" if chosen else "none"
    order_candidates(chosen)
    rerank(chosen, query.groups, _asking_texts(conn, chosen, query.groups))
    found = _load(conn, chosen[: request.result_limit])
    deadline.check("sqlite search")
    found = with_settled_turns(conn, plan.where, plan.args, found, request.result_limit, trace)
    return with_amendment(conn, plan, found, request.result_limit)
