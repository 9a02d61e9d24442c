"""Upstream's baseline eval suite through the postgres provider meets its budget, as SQLite does.

The suite is upstream's data outside this repository (``../shared/evals`` beside the checkout,
or ``$PAXM_EVALS_DIR``); the test skips with a reason when it is absent.  Cases run under the
router's default profiles (:mod:`paxm_contracttest.eval_suites`), as in the SQLite provider's eval test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pgserver import PgServer, pg_config

from paxm_contracttest.eval_suites import evals_dir, recall_case, suite_budget, suite_cases
from paxm_core import Deadline
from paxm_provider_postgres.provider import PostgresProvider

EVALS = evals_dir(Path(__file__).resolve().parents[3])
BASELINE = suite_cases(EVALS, "baseline")
BUDGET = suite_budget(EVALS, "baseline") if BASELINE else {}


@pytest.fixture(scope="module")
def provider(pg_server: PgServer) -> Iterator[PostgresProvider]:
    prov = PostgresProvider("postgres", pg_config(pg_server, "evals_baseline"))
    yield prov
    prov.close()
    pg_server.sql("DROP SCHEMA evals_baseline CASCADE")


def run_case(prov: PostgresProvider, case: dict[str, Any]) -> list[str]:
    with prov.database.transaction("reset", Deadline.after(30)) as conn:
        conn.execute('TRUNCATE "evals_baseline".paxm_memories')
    return [h.id for h in recall_case(prov, case, timeout=10)]


@pytest.mark.skipif(not BASELINE, reason=f"shared eval suites not found under {EVALS} (set PAXM_EVALS_DIR)")
def test_baseline_suite_meets_its_budget(provider: PostgresProvider) -> None:
    passed, relevant, found, returned, correct, rr, false_pos, negatives = 0, 0, 0, 0, 0, 0.0, 0, 0
    failures = []
    for case in BASELINE:
        got = run_case(provider, case)
        expected = list(case.get("expected") or [])
        forbidden = [f for f in case.get("forbidden") or [] if f in got]
        missing = [e for e in expected if e not in got]
        first_ok = not case.get("expected_first") or got[:1] == [case["expected_first"]]
        if not missing and not forbidden and first_ok:
            passed += 1
        else:
            failures.append(f"{case['id']}: got={got} missing={missing} forbidden={forbidden}")
        if expected:
            relevant += len(expected)
            found += len(expected) - len(missing)
            returned += len(got)
            correct += sum(1 for g in got if g in expected)
            rank = next((i for i, g in enumerate(got) if g in expected), None)
            rr += 1.0 / (rank + 1) if rank is not None else 0.0
        else:
            negatives += 1
            false_pos += 1 if got else 0
    with_expected = sum(1 for c in BASELINE if c.get("expected"))
    pass_rate = passed / len(BASELINE)
    assert pass_rate >= BUDGET["min_pass_rate"], "\n".join(failures)
    assert found / relevant >= BUDGET["min_recall_at_k"]
    assert (correct / returned if returned else 1.0) >= BUDGET["min_precision_at_k"]
    assert rr / with_expected >= BUDGET["min_mrr"]
    assert (false_pos / negatives if negatives else 0.0) <= BUDGET["max_false_positive_rate"]
