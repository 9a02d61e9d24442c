"""Regression budgets and ``--compare`` (upstream ``internal/eval/regression.go``, docs/evals.md)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from paxm_core.api.json import JSONObject
from paxm_core.evals._strict import EvalFileError, Obj, encode, read_json_file
from paxm_core.evals.results import Result, parse_result

__all__ = ["Budget", "Comparison", "check_budget", "compare", "load_budget", "load_result", "parse_budget"]

_REQUIRED = ("min_pass_rate", "min_recall_at_k", "min_precision_at_k", "min_mrr", "max_false_positive_rate")
_OPTIONAL = ("min_write_recall", "min_write_precision", "max_write_false_positive_rate")


@dataclass(frozen=True)
class Budget:
    """Thresholds a result must meet under ``--gate quality``."""

    min_pass_rate: float
    min_recall_at_k: float
    min_precision_at_k: float
    min_mrr: float
    max_false_positive_rate: float
    min_write_recall: float = 0.0
    min_write_precision: float = 0.0
    max_write_false_positive_rate: float = 0.0


def parse_budget(data: object, source: str = "budget") -> Budget:
    """Strictly decode a budget; raise :class:`EvalFileError` for unknown, missing or out-of-range keys."""
    obj = Obj(data, "", source)
    for key in _REQUIRED:
        if not obj.has(key):
            raise EvalFileError(f"{source}: budget {key} is required")
    values = {key: obj.scalar(key, float) for key in (*_REQUIRED, *_OPTIONAL)}
    obj.done()
    for key, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise EvalFileError(f"{source}: budget {key} must be between 0 and 1 (got {value})")
    return Budget(**values)


def load_budget(path: str | Path) -> Budget:
    resolved = Path(path).expanduser()
    return parse_budget(read_json_file(resolved, "budget"), f"budget {resolved}")


def load_result(path: str | Path) -> Result:
    """Read a result saved with ``--output`` (or upstream's ``--json``) for ``--compare``.

    A combined ``{result, comparison, budget_failures}`` document is accepted too, since that is
    what ``--json`` prints when a budget or comparison is active.
    """
    resolved = Path(path).expanduser()
    data: Any = read_json_file(resolved, "eval result")
    if isinstance(data, dict) and "result" in data and "suite" not in data:
        wrapper = Obj(data, "", f"eval result {resolved}")
        wrapper.obj("comparison")
        wrapper.texts("budget_failures")
        data = data["result"]
        wrapper.obj("result")
        wrapper.done()
    try:
        return parse_result(data)
    except EvalFileError as exc:
        raise EvalFileError(f"{resolved}: {exc}") from exc


def check_budget(result: Result, budget: Budget) -> list[str]:
    """Every metric of ``result`` outside ``budget``, as upstream-worded messages (empty = within)."""
    failures: list[str] = []

    def at_least(name: str, actual: float, minimum: float) -> None:
        if actual < minimum:
            failures.append(f"{name} {actual:.3f} is below {minimum:.3f}")

    def at_most(name: str, actual: float, maximum: float) -> None:
        if actual > maximum:
            failures.append(f"{name} {actual:.3f} exceeds {maximum:.3f}")

    at_least("pass rate", result.pass_rate, budget.min_pass_rate)
    at_least("recall@k", result.recall_at_k, budget.min_recall_at_k)
    at_least("precision@k", result.precision_at_k, budget.min_precision_at_k)
    at_least("mrr", result.mrr, budget.min_mrr)
    at_most("false-positive rate", result.false_positive_rate, budget.max_false_positive_rate)
    if result.write_case_count > 0:
        at_least("write recall", result.write_recall, budget.min_write_recall)
        at_least("write precision", result.write_precision, budget.min_write_precision)
        at_most("write false-positive rate", result.write_false_positive_rate, budget.max_write_false_positive_rate)
    return failures


@dataclass(frozen=True)
class Comparison:
    """Deltas ``current - baseline`` of the suite metrics."""

    baseline_suite: str
    current_suite: str
    passed_delta: int
    recall_at_k_delta: float
    precision_at_k_delta: float
    mrr_delta: float
    false_positive_rate_delta: float
    write_recall_delta: float
    write_precision_delta: float
    write_false_positive_rate_delta: float
    duration_ms_delta: int

    @property
    def has_write_deltas(self) -> bool:
        return bool(self.write_recall_delta or self.write_precision_delta or self.write_false_positive_rate_delta)

    def to_json(self) -> JSONObject:
        """Every delta; the write deltas only when non-zero."""
        return encode(self, [f.name for f in fields(self) if not f.name.startswith("write_")])


_DELTAS = (
    *("passed", "recall_at_k", "precision_at_k", "mrr", "false_positive_rate"),
    *("write_recall", "write_precision", "write_false_positive_rate", "duration_ms"),
)


def compare(baseline: Result, current: Result) -> Comparison:
    """Deltas between two results of the same suite; :class:`EvalFileError` if they are incompatible."""
    if (baseline.suite, baseline.version, baseline.case_count) != (current.suite, current.version, current.case_count):
        raise EvalFileError(
            "cannot compare incompatible eval results: "
            f"{baseline.suite} v{baseline.version} ({baseline.case_count} cases) vs "
            f"{current.suite} v{current.version} ({current.case_count} cases)"
        )
    deltas = {f"{name}_delta": getattr(current, name) - getattr(baseline, name) for name in _DELTAS}
    return Comparison(baseline_suite=baseline.suite, current_suite=current.suite, **deltas)
