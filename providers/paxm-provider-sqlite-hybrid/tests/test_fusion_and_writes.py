"""Fusion keeps the lexical ranking and fills the limit; writes are atomic; recall degrades to lexical in time."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, DeadlineExceeded, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite_hybrid import fusion
from paxm_provider_sqlite_hybrid.embedder import (
    BATCH,
    BATCH_TOKENS,
    DIM,
    LENGTH_SPREAD,
    Embedder,
    ModelBusy,
    get_embedder,
    length_groups,
)
from paxm_provider_sqlite_hybrid.provider import LEXICAL_ONLY_KIND, HybridSQLiteProvider

TURNS = {
    "t1": "We agreed the retry budget for the payments client is three attempts with jitter.",
    "t2": "Lunch was great, the new ramen place near the office is worth it.",
    "t3": "The payments client times out after 2 seconds; raise it only with the SRE team's approval.",
    "t4": "Deploys freeze every Friday after 3pm so on-call has a quiet weekend.",
    "t5": "Our cat knocked the plant off the shelf again this morning.",
    "t6": "Flaky payments tests were caused by a shared sandbox account; each run now gets its own.",
    "t7": "Remember to rotate the API keys for the sandbox every quarter.",
    "t8": "The budget meeting moved to Thursday.",
}


class SlowEmbedder:
    """The real model behind a delay and a lock of its own: an overloaded machine, on demand."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.model = get_embedder()
        self.lock = threading.Lock()

    def embed(
        self, texts: Sequence[str], deadline: Deadline | None = None, *, wait: float | None = None
    ) -> npt.NDArray[np.float32]:
        if not self.lock.acquire(timeout=-1 if wait is None else wait):
            raise ModelBusy("busy")
        try:
            time.sleep(self.delay)
            return self.model.embed(texts)
        finally:
            self.lock.release()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[HybridSQLiteProvider, SQLiteProvider]]:
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    hybrid.put_batch([MemoryItem(text=t, id=i, tier="ltm") for i, t in TURNS.items()], Deadline.none())
    plain = SQLiteProvider("plain", ProviderConfig(path=str(hybrid.path)))
    yield hybrid, plain
    plain.close()
    hybrid.close()


def _count(path: Path, table: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.mark.parametrize(
    "query",
    [
        "payments client retry budget",  # strict: every term in one turn
        "what did we decide about the payments timeouts and sandbox tests?",  # partial overlap
        "how many attempts before giving up on a charge?",  # a paraphrase
    ],
)
def test_lexical_hits_stay_and_the_limit_is_filled(
    store: tuple[HybridSQLiteProvider, SQLiteProvider], query: str
) -> None:
    hybrid, plain = store
    lexical = plain.search(SearchQuery(query, limit=4), Deadline.after(10))
    fused = hybrid.search(SearchQuery(query, limit=4), Deadline.after(10))
    ids = [h.id for h in fused]
    # the lexical store's best hit is never lost, and its leading hits keep their place
    if lexical:
        assert lexical[0].id in ids
    if plain.last_trace is not None and plain.last_trace.selected in fusion.LEADING_STAGES:
        assert ids[: len(lexical)] == [h.id for h in lexical]
    assert len(fused) >= min(4, len(lexical))
    scores = [h.score for h in fused]
    assert scores == sorted(scores, reverse=True)  # the router ranks a provider's hits by score


def test_partial_overlap_fills_the_limit_with_both_rankings(store: tuple[HybridSQLiteProvider, SQLiteProvider]) -> None:
    hybrid, plain = store
    query = "what did we decide about the payments timeouts and sandbox tests?"
    lexical = {h.id for h in plain.search(SearchQuery(query, limit=3), Deadline.after(10))}
    fused = hybrid.search(SearchQuery(query, limit=3), Deadline.after(10))
    assert len(fused) == 3  # no margin cuts the result short
    assert lexical & {h.id for h in fused}
    assert hybrid.last_path.startswith("fused:")


def test_fuse_keeps_leading_lexical_head_and_fills_from_both() -> None:
    ranked = fusion.fuse([("a", 1.0), ("b", 1.0)], [("c", 0.7), ("a", 0.6), ("d", 0.3)], "strict", 4)
    assert [r.key for r in ranked] == ["a", "b", "c", "d"]
    assert [r.score for r in ranked][:2] == [1.0, 1.0]
    relaxed = fusion.fuse([("a", 0.5), ("b", 0.4), ("e", 0.3)], [("b", 0.7), ("c", 0.6)], "relaxed", 4)
    # the lexical best leads; below it, b (both rankings) comes before what either has alone
    assert [r.key for r in relaxed][:2] == ["a", "b"]
    assert {r.key for r in relaxed} == {"a", "b", "c", "e"}


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0, 1)), max_size=8, unique_by=lambda x: x[0]),
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(0.28, 1)), max_size=8, unique_by=lambda x: x[0]),
    st.sampled_from(["exact", "strict", "relaxed", ""]),
    st.integers(1, 10),
)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_fused_scores_never_increase_nor_fall_below_own_evidence(
    lexical: list[tuple[str, float]], dense: list[tuple[str, float]], stage: str, limit: int
) -> None:
    ranked = fusion.fuse(lexical, dense, stage, limit)
    assert len(ranked) == min(limit, len({k for k, _ in lexical} | {k for k, _ in dense}))
    scores = [r.score for r in ranked]
    assert scores == sorted(scores, reverse=True)
    assert all(r.score >= r.evidence for r in ranked)


def test_a_put_past_its_deadline_stores_nothing_and_a_retry_stores_once(tmp_path: Path) -> None:
    prov = HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "m.sqlite")), embedder=SlowEmbedder(0.5))  # type: ignore[arg-type]
    items = [MemoryItem(text=t, tier="ltm") for t in TURNS.values()]  # no ids: a retry cannot upsert
    try:
        with pytest.raises(DeadlineExceeded):
            prov.put_batch(items, Deadline.after(0.2))
        time.sleep(0.6)  # nothing finishes behind the caller's back either
        assert prov.vector_status(Deadline.none()) == (0, 0)
        prov.put_batch(items, Deadline.after(30))
        assert prov.vector_status(Deadline.none()) == (len(items), len(items))
        assert _count(prov.path, "memories") == len(items)
    finally:
        prov.close()


def test_a_put_whose_deadline_passes_while_writing_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from paxm_provider_sqlite_hybrid.vectors import store_vectors as real_store

    prov = HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "m.sqlite")), embedder=get_embedder())
    items = [MemoryItem(text=t, tier="ltm") for t in TURNS.values()]
    target = "paxm_provider_sqlite_hybrid.provider.store_vectors"

    def slow_store(conn: sqlite3.Connection, model: str, rows: list[tuple[int, bytes]]) -> None:
        real_store(conn, model, rows)
        time.sleep(1.0)  # the rows and vectors are written; the caller's deadline passes now

    try:
        prov.vector_status(Deadline.none())  # the store exists: only the put's own write is timed
        monkeypatch.setattr(target, slow_store)
        with pytest.raises(DeadlineExceeded):
            prov.put_batch(items, Deadline.after(0.8))
        monkeypatch.setattr(target, real_store)
        assert prov.vector_status(Deadline.none()) == (0, 0)  # rolled back: rows and vectors
        prov.put_batch(items, Deadline.after(30))
        assert _count(prov.path, "memories") == len(items)  # the retry stores each once
    finally:
        prov.close()


def test_recall_under_load_returns_lexical_hits_in_time_and_says_so(tmp_path: Path) -> None:
    slow = SlowEmbedder(0.0)
    prov = HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "m.sqlite")), embedder=slow)  # type: ignore[arg-type]
    try:
        prov.put_batch([MemoryItem(text=t, id=i, tier="ltm") for i, t in TURNS.items()], Deadline.none())
        slow.delay = 2.0  # a long backfill holds the model from now on
        writer = threading.Thread(target=prov.put, args=(MemoryItem(text="a new turn", tier="stm"), Deadline.none()))
        writer.start()
        time.sleep(0.1)
        started = time.monotonic()
        hits = prov.search(SearchQuery("payments client times out", limit=3), Deadline.after(0.8))
        assert time.monotonic() - started < 0.8
        assert hits and hits[0].id == "t3"
        assert all(h.raw_score_kind == f"{LEXICAL_ONLY_KIND}:model-busy" for h in hits)
        assert prov.last_path == "lexical:model-busy"
        writer.join()
    finally:
        prov.close()


def test_a_query_that_cannot_be_embedded_in_time_is_answered_lexically(tmp_path: Path) -> None:
    prov = HybridSQLiteProvider("h", ProviderConfig(path=str(tmp_path / "m.sqlite")), embedder=get_embedder())
    try:
        prov.put_batch([MemoryItem(text=t, id=i, tier="ltm") for i, t in TURNS.items()], Deadline.none())
        prov._embed_cost = 5.0  # measured: this machine needs 5 s per query right now
        hits = prov.search(SearchQuery("payments client timeout", limit=3), Deadline.after(1.0))
        assert hits and hits[0].raw_score_kind == f"{LEXICAL_ONLY_KIND}:deadline"
    finally:
        prov.close()


@given(st.lists(st.integers(1, 256), max_size=200))
def test_length_groups_cover_every_text_once_with_little_padding(lengths: list[int]) -> None:
    groups = length_groups(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[i] for i in group]
        assert len(group) <= BATCH
        assert len(group) == 1 or max(sizes) * len(group) <= BATCH_TOKENS
        assert max(sizes) <= min(sizes) * LENGTH_SPREAD + 4


def test_a_short_text_is_never_padded_to_a_long_one() -> None:
    emb = Embedder()
    shapes: list[tuple[int, int]] = []
    session = emb._session

    class Recording:
        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            shapes.append(feeds["input_ids"].shape)
            out: list[np.ndarray] = session.run(names, feeds)
            return out

    emb._session = Recording()
    emb.embed(["ok", "fine", "word " * 200, "yes", "sure thing"])
    # inference cost follows rows x padded width: the short texts run together, narrow, and
    # the long one alone (one batch would run 5 rows of the long one's ~200 pieces)
    assert len(shapes) == 2, shapes
    (short_rows, short_width), (long_rows, long_width) = sorted(shapes, reverse=True)
    assert (short_rows, long_rows) == (4, 1) and short_width <= 8 < long_width, shapes


def test_grouped_embedding_matches_one_at_a_time() -> None:
    emb: Embedder = get_embedder()
    texts = [*TURNS.values(), "ok", "word " * 300, "a longer sentence " * 20]
    together = emb.embed(texts)
    assert together.shape == (len(texts), DIM)
    for i, text in enumerate(texts):
        assert np.allclose(emb.embed([text])[0], together[i], atol=1e-3)


def test_copies_of_the_question_come_after_the_answers_whatever_their_cosine() -> None:
    # a copy of the question is the text closest to it: the lexical store demoted it, and its
    # cosine must not win the place back (an exact stage leads with the lexical order otherwise)
    ranked = fusion.fuse([("answer", 1.0), ("copy", 0.3)], [("copy", 0.99), ("answer", 0.7)], "exact", 5, {"copy"})
    assert [r.key for r in ranked] == ["answer", "copy"]
    assert ranked[1].score < 0.35  # under the first-prompt passive share of the best hit
    relaxed = fusion.fuse([("copy", 0.6)], [("copy", 0.99), ("answer", 0.6)], "relaxed", 5, {"copy"})
    assert [r.key for r in relaxed] == ["answer", "copy"]


def test_repeated_questions_take_no_passive_place_from_the_answer(tmp_path: Path) -> None:
    asked = "Claude Code user input:\nHow should release branches be named?"
    items = [
        MemoryItem(text=f"{asked}\n\nClaude Code assistant response:\nThey are named release/<version>.", id="answer"),
        MemoryItem(text=f"{asked}\n\nClaude Code assistant response:\nLet me check and get back to you.", id="later"),
        MemoryItem(text=asked, id="again"),
    ]
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    try:
        hybrid.put_batch(items, Deadline.none())
        hits = hybrid.search(SearchQuery("How should release branches be named?", limit=10), Deadline.after(10))
    finally:
        hybrid.close()
    assert hits[0].id == "answer"
    assert all(h.score < 0.35 * hits[0].score for h in hits[1:]), [(h.id, h.score) for h in hits]


def test_a_runner_up_stays_under_the_default_floor_relative_to_any_admitted_hit() -> None:
    from paxm_core.config.defaults import DEFAULT_RECALL_MIN_SCORE
    from paxm_provider_sqlite_hybrid import calibration

    assert calibration.RUNNER_UP_SCORE < DEFAULT_RECALL_MIN_SCORE * calibration.FLOOR_SCORE


def test_a_partial_match_unrelated_by_meaning_keeps_half_its_lexical_score() -> None:
    # a lexical trap: one query word, a cosine under the cut-off; under relative thresholds its
    # full score (0.167 beside a best of 0.5) would pass 0.25 of the best, half of it does not
    lexical = [("words", 0.5), ("trap", 0.167)]
    dense = [("meaning", 0.5), ("words", 0.4)]
    ranked = fusion.fuse(lexical, dense, "relaxed", 3, (), {"words": 0.4, "trap": 0.1})
    trap = next(r for r in ranked if r.key == "trap")
    assert trap.unrelated and trap.evidence == pytest.approx(0.167 * fusion.UNRELATED_FACTOR)
    assert trap.score < 0.25 * max(r.score for r in ranked)
    # every query word matched (a leading stage): the lexical ranking stands as it is
    strict = fusion.fuse([("trap", 1.0)], dense, "strict", 3, (), {"trap": 0.1})
    assert strict[0].key == "trap" and strict[0].score == 1.0 and not strict[0].unrelated


def test_a_settled_decision_tied_to_its_hit_keeps_the_lead_over_meaning() -> None:
    # sde-bench: the lexical store puts a conversation's settled decision right above the turn
    # that matched, with that turn's score; the matching turn is also the nearest by meaning,
    # and a decoy is close by meaning only.  The decision must stay first, and both must keep
    # a score the passive share of the best hit (0.75) admits.
    lexical = [("settled", 0.43), ("raising", 0.43), ("other", 0.23)]
    dense = [("raising", 0.66), ("decoy", 0.64), ("other", 0.4)]
    ranked = fusion.fuse(lexical, dense, "relaxed", 4)
    assert [r.key for r in ranked][:2] == ["settled", "raising"]
    assert ranked[1].score >= 0.75 * ranked[0].score


def test_a_newer_correction_the_lexical_store_put_first_stays_first() -> None:
    # supersession: equal lexical scores, the newer correction placed first; the older rule is
    # nearer by meaning (it repeats the question's words), which must not undo the order
    ranked = fusion.fuse(
        [("correction", 0.857), ("rule", 0.857)], [("rule", 0.757), ("correction", 0.63)], "relaxed", 3
    )
    assert [r.key for r in ranked] == ["correction", "rule"]


def test_a_newer_correction_outranks_the_rule_it_amends_in_the_store(tmp_path: Path) -> None:
    asked = "Claude Code user input:\n"
    said = "\n\nClaude Code assistant response:\n"
    rule = (
        f"{asked}What retry budget does the HTTP client use when a call fails?{said}"
        "Settled: the client retries failed calls 5 times with exponential backoff starting at 200 ms."
    )
    fix = (
        f"{asked}Correction on the HTTP client retry budget after the rate-limit incident.{said}"
        "New rule: the client retries failed calls at most 3 times and never retries a 401 or 403."
    )
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    try:
        hybrid.put_batch(
            [
                MemoryItem(text=rule, id="rule", tier="ltm", created_at=datetime(2026, 3, 2, 10, tzinfo=UTC)),
                MemoryItem(text=fix, id="fix", tier="ltm", created_at=datetime(2026, 5, 4, 10, tzinfo=UTC)),
            ],
            Deadline.none(),
        )
        query = SearchQuery("how many times does the HTTP client retry failed calls", limit=3)
        hits = hybrid.search(query, Deadline.after(10))
    finally:
        hybrid.close()
    assert [h.id for h in hits] == ["fix", "rule"]


@given(
    st.lists(
        st.tuples(st.sampled_from("abcdefgh"), st.sampled_from([0.2, 0.5, 0.8])),
        min_size=1,
        max_size=8,
        unique_by=lambda x: x[0],
    ),
    st.lists(st.tuples(st.sampled_from("abcdefghijk"), st.floats(0.28, 1)), max_size=8, unique_by=lambda x: x[0]),
    st.integers(1, 10),
)
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_the_lexical_best_and_its_ties_lead_whatever_the_dense_ranking(
    lexical: list[tuple[str, float]], dense: list[tuple[str, float]], limit: int
) -> None:
    lexical.sort(key=lambda pair: pair[1], reverse=True)
    tied = [key for key, score in lexical if score == lexical[0][1]]
    ranked = fusion.fuse(lexical, dense, "relaxed", limit)
    assert [r.key for r in ranked][: len(tied)] == tied[:limit]


def test_a_lexical_best_unrelated_by_meaning_does_not_lead() -> None:
    # a lexical trap (its cosine to the short query is under the cut-off) keeps no lead: the
    # answer both rankings support goes above it
    ranked = fusion.fuse(
        [("trap", 0.5), ("answer", 0.3)], [("answer", 0.7)], "relaxed", 3, (), {"trap": 0.1, "answer": 0.7}
    )
    assert [r.key for r in ranked] == ["answer", "trap"]


_ASKED = "Claude Code user input:\n"
_SAID = "\n\nClaude Code assistant response:\n"


def test_a_turn_found_by_meaning_only_asks_when_its_answer_says_nothing() -> None:
    # the answer to a paraphrased question shares none of its words: that makes it no copy of it
    prices = f"{_ASKED}How should the order service represent prices?{_SAID}Decided: integer cents in a BIGINT."
    assert not fusion.says_nothing(prices)
    assert fusion.says_nothing(f"{_ASKED}How should the order service represent prices?")
    assert fusion.says_nothing(f"{_ASKED}How are prices stored?{_SAID}Good question: how are prices stored?")
    assert fusion.says_nothing(f"{_ASKED}How are prices stored?{_SAID}Let me check and get back to you.")
    # a user who stated something gave an answer, and a note is no turn at all
    assert not fusion.says_nothing(f"{_ASKED}Store prices as integer cents.{_SAID}Noted?")
    assert not fusion.says_nothing("Prices are stored as integer cents.")


def test_an_answer_found_by_meaning_alone_is_not_demoted_as_a_question_copy(tmp_path: Path) -> None:
    from paxm_provider_sqlite_hybrid import calibration

    text = (
        f"{_ASKED}How should the order service represent prices?{_SAID}"
        "Decided: amounts are stored as integer cents in a BIGINT column beside an ISO currency code; "
        "no float columns."
    )
    hybrid = HybridSQLiteProvider("hybrid", ProviderConfig(path=str(tmp_path / "memory.sqlite")))
    try:
        hybrid.put_batch([MemoryItem(text=text, id="prices", tier="ltm")], Deadline.none())
        # no word in common: the lexical store's test (no query word in the answer) would call
        # this turn a copy of the question and scale its score by 0.3, under the floor
        hits = hybrid.search(SearchQuery("keep money values free of rounding errors", limit=3), Deadline.after(10))
    finally:
        hybrid.close()
    assert [h.id for h in hits] == ["prices"]
    assert hits[0].score >= calibration.FLOOR_SCORE
