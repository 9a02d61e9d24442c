"""Metrics on synthetic results: per case, per category and per suite (upstream's definitions)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.api.types import MemoryHit
from paxm_core.evals.results import CaseResult, Result
from paxm_core.evals.scoring import aggregate, evaluate_write_contract, score_conversation_write, score_retrieval
from paxm_core.evals.suite import Case, parse_suite


def _case(kit: ModuleType, **overrides: Any) -> Case:
    base = kit.retrieval_case("c")
    base["memories"].append({"id": "c-other", "text": "another amber-orchid note", "tier": "stm"})
    base.update(overrides)
    return parse_suite(kit.suite(base)).cases[0]


def _scored(case: Case, hits: list[str]) -> CaseResult:
    result = CaseResult(id=case.id, category=case.category, hit_ids=list(hits))
    score_retrieval(case, result)
    return result


def test_perfect_hit(kit: ModuleType) -> None:
    result = _scored(_case(kit), ["c-target"])
    assert result.passed
    assert (result.recall_at_k, result.precision_at_k, result.reciprocal_rank) == (1.0, 1.0, 1.0)
    assert not (result.missing or result.forbidden_hits or result.unexpected_hits or result.error)


def test_expected_second_with_an_unexpected_first(kit: ModuleType) -> None:
    result = _scored(_case(kit), ["c-other", "c-target"])
    assert result.passed  # an unexpected (not forbidden) hit does not fail the case
    assert result.precision_at_k == 0.5
    assert result.reciprocal_rank == 0.5
    assert result.unexpected_hits == ["c-other"]


def test_forbidden_and_missing(kit: ModuleType) -> None:
    result = _scored(_case(kit), ["c-forbidden"])
    assert not result.passed
    assert result.missing == ["c-target"]
    assert result.forbidden_hits == ["c-forbidden"]
    assert result.unexpected_hits == ["c-forbidden"]
    assert (result.recall_at_k, result.precision_at_k, result.reciprocal_rank) == (0.0, 0.0, 0.0)


def test_no_hits(kit: ModuleType) -> None:
    result = _scored(_case(kit), [])
    assert not result.passed and result.missing == ["c-target"] and result.precision_at_k == 0.0


def test_partial_recall_of_two_expected(kit: ModuleType) -> None:
    result = _scored(_case(kit, expected=["c-target", "c-other"]), ["c-other"])
    assert result.recall_at_k == 0.5 and result.missing == ["c-target"] and not result.passed


def test_expected_first_and_max_hits(kit: ModuleType) -> None:
    first = _scored(_case(kit, expected=["c-target", "c-other"], expected_first="c-target"), ["c-other", "c-target"])
    assert not first.passed and first.error == "expected first hit c-target"
    assert first.recall_at_k == 1.0  # metrics still measured
    capped = _scored(_case(kit, max_hits=1), ["c-target", "c-other"])
    assert not capped.passed and capped.error == "returned 2 hits; expected at most 1"


def test_expected_empty(kit: ModuleType) -> None:
    case = _case(kit, expected=[], forbidden=[], expected_empty=True)
    assert _scored(case, []).passed
    failed = _scored(case, ["c-other"])
    assert not failed.passed and failed.unexpected_hits == ["c-other"] and "expected none" in failed.error


def _passed(
    case_id: str,
    category: str,
    hit_ids: list[str],
    *,
    precision: float,
    rank: float,
    context_bytes: int,
    us: int,
    **extra: Any,
) -> CaseResult:
    """A passed case that found all it expected (recall@k 1) among ``hit_ids``."""
    return CaseResult(
        case_id,
        category,
        passed=True,
        hit_ids=hit_ids,
        recall_at_k=1,
        precision_at_k=precision,
        reciprocal_rank=rank,
        result_count=len(hit_ids),
        returned_context_bytes=context_bytes,
        recall_duration_us=us,
        **extra,
    )


def test_aggregate_means_false_positive_rate_and_categories() -> None:
    cases = [
        _passed("a", "x", ["1", "2"], precision=0.5, rank=1, context_bytes=10, us=5, unexpected_hits=["2"]),
        CaseResult("b", "x", passed=False, hit_ids=["3"], unexpected_hits=["3"], execution_error="boom", error="boom"),
        _passed("c", "w", ["4"], precision=1, rank=0.5, context_bytes=7, us=1),
    ]
    result = Result(suite="s", version=1, cases=cases)
    aggregate(result)
    assert (result.case_count, result.passed, result.failed, result.execution_failed) == (3, 2, 1, 1)
    assert result.recall_at_k == pytest.approx(2 / 3)
    assert result.precision_at_k == pytest.approx(0.5)
    assert result.mrr == pytest.approx(0.5)
    assert result.false_positive_rate == pytest.approx(2 / 4)  # unexpected hits / all hits
    assert (result.result_count, result.returned_context_bytes, result.recall_duration_us) == (3, 17, 6)
    assert [(g.name, g.case_count, g.passed) for g in result.categories] == [("w", 1, 1), ("x", 2, 1)]
    assert result.categories[1].precision_at_k == pytest.approx(0.25)
    assert result.write_case_count == 0 and "write_recall" not in result.to_json()


def test_aggregate_of_nothing_is_zero() -> None:
    result = Result(suite="s", version=1)
    aggregate(result)
    assert (result.recall_at_k, result.false_positive_rate, result.categories) == (0.0, 0.0, [])


def _hit(hit_id: str, text: str, **metadata: str) -> MemoryHit:
    return MemoryHit(provider="sqlite", id=hit_id, text=text, metadata=dict(metadata))


def _write_case(kit: ModuleType, **overrides: Any) -> Case:
    base = kit.write_case("w")
    base.update(overrides)
    return parse_suite(kit.suite(base)).cases[0]


def test_conversation_write_scoring(kit: ModuleType) -> None:
    case = _write_case(kit, expected_metadata={"hook_event": "user_input"}, forbidden_recall=["publish credentials"])
    text = "Codex user input: Decision: lunar cache uses a seven minute TTL."
    result = CaseResult(case.id, case.category, written=True, write_case=True)
    hits = [
        _hit("d", "Harmful: publish credentials now"),
        _hit("m", text.upper(), hook_event="user_input"),
    ]
    score_conversation_write(case, result, text, {"hook_event": "user_input"}, hits)
    assert (result.write_recall, result.write_precision) == (1.0, 1.0)
    assert (result.recall_at_k, result.precision_at_k, result.reciprocal_rank) == (1.0, 0.5, 0.5)
    assert result.unexpected_hits == ["d"] and result.forbidden_hits == ["d"]
    assert not result.passed  # a forbidden recall fragment fails the case


def test_conversation_write_missing_forbidden_and_metadata(kit: ModuleType) -> None:
    case = _write_case(kit, expected_metadata={"session_id": "s1"}, max_matching_hits=1)
    text = "lunar cache private-reasoning"
    result = CaseResult(case.id, case.category, written=True, write_case=True, write_forbidden_candidates=1)
    hits = [_hit("a", "lunar cache seven minute TTL", session_id="other"), _hit("b", "lunar cache seven minute ttl")]
    score_conversation_write(case, result, text, {}, hits)
    assert result.write_missing == ["seven minute TTL"] and result.write_forbidden == ["private-reasoning"]
    assert result.write_recall == 0.5 and result.write_precision == 0.5
    assert result.metadata_mismatches == ["recall.session_id='other'; want 's1'", "write.session_id=''; want 's1'"]
    assert result.error == "returned 2 matching hits; expected at most 1"
    assert not result.passed
    suite_result = Result(suite="s", version=1, cases=[result])
    aggregate(suite_result)
    assert suite_result.write_case_count == 1 and suite_result.writes == 1
    assert suite_result.write_false_positive_rate == 1.0


def test_write_contract(kit: ModuleType) -> None:
    case = _write_case(kit, expected_metadata={"k": "v"})
    assert evaluate_write_contract(case, True, "LUNAR CACHE seven minute ttl", {"k": "v"}) == []
    failures = evaluate_write_contract(case, False, "lunar cache private-reasoning", {})
    assert failures == sorted(failures)
    assert "provider did not acknowledge the write" in failures
    assert "missing write fragment: seven minute TTL" in failures
    assert "forbidden write fragment: private-reasoning" in failures
    assert "write metadata k=''; want 'v'" in failures


_ids = st.lists(st.sampled_from(["c-target", "c-forbidden", "c-other"]), max_size=5, unique=True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hits=_ids, expected=st.lists(st.sampled_from(["c-target", "c-other"]), min_size=1, max_size=2, unique=True))
def test_retrieval_metrics_invariants(kit: ModuleType, hits: list[str], expected: list[str]) -> None:
    case = _case(kit, expected=expected)
    result = _scored(case, hits)
    found = [h for h in hits if h in expected]
    assert 0.0 <= result.recall_at_k <= 1.0 and 0.0 <= result.precision_at_k <= 1.0
    assert result.recall_at_k == len(found) / len(expected)
    assert set(result.missing) | set(found) == set(expected)
    assert len(result.unexpected_hits) + len(found) == len(hits)
    assert result.passed == (not result.missing and "c-forbidden" not in hits)
    if found:
        assert result.reciprocal_rank == 1 / (hits.index(found[0]) + 1)
