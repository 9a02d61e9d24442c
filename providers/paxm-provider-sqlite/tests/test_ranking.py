"""Ranking rules: a later correction ranks above the rule it corrects; an answer above turns that only ask.

The project's own suites (``evals/supersession``, ``evals/repeated-questions``,
``evals/partial-matches``) run straight
against the provider, with the default profiles' thresholds and limits, and through
``paxm eval run`` (the production runtime, quality gate); the rules' edges are tested on a real
store: memories written together keep their order, an unrelated newer memory does not displace
an older one, and a turn that only asks supersedes nothing. The held-out paraphrase suite
(``evals/paraphrase-unseen``) runs through ``paxm eval run`` too, without a pass count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.analyzer import analyze_query, index_text
from paxm_provider_sqlite.retrieval.ranking import only_asks

REPO = Path(__file__).resolve().parents[3]
OWN = {name: REPO / "evals" / name / "suite.json" for name in ("supersession", "repeated-questions", "partial-matches")}
CASES = [(name, case) for name, path in OWN.items() for case in json.loads(path.read_text())["cases"]]


#: mode -> (tiers, min_relevance, default limit): the default recall profiles (as test_eval_suites.py)
PROFILES: dict[str, tuple[tuple[str, ...], float, int]] = {
    "active": ((), 0.25, 3),
    "passive": (("ltm",), 0.75, 2),
    "passive_initial": (("ltm",), 0.35, 5),
}


def run_case(case: dict[str, Any], tmp_path: Path) -> tuple[list[str], list[float]]:
    """The ids and relevances a case's recall keeps, thresholds and limit applied as the router does."""
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "case.sqlite")))
    try:
        prov.put_batch([MemoryItem.from_json(m) for m in case["memories"]], Deadline.none())
        recall = case["recall"]
        tiers, threshold, default_limit = PROFILES[recall["mode"]]
        limit = recall.get("limit") or default_limit
        metadata = {**recall.get("metadata", {}), "workspace": recall["workspace"]}
        query = SearchQuery(recall["query"], limit=limit, metadata=metadata, tiers=tiers)
        kept = [h for h in prov.search(query, Deadline.after(5)) if h.relevance >= threshold][:limit]
        return [h.id for h in kept], [h.relevance for h in kept]
    finally:
        prov.close()


@pytest.mark.parametrize(("suite", "case"), CASES, ids=[f"{s}:{c['id']}" for s, c in CASES])
def test_own_suite_case(suite: str, case: dict[str, Any], tmp_path: Path) -> None:
    got, scores = run_case(case, tmp_path)
    assert all(e in got for e in case["expected"]), f"got={got} scores={scores}"
    assert not set(case.get("forbidden") or []) & set(got), f"got={got} scores={scores}"
    if case.get("expected_first"):
        assert got[:1] == [case["expected_first"]], f"got={got} scores={scores}"


@pytest.mark.parametrize("suite", sorted(OWN))
def test_paxm_eval_run_passes_the_own_suites_with_the_quality_gate(suite: str) -> None:
    paxm = Path(sys.executable).parent / "paxm"
    out = subprocess.run(
        [str(paxm), "eval", "run", "--suite", str(OWN[suite].parent), "--gate", "quality"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "failed: 0" in out.stdout


def test_paxm_eval_run_measures_the_held_out_paraphrase_suite(tmp_path: Path) -> None:
    # evals/paraphrase-unseen measures what lexical recall misses, so not every case passes:
    # it must run through the production runtime without an execution error (the hybrid's
    # tests hold sqlite-hybrid to at least this store's figures on it).
    paxm = Path(sys.executable).parent / "paxm"
    out = tmp_path / "result.json"
    suite = REPO / "evals" / "paraphrase-unseen"
    proc = subprocess.run(
        [str(paxm), "eval", "run", "--suite", str(suite), "--output", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["case_count"] == 50 and not result.get("execution_failed")


def turn(prompt: str, answer: str = "") -> str:
    text = f"Claude Code user input:\n{prompt}"
    return f"{text}\n\nClaude Code assistant response:\n{answer}" if answer else text


def _search(tmp_path: Path, items: list[tuple[str, str, datetime]], query: str) -> list[str]:
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "rank.sqlite")))
    try:
        prov.put_batch(
            [MemoryItem.from_json({"id": i, "text": t, "created_at": at.isoformat()}) for i, t, at in items],
            Deadline.none(),
        )
        return [h.id for h in prov.search(SearchQuery(query, limit=5), Deadline.after(5))]
    finally:
        prov.close()


NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RULE = turn("How are release branches named?", "Release branches are named release/<version>.")
CORRECTION = turn("Change to branch naming.", "From now on release branches are named rel-<year>.<minor>.")


def test_a_correction_a_day_later_ranks_above_the_rule(tmp_path: Path) -> None:
    items = [("rule", RULE, NOW - timedelta(days=1)), ("correction", CORRECTION, NOW)]
    # the rule alone holds the question verbatim (exact stage), both hold its words (strict)
    assert _search(tmp_path, items, "how are release branches named")[:2] == ["correction", "rule"]
    assert _search(tmp_path / "strict", items, "named release branches")[:2] == ["correction", "rule"]


def test_memories_written_in_one_exchange_keep_the_stage_order(tmp_path: Path) -> None:
    # two minutes apart: one exchange's back-and-forth, not a later correction
    items = [("rule", RULE, NOW - timedelta(minutes=2)), ("correction", CORRECTION, NOW)]
    assert _search(tmp_path, items, "named release branches")[:2] == ["rule", "correction"]


def test_a_newer_memory_on_another_subject_does_not_displace_the_older(tmp_path: Path) -> None:
    other = turn("Which port does the exporter use?", "The exporter listens on port 9464; releases are unrelated.")
    items = [("rule", RULE, NOW - timedelta(days=30)), ("other", other, NOW)]
    assert _search(tmp_path, items, "how are release branches named")[0] == "rule"


def test_a_turn_that_only_asks_supersedes_nothing_and_ranks_below_the_answer(tmp_path: Path) -> None:
    asked = turn("How are release branches named?", "Let me check and get back to you.")
    items = [
        ("answer", RULE, NOW - timedelta(days=30)),
        ("asked", asked, NOW - timedelta(days=2)),
        ("prompt-only", turn("How are release branches named?"), NOW),
    ]
    assert _search(tmp_path, items, "How are release branches named?")[0] == "answer"


def test_notes_that_are_not_turns_never_count_as_questions() -> None:
    groups = analyze_query("release channel").groups
    hay = " " + index_text("Project memory: the release channel is stable.").terms + " "
    assert not only_asks(hay, groups)


_WORDS = st.sampled_from(["release", "branch", "named", "port", "staging", "database", "retry", "the", "is", "where"])


@settings(max_examples=200, deadline=None)
@given(
    prompt=st.lists(_WORDS, min_size=1, max_size=8).map(" ".join),
    answer=st.lists(_WORDS, max_size=8).map(" ".join),
    query=st.lists(_WORDS, min_size=1, max_size=4).map(" ".join),
)
def test_only_asks_means_the_answer_holds_no_query_word(prompt: str, answer: str, query: str) -> None:
    groups = analyze_query(query).groups
    hay = " " + index_text(turn(prompt, answer)).terms + " "
    answered = " " + index_text(answer).terms + " " if answer else ""
    in_answer = any(g.present(answered, set(answered.split())) for g in groups)
    asks = prompt.split()[0] in {"is", "where"}  # the sampled words that open a question
    assert only_asks(hay, groups) == (asks and not in_answer)


def test_a_stated_decision_is_never_demoted_as_a_question() -> None:
    # "Remember: ..." states the decision in the prompt; a reply that repeats none of it is no answer
    # to demote the turn for (the real harness turn: the decision, then "Noted.")
    groups = analyze_query("What naming scheme did we decide on for release branches?").groups
    stated = turn("Remember: release branches are named KESTREL-1 from now on.", "Noted.")
    assert not only_asks(" " + index_text(stated).terms + " ", groups)
    asked = turn("What naming scheme do release branches use?", "Noted.")
    assert only_asks(" " + index_text(asked).terms + " ", groups)


def test_looking_past_the_stage_for_corrections_never_scans_common_words(tmp_path: Path) -> None:
    # under a created_at bound a newest-rows scan of common words would read every match: the
    # corrections are looked for among the rare words' bm25-ranked rows only
    old = NOW - timedelta(days=400)
    items = [("exact", "Decision: release channel stable.", old)]
    items += [(f"n{i}", f"stable builds; channel {i} gets the release later", NOW) for i in range(300)]
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "common.sqlite")))
    try:
        prov.put_batch(
            [MemoryItem.from_json({"id": i, "text": t, "created_at": at.isoformat()}) for i, t, at in items],
            Deadline.none(),
        )
        hits = prov.search(SearchQuery("release channel stable", limit=3), Deadline.after(5))
        assert [h.id for h in hits] == ["exact"]
        assert prov.last_trace is not None and "relaxed_common" not in prov.last_trace.branches
    finally:
        prov.close()


def test_when_only_turns_that_ask_hold_the_question_the_answer_is_found_past_the_stage(tmp_path: Path) -> None:
    answer = turn("What scheme do release branches follow?", "Release branches are called release/<version>.")
    items = [
        ("answer", answer, NOW - timedelta(days=30)),
        ("asked", turn("How are release branches named?", "Let me check."), NOW - timedelta(days=2)),
        ("prompt-only", turn("How are release branches named?"), NOW),
    ]
    assert _search(tmp_path, items, "How are release branches named?")[0] == "answer"


def test_an_answer_that_only_says_the_question_back_ranks_below_the_answer(tmp_path: Path) -> None:
    # both later turns hold every query word in their answer, so only reading what the answer
    # says (it asks back, it restates) tells them from the answer; asked later, they would supersede it
    items = [
        ("answer", RULE, NOW - timedelta(days=30)),
        (
            "asks-back",
            turn("How are release branches named?", "Good question. How are they named? Any preference?"),
            NOW,
        ),
        ("restates", turn("How are release branches named?", "You are asking how release branches are named."), NOW),
    ]
    got = _search(tmp_path, items, "How are release branches named?")
    assert got[0] == "answer"


@pytest.mark.parametrize(
    ("answer", "echo"),
    [
        ("Good question. How should release branches be named? Which would you prefer?", True),
        ("You are asking how release branches should be named.", True),
        ("Sure, let me check.", True),
        ("Release branches are named release/<version>, e.g. release/2.4.", False),
        ("How should they be named? Release branches use release/<version>.", False),
    ],
)
def test_echoes_tells_a_question_said_back_from_an_answer(answer: str, echo: bool) -> None:
    from paxm_provider_sqlite.retrieval.ranking import echoes

    groups = analyze_query("How should release branches be named?").groups
    assert echoes(turn("How should release branches be named?", answer), groups) is echo
    assert not echoes("Project memory: release branches are named release/<version>.", groups)  # not a turn
