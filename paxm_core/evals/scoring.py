"""Scoring: the hits of one case into metrics, and cases into suite metrics.

Definitions are upstream's (``internal/eval/eval.go``, docs/evals.md), so numbers from the same
suite are comparable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import groupby

from paxm_core.api.types import MemoryHit
from paxm_core.evals.results import CaseResult, GroupResult, Result
from paxm_core.evals.suite import Case

__all__ = ["aggregate", "contains_fold", "evaluate_write_contract", "score_conversation_write", "score_retrieval"]


def contains_fold(text: str, fragment: str) -> bool:
    """Case-insensitive substring test of a trimmed fragment (upstream's ``containsFold``)."""
    return fragment.strip().lower() in text.lower()


def score_retrieval(case: Case, result: CaseResult) -> None:
    """Score ``result.hit_ids`` against the case's expected/forbidden ids, in place."""
    hits = result.hit_ids
    if case.expected_empty:
        result.passed = not hits
        if hits:
            result.unexpected_hits.extend(hits)
            result.error = f"returned {len(hits)} hits; expected none"
        return
    expected, forbidden = set(case.expected), set(case.forbidden)
    found = 0
    first_rank = 0
    for rank, hit_id in enumerate(hits, start=1):
        if hit_id in expected:
            found += 1
            first_rank = first_rank or rank
        else:
            result.unexpected_hits.append(hit_id)
        if hit_id in forbidden:
            result.forbidden_hits.append(hit_id)
    returned = set(hits)
    result.missing = [memory_id for memory_id in case.expected if memory_id not in returned]
    result.recall_at_k = found / len(case.expected)
    result.precision_at_k = found / len(hits) if hits else 0.0
    result.reciprocal_rank = 1 / first_rank if first_rank else 0.0
    first_ok = not case.expected_first or (bool(hits) and hits[0] == case.expected_first)
    limit_ok = case.max_hits <= 0 or len(hits) <= case.max_hits
    if not first_ok:
        result.error = f"expected first hit {case.expected_first}"
    if not limit_ok:
        result.error = f"returned {len(hits)} hits; expected at most {case.max_hits}"
    result.passed = not result.missing and not result.forbidden_hits and first_ok and limit_ok and not result.error


def _write_gaps(case: Case, text: str) -> tuple[list[str], list[str]]:
    """The expected write fragments missing from ``text`` and the forbidden ones in it."""
    missing = [frag for frag in case.expected_write if not contains_fold(text, frag)]
    return missing, [frag for frag in case.forbidden_write if contains_fold(text, frag)]


def _wrong_metadata(case: Case, metadata: Mapping[str, str]) -> list[str]:
    """``key='got'; want 'want'`` for each expected metadata value ``metadata`` does not have."""
    got = {key: metadata.get(key, "") for key in case.expected_metadata}
    return [f"{key}={got[key]!r}; want {want!r}" for key, want in case.expected_metadata.items() if got[key] != want]


def evaluate_write_contract(case: Case, written: bool, text: str, metadata: Mapping[str, str]) -> list[str]:
    """The provider write contract of one write case: acknowledged, fragments and metadata right."""
    missing, forbidden = _write_gaps(case, text)
    failures = [] if written else ["provider did not acknowledge the write"]
    failures += [f"missing write fragment: {frag}" for frag in missing]
    failures += [f"forbidden write fragment: {frag}" for frag in forbidden]
    return sorted(failures + [f"write metadata {wrong}" for wrong in _wrong_metadata(case, metadata)])


def score_conversation_write(
    case: Case, result: CaseResult, written_text: str, written_metadata: Mapping[str, str], hits: Sequence[MemoryHit]
) -> None:
    """Score a conversation-write case: the rendered write, then the recall of it, in place."""
    result.write_forbidden_candidates = len(case.forbidden_write)
    result.write_missing, result.write_forbidden = _write_gaps(case, written_text)
    matched = len(case.expected_write) - len(result.write_missing)
    result.metadata_mismatches += [f"write.{wrong}" for wrong in _wrong_metadata(case, written_metadata)]
    result.write_recall = matched / len(case.expected_write)
    denominator = matched + len(result.write_forbidden)
    result.write_precision = matched / denominator if denominator else 0.0

    first_rank = 0
    matching = 0
    metadata_ok = not case.expected_metadata
    first_matching_metadata: Mapping[str, str] | None = None
    for rank, hit in enumerate(hits, start=1):
        if all(contains_fold(hit.text, frag) for frag in case.expected_write):
            matching += 1
            if first_matching_metadata is None:
                first_matching_metadata = hit.metadata
            if all(hit.metadata.get(k, "") == v for k, v in case.expected_metadata.items()):
                metadata_ok = True
            first_rank = first_rank or rank
        else:
            result.unexpected_hits.append(hit.id)
        if any(contains_fold(hit.text, frag) for frag in case.forbidden_recall):
            result.forbidden_hits.append(hit.id)
    if matching and not metadata_ok and first_matching_metadata is not None:
        result.metadata_mismatches += [f"recall.{wrong}" for wrong in _wrong_metadata(case, first_matching_metadata)]
    result.metadata_mismatches.sort()
    if matching:
        result.recall_at_k = 1.0
        result.precision_at_k = matching / len(hits)
        result.reciprocal_rank = 1 / first_rank
    if case.max_matching_hits > 0 and matching > case.max_matching_hits:
        result.error = f"returned {matching} matching hits; expected at most {case.max_matching_hits}"
    result.passed = (
        result.written
        and not result.write_missing
        and not result.write_forbidden
        and not result.forbidden_hits
        and not result.metadata_mismatches
        and result.recall_at_k == 1.0
        and not result.error
    )


def aggregate(result: Result) -> None:
    """Fill the suite-level counts, means and per-category groups from ``result.cases``."""
    cases = result.cases
    result.case_count = len(cases)
    result.failed = result.case_count - _fill_means(result, cases)
    result.execution_failed = sum(1 for c in cases if c.execution_error)
    contract = [c for c in cases if c.adapter_contract_case]
    result.adapter_contract_cases = len(contract)
    result.adapter_contract_passed = sum(1 for c in contract if c.adapter_contract_passed)
    result.adapter_contract_failed = result.adapter_contract_cases - result.adapter_contract_passed
    total_hits = sum(len(c.hit_ids) for c in cases)
    unexpected = sum(len(c.unexpected_hits) for c in cases)
    result.false_positive_rate = unexpected / total_hits if total_hits else 0.0
    result.result_count = sum(c.result_count for c in cases)
    result.returned_context_bytes = sum(c.returned_context_bytes for c in cases)
    result.write_duration_us = sum(c.write_duration_us for c in cases)
    result.recall_duration_us = sum(c.recall_duration_us for c in cases)
    result.writes = sum(1 for c in cases if c.write_case and c.written)
    result.categories = []
    for name, members in groupby(sorted(cases, key=lambda c: c.category), key=lambda c: c.category):
        group = GroupResult(name=name)
        group.case_count = len(in_group := list(members))
        _fill_means(group, in_group)
        result.categories.append(group)


def _fill_means(into: Result | GroupResult, cases: Sequence[CaseResult]) -> int:
    """Set ``passed``, the retrieval means and the write means of ``cases`` on ``into``; return ``passed``."""
    n = len(cases) or 1
    into.passed = sum(1 for c in cases if c.passed)
    into.recall_at_k = sum(c.recall_at_k for c in cases) / n
    into.precision_at_k = sum(c.precision_at_k for c in cases) / n
    into.mrr = sum(c.reciprocal_rank for c in cases) / n
    writes = [c for c in cases if c.write_case]
    into.write_case_count = w = len(writes)
    candidates = sum(c.write_forbidden_candidates for c in writes)
    forbidden = sum(len(c.write_forbidden) for c in writes)
    into.write_recall = sum(c.write_recall for c in writes) / (w or 1)
    into.write_precision = sum(c.write_precision for c in writes) / (w or 1)
    into.write_false_positive_rate = forbidden / candidates if candidates else float(forbidden)
    return into.passed
