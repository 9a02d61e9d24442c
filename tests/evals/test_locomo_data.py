"""LoCoMo dataset parsing, memory rows and upstream's answer and retrieval scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_core import UsageError
from paxm_core.evals.locomo import (
    aggregate_retrieval,
    aggregate_trials,
    load_locomo,
    normalize_answer,
    question_prompt,
    score_retrieval,
    token_f1,
)


def locomo_file(tmp_path: Path, conversations: list[dict[str, Any]]) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(conversations))
    return path


CONVERSATION: dict[str, Any] = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Caroline",
        "speaker_b": "Melanie",
        "session_2_date_time": "3:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Look at this!", "blip_caption": "a dog"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Caroline", "dia_id": "D1:1", "text": " Hi there "}],
        "session_1_summary": "not a session",
    },
    "qa": [
        {"question": "Who has a dog?", "answer": "Melanie", "evidence": ["D2:1"], "category": 1},
        {"question": "When?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        {"question": "Adversarial", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
        {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
    ],
    "event_summary": {},
}


def test_dataset_is_read_as_upstream_does(tmp_path: Path) -> None:
    [conv] = load_locomo(locomo_file(tmp_path, [CONVERSATION]))
    assert conv.id == "conv-x" and (conv.speaker_a, conv.speaker_b) == ("Caroline", "Melanie")
    assert [(q.question, q.answer, q.category) for q in conv.questions] == [
        ("Who has a dog?", "Melanie", 1),
        ("When?", "2023", 2),
    ]
    assert list(conv.memories) == [  # sessions sorted, summaries ignored
        (
            "D1:1",
            "[1:56 pm on 8 May, 2023] Caroline: Hi there",
            {"benchmark": "locomo", "locomo_conversation_id": "conv-x", "locomo_session": "1", "locomo_dia_id": "D1:1"},
        ),
        (
            "D2:1",
            "[3:00 pm on 9 May, 2023] Melanie: Look at this! [Image: a dog]",
            {"benchmark": "locomo", "locomo_conversation_id": "conv-x", "locomo_session": "2", "locomo_dia_id": "D2:1"},
        ),
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "LoCoMo dataset is empty"),
        ([{"sample_id": "c", "conversation": {"speaker_a": "A"}}], "LoCoMo c is missing speaker_b"),
        ([{"sample_id": "c", "conversation": {"speaker_a": "A", "speaker_b": "B"}}], "has no sessions"),
    ],
)
def test_malformed_datasets_are_usage_errors(tmp_path: Path, data: list[Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_locomo(locomo_file(tmp_path, data))


def test_answer_scores_follow_upstream() -> None:
    assert normalize_answer("  The Quick, brown-fox!  ") == "quick brown fox"
    assert token_f1("The quick brown fox", "quick fox") == pytest.approx(0.8)
    assert token_f1("", "") == 1.0 and token_f1("a the", "") == 1.0  # both normalise to nothing
    assert token_f1("x", "") == 0.0 and token_f1("cat", "dog") == 0.0
    assert token_f1("7 May 2023", "7 May, 2023") == 1.0
    assert token_f1("to to", "to") == pytest.approx(2 * 0.5 * 1 / 1.5)  # multiset overlap


@given(st.text(max_size=40), st.text(max_size=40))
def test_token_f1_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert token_f1(a, b) == pytest.approx(token_f1(b, a))
    assert 0.0 <= token_f1(a, b) <= 1.0
    if normalize_answer(a):
        assert token_f1(a, a) == 1.0


def test_retrieval_scores_and_categories() -> None:
    one = score_retrieval(["D9", "D1", "D1", "D2"], ("D1", "D2"), 3)
    assert one["matched_evidence"] == ["D1"] and one["reciprocal_rank"] == 0.5
    assert one["recall_at_k"] == 0.5 and one["precision_at_k"] == pytest.approx(1 / 3) and not one["passed"]
    rows = [
        {"category": 1, "question": "q", **score_retrieval(["D1"], ("D1",), 10)},
        {"category": 4, "question": "q", **one},
    ]
    diag = aggregate_retrieval(rows, "sqlite", 1, 5)
    assert (diag["passed"], diag["failed"], diag["question_count"]) == (1, 1, 2)
    assert [c["category"] for c in diag["categories"]] == [1, 4]
    assert diag["mrr"] == pytest.approx(0.75)


def test_arm_summaries_lift_and_useful_recall() -> None:
    def trial(arm: str, matched: bool, recall: bool = False) -> dict[str, Any]:
        response = {"text": "", "duration_ms": 5, "input_tokens": 10, "output_tokens": 2, "cost": 0.001}
        if recall:
            response["recall_used"] = True
        return {
            "conversation_id": "c",
            "question_id": f"c-q{1 if matched else 2}",
            "arm": arm,
            "matched": matched,
            "exact_match": matched,
            "token_f1": 1.0 if matched else 0.0,
            "response": response,
        }

    trials = [trial("control", False), trial("active", True, True), trial("active", False, True)]
    trials += [trial("control", False), trial("passive", True), trial("passive", True)]
    out = aggregate_trials(trials, ("control", "passive", "active"))
    by_arm = {s["arm"]: s for s in out["summaries"]}
    assert [s["arm"] for s in out["summaries"]] == ["control", "passive", "active"]
    assert by_arm["passive"]["accuracy"] == 1.0 and by_arm["control"]["accuracy"] == 0.0
    assert by_arm["active"]["recall_use_rate"] == 1.0 and by_arm["active"]["useful_recall_rate"] == 0.5
    assert out["passive_lift"] == 1.0 and out["active_lift"] == 0.5
    assert by_arm["active"]["input_tokens"] == 20 and by_arm["active"]["cost"] == pytest.approx(0.002)
    assert out["question_count"] == 2 and out["trial_count"] == 6
    assert "paxm_recall" in question_prompt("Q?", "active") and "paxm_recall" not in question_prompt("Q?", "passive")
