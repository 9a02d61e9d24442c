"""Eval results: per case, per category and per suite, with upstream's JSON names and ``omitempty`` rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from paxm_core.api.json import JSONObject
from paxm_core.evals._strict import INTERNAL, Obj, decode, encode

__all__ = ["CaseResult", "GroupResult", "Result", "parse_result"]

_WHAT = "eval result"


class _Upstream:
    #: the keys upstream writes even when empty; every other key is ``omitempty``
    ALWAYS: ClassVar[tuple[str, ...]] = ()

    def to_json(self) -> JSONObject:
        """Upstream's JSON shape (``omitempty`` as upstream)."""
        return encode(self, self.ALWAYS)


@dataclass
class CaseResult(_Upstream):
    """The outcome of one case.  ``write_case`` and ``write_forbidden_candidates`` are internal."""

    ALWAYS = ("id", "category", "passed", "hit_ids", "recall_at_k", "precision_at_k", "reciprocal_rank", "duration_ms")

    id: str
    category: str
    passed: bool = False
    adapter_contract_case: bool = False
    adapter_contract_passed: bool = False
    adapter_contract_errors: list[str] = field(default_factory=list)
    hit_ids: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    forbidden_hits: list[str] = field(default_factory=list)
    unexpected_hits: list[str] = field(default_factory=list)
    recall_at_k: float = 0.0
    precision_at_k: float = 0.0
    reciprocal_rank: float = 0.0
    written: bool = False
    write_missing: list[str] = field(default_factory=list)
    write_forbidden: list[str] = field(default_factory=list)
    metadata_mismatches: list[str] = field(default_factory=list)
    write_recall: float = 0.0
    write_precision: float = 0.0
    result_count: int = 0
    returned_context_bytes: int = 0
    write_duration_us: int = 0
    recall_duration_us: int = 0
    duration_ms: int = 0
    error: str = ""
    execution_error: str = ""
    write_case: bool = field(default=False, metadata=INTERNAL)
    write_forbidden_candidates: int = field(default=0, metadata=INTERNAL)

    def set_execution_error(self, message: str) -> None:
        """Record a runtime/provider failure: the case fails and counts as an execution failure."""
        self.error = message
        self.execution_error = message


@dataclass
class GroupResult(_Upstream):
    """Metrics of one category."""

    ALWAYS = ("name", "case_count", "passed", "recall_at_k", "precision_at_k", "mrr")

    name: str
    case_count: int = 0
    passed: int = 0
    recall_at_k: float = 0.0
    precision_at_k: float = 0.0
    mrr: float = 0.0
    write_case_count: int = 0
    write_recall: float = 0.0
    write_precision: float = 0.0
    write_false_positive_rate: float = 0.0


@dataclass
class Result(_Upstream):
    """A suite run: counts, means over cases, the false-positive rate, cases and categories."""

    ALWAYS = (
        *("suite", "version", "case_count", "passed", "failed", "recall_at_k", "precision_at_k", "mrr"),
        *("false_positive_rate", "duration_ms", "cases", "categories"),
    )

    suite: str
    version: int
    case_count: int = 0
    passed: int = 0
    failed: int = 0
    adapter_contract_cases: int = 0
    adapter_contract_passed: int = 0
    adapter_contract_failed: int = 0
    execution_failed: int = 0
    recall_at_k: float = 0.0
    precision_at_k: float = 0.0
    mrr: float = 0.0
    false_positive_rate: float = 0.0
    write_case_count: int = 0
    writes: int = 0
    write_recall: float = 0.0
    write_precision: float = 0.0
    write_false_positive_rate: float = 0.0
    result_count: int = 0
    returned_context_bytes: int = 0
    write_duration_us: int = 0
    recall_duration_us: int = 0
    duration_ms: int = 0
    cases: list[CaseResult] = field(default_factory=list)
    categories: list[GroupResult] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        """Passed cases / all cases (0 for an empty result)."""
        return self.passed / self.case_count if self.case_count else 0.0


def parse_result(data: object) -> Result:
    """Strictly decode a saved result (ours or upstream's) for ``--compare``."""
    return decode(Result, Obj(data, "", _WHAT))
