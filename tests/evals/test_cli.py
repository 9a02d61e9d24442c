"""``paxm eval run`` as a user runs it: real subprocesses, exit codes per gate, JSON and files."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def paxm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PAXM, *args], capture_output=True, text=True, timeout=300, env=os.environ.copy())


def _budget(**overrides: float) -> dict[str, float]:
    budget = {
        "min_pass_rate": 1.0,
        "min_recall_at_k": 1.0,
        "min_precision_at_k": 0.5,
        "min_mrr": 1.0,
        "max_false_positive_rate": 0.5,
    }
    budget.update(overrides)
    return budget


@pytest.fixture
def small_suite(tmp_path: Path, kit: ModuleType) -> Path:
    """Two passing cases and one that fails on purpose (its expected memory does not match)."""
    failing = kit.retrieval_case("miss")
    failing["memories"][0]["text"] = "nothing relevant here at all"
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    kit.write_json(suite_dir / "suite.json", kit.suite(kit.retrieval_case("a"), kit.retrieval_case("b"), failing))
    return suite_dir


def test_text_report_and_gates(small_suite: Path, tmp_path: Path, kit: ModuleType) -> None:
    out = paxm("eval", "run", "--suite", str(small_suite))
    assert out.returncode == 0, out.stderr  # gate none: quality failures do not fail the run
    lines = out.stdout.splitlines()
    assert lines[0] == "paxm eval: synthetic (v1)"
    assert lines[1].startswith("cases: 3  passed: 2  failed: 1")
    assert "FAIL miss missing=miss-target" in lines  # upstream's FAIL line: no error, so no colon
    assert out.stderr == ""  # stderr is no terminal here: no progress bar (tests/test_progress.py covers one)

    quality = paxm("eval", "run", "--suite", str(small_suite / "suite.json"), "--gate", "quality")
    assert quality.returncode == 1
    assert quality.stderr.strip().endswith("Error: eval failed: 1 of 3 cases failed")
    assert "FAIL miss" in quality.stdout  # the report is printed before the gate fails

    budget = kit.write_json(tmp_path / "budget.json", _budget(min_pass_rate=0.5, min_recall_at_k=0.5, min_mrr=0.5))
    # one failed case still fails gate quality even inside the budget
    assert (
        paxm("eval", "run", "--suite", str(small_suite), "--gate", "quality", "--budget", str(budget)).returncode == 1
    )

    adapter = paxm("eval", "run", "--suite", str(small_suite), "--gate", "adapter")
    assert adapter.returncode == 1 and "adapter gate requires a suite with conversation writes" in adapter.stderr


def test_budget_failures_json_output_and_compare(tmp_path: Path, kit: ModuleType) -> None:
    suite_dir = tmp_path / "ok"
    suite_dir.mkdir()
    kit.write_json(suite_dir / "suite.json", kit.suite(kit.retrieval_case("a"), kit.retrieval_case("b"), name="ok"))
    tight = kit.write_json(tmp_path / "tight.json", _budget(max_false_positive_rate=0.0, min_precision_at_k=1.0))
    saved = tmp_path / "out" / "result.json"
    first = paxm(
        "eval", "run", "--suite", str(suite_dir), "--gate", "quality", "--budget", str(tight), "--output", str(saved)
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert "BUDGET FAIL" not in first.stdout
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    stored = json.loads(saved.read_text())
    assert (stored["suite"], stored["case_count"], stored["passed"]) == ("ok", 2, 2)

    out = paxm("eval", "run", "--suite", str(suite_dir), "--gate", "quality", "--budget", str(tight),
               "--compare", str(saved), "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    payload: dict[str, Any] = json.loads(out.stdout)
    assert set(payload) == {"result", "comparison"}  # no budget failures -> key omitted
    assert payload["comparison"]["passed_delta"] == 0
    assert payload["result"]["cases"][0]["hit_ids"][0] == "a-target"
    assert "eval:" not in out.stderr  # no progress noise with --json

    text = paxm("eval", "run", "--suite", str(suite_dir), "--compare", str(saved))
    assert "comparison: ok -> ok" in text.stdout and "passed +0" in text.stdout


def test_budget_violation_prints_and_fails(tmp_path: Path, kit: ModuleType) -> None:
    # An expected_empty case passes with zero hits but scores Recall@K 0 (upstream's rule), so
    # every case passes and only the budget can fail the gate.
    empty = {
        "id": "empty",
        "category": "suppression",
        "memories": [{"id": "o", "text": "osprey nesting season notes"}],
        "recall": {"mode": "active", "query": "zzqqxx"},
        "expected_empty": True,
    }
    suite = kit.write_json(tmp_path / "suite.json", kit.suite(kit.retrieval_case("a"), empty))
    budget = kit.write_json(tmp_path / "budget.json", _budget())
    out = paxm("eval", "run", "--suite", str(suite), "--gate", "quality", "--budget", str(budget))
    assert out.returncode == 1
    assert "cases: 2  passed: 2  failed: 0" in out.stdout
    assert "BUDGET FAIL: recall@k 0.500 is below 1.000" in out.stdout
    assert "BUDGET FAIL: mrr 0.500 is below 1.000" in out.stdout
    assert "Error: eval regression budget failed: 2 metrics outside budget" in out.stderr
    as_json = paxm("eval", "run", "--suite", str(suite), "--gate", "quality", "--budget", str(budget), "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["budget_failures"] == [
        "recall@k 0.500 is below 1.000",
        "mrr 0.500 is below 1.000",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gate", "none", "--budget", "b.json"], "--budget cannot be enforced with --gate none"),
        (["--gate", "adapter", "--budget", "b.json"], "cannot be used with --gate adapter"),
        (["--budget", "missing.json", "--gate", "quality"], "read budget"),
        (["--compare", "missing.json"], "read eval result"),
    ],
)
def test_bad_invocations_fail_fast(small_suite: Path, args: list[str], message: str) -> None:
    out = paxm("eval", "run", "--suite", str(small_suite), *args)
    assert out.returncode == 1
    assert message in out.stderr and "Traceback" not in out.stderr
    assert out.stdout == ""  # rejected before any case ran


def test_bad_suite_and_unknown_gate(tmp_path: Path, kit: ModuleType) -> None:
    bad = kit.write_json(tmp_path / "suite.json", {"version": 1, "name": "x", "cases": [], "oops": True})
    out = paxm("eval", "run", "--suite", str(bad))
    assert out.returncode == 1 and "unknown field 'oops'" in out.stderr and str(bad) in out.stderr
    gate = paxm("eval", "run", "--suite", str(bad), "--gate", "strict")
    assert gate.returncode == 2 and "strict" in gate.stderr  # click's usage error
    listing = paxm("eval", "--help")
    assert listing.returncode == 0 and "run" in listing.stdout


def _shared(kit: ModuleType, name: str) -> Path:
    path = kit.SHARED_EVALS / name
    if not (path / "suite.json").is_file():
        pytest.skip(
            f"upstream eval suite {name!r} not found under {kit.SHARED_EVALS} (../shared/evals beside the repo)"
        )
    return Path(path)


def test_baseline_passes_its_budget(kit: ModuleType) -> None:
    """The CI gate of the issue: ``../shared/evals/baseline`` at 100/100 within budget."""
    baseline = _shared(kit, "baseline")
    out = paxm("eval", "run", "--suite", str(baseline), "--gate", "quality", "--budget", str(baseline / "budget.json"),
               "--json")  # fmt: skip
    payload = json.loads(out.stdout)
    cases = payload["result"]["cases"]
    failed = [(c["id"], c.get("error"), c.get("missing"), c.get("forbidden_hits")) for c in cases if not c["passed"]]
    assert out.returncode == 0, (failed, payload.get("budget_failures"), out.stderr[-2000:])
    assert payload["result"]["passed"] == payload["result"]["case_count"] == 100
    assert "budget_failures" not in payload


@pytest.mark.parametrize(("name", "count"), [("conversation-write", 50), ("lifecycle", 40)])
def test_write_suites_pass_their_budgets(kit: ModuleType, name: str, count: int) -> None:
    """Hook writes rendered and stored through the production path, then recalled (incl. after restart)."""
    suite = _shared(kit, name)
    out = paxm("eval", "run", "--suite", str(suite), "--gate", "quality", "--budget", str(suite / "budget.json"),
               "--json")  # fmt: skip
    payload = json.loads(out.stdout)
    result = payload["result"]
    failed = [(c["id"], c.get("error"), c.get("adapter_contract_errors")) for c in result["cases"] if not c["passed"]]
    assert out.returncode == 0, (failed, payload.get("budget_failures"), out.stderr[-2000:])
    assert result["passed"] == result["case_count"] == count
    assert result["adapter_contract_passed"] == result["write_case_count"] == result["writes"] == count


def test_adapter_gate_on_write_cases(tmp_path: Path, kit: ModuleType) -> None:
    good = kit.write_case("good")
    bad = kit.write_case("bad")
    bad["expected_write"] = ["lunar cache", "eleven minute TTL"]  # not in the prompt: contract fails
    passing = kit.write_json(tmp_path / "good.json", kit.suite(good))
    out = paxm("eval", "run", "--suite", str(passing), "--gate", "adapter")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "adapter contract: 1/1 passed  failed: 0" in out.stdout
    assert "writes: 1/1  write recall: 1.000" in out.stdout
    failing = kit.write_json(tmp_path / "bad.json", kit.suite(good, bad))
    out = paxm("eval", "run", "--suite", str(failing), "--gate", "adapter")
    assert out.returncode == 1
    assert "Error: adapter contract failed: 1 of 2 cases failed" in out.stderr
    assert "adapter=missing write fragment: eleven minute TTL" in out.stdout


def test_docs_cover_every_option_and_gate() -> None:
    from paxm_core.cli.eval_cmds import eval_group
    from paxm_core.evals.gates import GATES

    docs = (Path(__file__).resolve().parents[2] / "docs" / "evals.md").read_text(encoding="utf-8")
    run = eval_group.commands["run"]
    options = [opt for param in run.params for opt in getattr(param, "opts", []) if opt.startswith("--")]
    assert options and all(f"`{opt}" in docs for opt in options), [o for o in options if f"`{o}" not in docs]
    assert all(f"`{gate}`" in docs for gate in GATES)


def test_output_never_truncates_or_chmods_through_a_link(small_suite: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text("not paxm's\n")
    victim.chmod(0o644)
    link = tmp_path / "result.json"
    link.symlink_to(victim)
    out = paxm("eval", "run", "--suite", str(small_suite), "--output", str(link))
    assert out.returncode != 0 and "symbolic link" in out.stderr, out.stderr
    assert victim.read_text() == "not paxm's\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    fresh = tmp_path / "out" / "result.json"  # a new file (and directory) is private
    assert paxm("eval", "run", "--suite", str(small_suite), "--output", str(fresh)).returncode == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600 and json.loads(fresh.read_text())
