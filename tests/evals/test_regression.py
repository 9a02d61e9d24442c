"""Budgets, --compare, gates and the text report, on synthetic results."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from paxm_core.api.errors import UsageError
from paxm_core.evals._strict import EvalFileError
from paxm_core.evals.gates import gate_failure, validate_gate_options
from paxm_core.evals.regression import Budget, check_budget, compare, load_budget, load_result, parse_budget
from paxm_core.evals.report import format_comparison, format_report
from paxm_core.evals.results import CaseResult, Result, parse_result
from paxm_core.evals.scoring import aggregate

_BUDGET = {
    "min_pass_rate": 1.0,
    "min_recall_at_k": 1.0,
    "min_precision_at_k": 0.95,
    "min_mrr": 1.0,
    "max_false_positive_rate": 0.084,
}


def _result(*cases: CaseResult, suite: str = "s") -> Result:
    result = Result(suite=suite, version=1, cases=list(cases))
    aggregate(result)
    return result


def _ok(case_id: str, category: str = "x") -> CaseResult:
    return CaseResult(
        case_id, category, passed=True, hit_ids=[case_id], recall_at_k=1, precision_at_k=1, reciprocal_rank=1
    )


def _bad(case_id: str) -> CaseResult:
    return CaseResult(case_id, "x", hit_ids=["d"], missing=[case_id], forbidden_hits=["d"], unexpected_hits=["d"])


def test_budget_parse_and_check(tmp_path: Path, kit: ModuleType) -> None:
    budget = load_budget(kit.write_json(tmp_path / "budget.json", _BUDGET))
    assert budget == Budget(1.0, 1.0, 0.95, 1.0, 0.084)
    assert check_budget(_result(_ok("a"), _ok("b")), budget) == []
    failures = check_budget(_result(_ok("a"), _bad("b")), budget)
    assert failures == [
        "pass rate 0.500 is below 1.000",
        "recall@k 0.500 is below 1.000",
        "precision@k 0.500 is below 0.950",
        "mrr 0.500 is below 1.000",
        "false-positive rate 0.500 exceeds 0.084",
    ]


def test_write_budget_applies_only_with_write_cases() -> None:
    budget = Budget(0, 0, 0, 0, 1, min_write_recall=1.0, min_write_precision=1.0, max_write_false_positive_rate=0)
    assert check_budget(_result(_ok("a")), budget) == []
    write = CaseResult("w", "x", write_case=True, written=True, write_recall=0.5, write_precision=1.0)
    assert check_budget(_result(write), budget) == ["write recall 0.500 is below 1.000"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({k: v for k, v in _BUDGET.items() if k != "min_mrr"}, "budget min_mrr is required"),
        ({**_BUDGET, "min_mrr": 1.5}, "budget min_mrr must be between 0 and 1"),
        ({**_BUDGET, "max_write_false_positive_rate": -0.1}, "max_write_false_positive_rate must be between 0 and 1"),
        ({**_BUDGET, "min_latency": 0.1}, "unknown field 'min_latency'"),
        ({**_BUDGET, "min_mrr": "1"}, "min_mrr: expected a number"),
        ([], "expected an object"),
    ],
)
def test_bad_budgets(data: object, message: str) -> None:
    with pytest.raises(EvalFileError) as info:
        parse_budget(data)
    assert message in str(info.value)


def test_result_json_round_trip_and_compare(tmp_path: Path) -> None:
    before = _result(_ok("a"), _bad("b"))
    path = tmp_path / "before.json"
    path.write_text(json.dumps(before.to_json()), encoding="utf-8")
    loaded = load_result(path)
    assert loaded.to_json() == before.to_json()
    after = _result(_ok("a"), _ok("b"))
    after.duration_ms = before.duration_ms + 7
    comparison = compare(loaded, after)
    assert comparison.passed_delta == 1
    assert comparison.recall_at_k_delta == pytest.approx(0.5)
    assert comparison.false_positive_rate_delta == pytest.approx(-0.5)
    assert comparison.duration_ms_delta == 7
    assert "write_recall_delta" not in comparison.to_json()
    text = format_comparison(comparison)
    assert text.splitlines()[0] == "comparison: s -> s"
    assert "passed +1  recall@k +0.500" in text and "duration +7ms" in text


def test_compare_accepts_the_json_wrapper_and_rejects_other_suites(tmp_path: Path) -> None:
    result = _result(_ok("a"))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"result": result.to_json(), "budget_failures": ["x"]}), encoding="utf-8")
    assert load_result(wrapped).suite == "s"
    with pytest.raises(EvalFileError, match="cannot compare incompatible eval results: s v1 \\(1 cases\\) vs t v1"):
        compare(result, _result(_ok("a"), suite="t"))
    with pytest.raises(EvalFileError, match="incompatible"):
        compare(result, _result(_ok("a"), _ok("b")))


def test_saved_result_is_parsed_strictly() -> None:
    data = _result(_ok("a")).to_json()
    data["cases"][0]["surprise"] = 1
    with pytest.raises(EvalFileError, match="cases\\[0\\]: unknown field 'surprise'"):
        parse_result(data)


def test_json_shape_follows_upstream_omitempty() -> None:
    data = _result(_ok("a"), _bad("b")).to_json()
    assert list(data) == [
        "suite", "version", "case_count", "passed", "failed", "recall_at_k", "precision_at_k", "mrr",
        "false_positive_rate", "duration_ms", "cases", "categories",
    ]  # fmt: skip
    assert list(data["cases"][1]) == [
        "id", "category", "passed", "hit_ids", "missing", "forbidden_hits", "unexpected_hits", "recall_at_k",
        "precision_at_k", "reciprocal_rank", "duration_ms",
    ]  # fmt: skip
    assert data["categories"] == [
        {"name": "x", "case_count": 2, "passed": 1, "recall_at_k": 0.5, "precision_at_k": 0.5, "mrr": 0.5}
    ]


def test_gate_option_validation() -> None:
    validate_gate_options("quality", True)
    validate_gate_options("none", False)
    with pytest.raises(UsageError, match="cannot be used with --gate adapter"):
        validate_gate_options("adapter", True)
    with pytest.raises(UsageError, match="cannot be enforced with --gate none"):
        validate_gate_options("none", True)
    with pytest.raises(UsageError, match="unsupported eval gate 'strict'"):
        validate_gate_options("strict", False)


def test_gates() -> None:
    clean = _result(_ok("a"))
    failing = _result(_ok("a"), _bad("b"))
    broken = _result(_ok("a"), CaseResult("e", "x", error="boom", execution_error="boom"))
    assert gate_failure("none", failing, []) is None  # quality failures do not fail gate none
    assert gate_failure("none", broken, []) == "eval execution failed: 1 cases had runtime or provider errors"
    assert gate_failure("quality", clean, []) is None
    assert gate_failure("quality", clean, ["mrr 0.9 is below 1.0"]) == (
        "eval regression budget failed: 1 metrics outside budget"
    )
    assert gate_failure("quality", failing, []) == "eval failed: 1 of 2 cases failed"
    assert gate_failure("adapter", clean, []) == "adapter gate requires a suite with conversation writes"
    contract_ok = CaseResult("w", "x", adapter_contract_case=True, adapter_contract_passed=True)
    contract_bad = CaseResult("v", "x", adapter_contract_case=True, adapter_contract_errors=["missing"])
    assert gate_failure("adapter", _result(contract_ok), []) is None
    assert (
        gate_failure("adapter", _result(contract_ok, contract_bad), [])
        == "adapter contract failed: 1 of 2 cases failed"
    )


def test_text_report_lines() -> None:
    bad = _bad("b")
    bad.error = "expected first hit b"
    report = format_report(_result(_ok("a", "alpha"), bad))
    lines = report.splitlines()
    assert lines[0] == "paxm eval: s (v1)"
    assert lines[1].startswith("cases: 2  passed: 1  failed: 1  duration: ")
    assert lines[2] == "recall@k: 0.500  precision@k: 0.500  mrr: 0.500  false-positive rate: 0.500"
    assert lines[3] == "  alpha                  1/1    recall@k 1.000  precision@k 1.000  mrr 1.000"
    assert lines[-1] == "FAIL b: expected first hit b missing=b forbidden=d unexpected=d"
