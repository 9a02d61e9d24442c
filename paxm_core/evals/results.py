"""Eval results: per case, per category and per suite, with upstream's JSON field names.

``to_json`` follows upstream's ``omitempty`` rules so a saved result can be compared with one
written by upstream (``--compare``).  Two additions, both omitted when empty:
``unsupported`` on a case (why this build cannot run it yet) and ``unsupported_cases`` on the
suite result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from paxm_core.api.json import JSONObject, JSONValue
from paxm_core.evals._strict import Obj

__all__ = ["CaseResult", "GroupResult", "Result", "parse_result"]

_WHAT = "eval result"


def _put(out: JSONObject, key: str, value: JSONValue) -> None:
    """Set ``key`` unless ``value`` is empty (Go's ``omitempty``)."""
    if value:
        out[key] = value


@dataclass
class CaseResult:
    """The outcome of one case.  ``write_case`` and ``write_forbidden_candidates`` are internal."""

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
    unsupported: str = ""
    write_case: bool = False
    write_forbidden_candidates: int = 0

    def set_execution_error(self, message: str) -> None:
        """Record a runtime/provider failure: the case fails and counts as an execution failure."""
        self.error = message
        self.execution_error = message

    def to_json(self) -> JSONObject:
        out: JSONObject = {"id": self.id, "category": self.category, "passed": self.passed}
        _put(out, "adapter_contract_case", self.adapter_contract_case)
        _put(out, "adapter_contract_passed", self.adapter_contract_passed)
        _put(out, "adapter_contract_errors", list(self.adapter_contract_errors))
        out["hit_ids"] = list(self.hit_ids)
        _put(out, "missing", list(self.missing))
        _put(out, "forbidden_hits", list(self.forbidden_hits))
        _put(out, "unexpected_hits", list(self.unexpected_hits))
        out["recall_at_k"] = self.recall_at_k
        out["precision_at_k"] = self.precision_at_k
        out["reciprocal_rank"] = self.reciprocal_rank
        _put(out, "written", self.written)
        _put(out, "write_missing", list(self.write_missing))
        _put(out, "write_forbidden", list(self.write_forbidden))
        _put(out, "metadata_mismatches", list(self.metadata_mismatches))
        _put(out, "write_recall", self.write_recall)
        _put(out, "write_precision", self.write_precision)
        _put(out, "result_count", self.result_count)
        _put(out, "returned_context_bytes", self.returned_context_bytes)
        _put(out, "write_duration_us", self.write_duration_us)
        _put(out, "recall_duration_us", self.recall_duration_us)
        out["duration_ms"] = self.duration_ms
        _put(out, "error", self.error)
        _put(out, "execution_error", self.execution_error)
        _put(out, "unsupported", self.unsupported)
        return out

    @classmethod
    def from_obj(cls, obj: Obj) -> CaseResult:
        result = cls(
            id=obj.text("id"),
            category=obj.text("category"),
            passed=obj.flag("passed"),
            adapter_contract_case=obj.flag("adapter_contract_case"),
            adapter_contract_passed=obj.flag("adapter_contract_passed"),
            adapter_contract_errors=obj.texts("adapter_contract_errors"),
            hit_ids=obj.texts("hit_ids"),
            missing=obj.texts("missing"),
            forbidden_hits=obj.texts("forbidden_hits"),
            unexpected_hits=obj.texts("unexpected_hits"),
            recall_at_k=obj.number("recall_at_k"),
            precision_at_k=obj.number("precision_at_k"),
            reciprocal_rank=obj.number("reciprocal_rank"),
            written=obj.flag("written"),
            write_missing=obj.texts("write_missing"),
            write_forbidden=obj.texts("write_forbidden"),
            metadata_mismatches=obj.texts("metadata_mismatches"),
            write_recall=obj.number("write_recall"),
            write_precision=obj.number("write_precision"),
            result_count=obj.integer("result_count"),
            returned_context_bytes=obj.integer("returned_context_bytes"),
            write_duration_us=obj.integer("write_duration_us"),
            recall_duration_us=obj.integer("recall_duration_us"),
            duration_ms=obj.integer("duration_ms"),
            error=obj.text("error"),
            execution_error=obj.text("execution_error"),
            unsupported=obj.text("unsupported"),
        )
        obj.done()
        return result


@dataclass
class GroupResult:
    """Metrics of one category."""

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

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "name": self.name,
            "case_count": self.case_count,
            "passed": self.passed,
            "recall_at_k": self.recall_at_k,
            "precision_at_k": self.precision_at_k,
            "mrr": self.mrr,
        }
        _put(out, "write_case_count", self.write_case_count)
        _put(out, "write_recall", self.write_recall)
        _put(out, "write_precision", self.write_precision)
        _put(out, "write_false_positive_rate", self.write_false_positive_rate)
        return out

    @classmethod
    def from_obj(cls, obj: Obj) -> GroupResult:
        group = cls(
            name=obj.text("name"),
            case_count=obj.integer("case_count"),
            passed=obj.integer("passed"),
            recall_at_k=obj.number("recall_at_k"),
            precision_at_k=obj.number("precision_at_k"),
            mrr=obj.number("mrr"),
            write_case_count=obj.integer("write_case_count"),
            write_recall=obj.number("write_recall"),
            write_precision=obj.number("write_precision"),
            write_false_positive_rate=obj.number("write_false_positive_rate"),
        )
        obj.done()
        return group


@dataclass
class Result:
    """A suite run: counts, means over cases, the false-positive rate, cases and categories."""

    suite: str
    version: int
    case_count: int = 0
    passed: int = 0
    failed: int = 0
    adapter_contract_cases: int = 0
    adapter_contract_passed: int = 0
    adapter_contract_failed: int = 0
    execution_failed: int = 0
    unsupported_cases: int = 0
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

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "suite": self.suite,
            "version": self.version,
            "case_count": self.case_count,
            "passed": self.passed,
            "failed": self.failed,
        }
        _put(out, "adapter_contract_cases", self.adapter_contract_cases)
        _put(out, "adapter_contract_passed", self.adapter_contract_passed)
        _put(out, "adapter_contract_failed", self.adapter_contract_failed)
        _put(out, "execution_failed", self.execution_failed)
        _put(out, "unsupported_cases", self.unsupported_cases)
        out["recall_at_k"] = self.recall_at_k
        out["precision_at_k"] = self.precision_at_k
        out["mrr"] = self.mrr
        out["false_positive_rate"] = self.false_positive_rate
        _put(out, "write_case_count", self.write_case_count)
        _put(out, "writes", self.writes)
        _put(out, "write_recall", self.write_recall)
        _put(out, "write_precision", self.write_precision)
        _put(out, "write_false_positive_rate", self.write_false_positive_rate)
        _put(out, "result_count", self.result_count)
        _put(out, "returned_context_bytes", self.returned_context_bytes)
        _put(out, "write_duration_us", self.write_duration_us)
        _put(out, "recall_duration_us", self.recall_duration_us)
        out["duration_ms"] = self.duration_ms
        out["cases"] = [case.to_json() for case in self.cases]
        out["categories"] = [group.to_json() for group in self.categories]
        return out


def parse_result(data: object) -> Result:
    """Strictly decode a saved result (ours or upstream's) for ``--compare``."""
    obj = Obj(data, "", _WHAT)
    result = Result(
        suite=obj.text("suite"),
        version=obj.integer("version"),
        case_count=obj.integer("case_count"),
        passed=obj.integer("passed"),
        failed=obj.integer("failed"),
        adapter_contract_cases=obj.integer("adapter_contract_cases"),
        adapter_contract_passed=obj.integer("adapter_contract_passed"),
        adapter_contract_failed=obj.integer("adapter_contract_failed"),
        execution_failed=obj.integer("execution_failed"),
        unsupported_cases=obj.integer("unsupported_cases"),
        recall_at_k=obj.number("recall_at_k"),
        precision_at_k=obj.number("precision_at_k"),
        mrr=obj.number("mrr"),
        false_positive_rate=obj.number("false_positive_rate"),
        write_case_count=obj.integer("write_case_count"),
        writes=obj.integer("writes"),
        write_recall=obj.number("write_recall"),
        write_precision=obj.number("write_precision"),
        write_false_positive_rate=obj.number("write_false_positive_rate"),
        result_count=obj.integer("result_count"),
        returned_context_bytes=obj.integer("returned_context_bytes"),
        write_duration_us=obj.integer("write_duration_us"),
        recall_duration_us=obj.integer("recall_duration_us"),
        duration_ms=obj.integer("duration_ms"),
        cases=[CaseResult.from_obj(item) for item in obj.objs("cases")],
        categories=[GroupResult.from_obj(item) for item in obj.objs("categories")],
    )
    obj.done()
    return result
