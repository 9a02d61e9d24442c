"""The shared deterministic eval suites, run straight against the provider.

The suites are upstream's data and live outside this repository (``../shared/evals`` beside
the checkout, or ``$PAXM_EVALS_DIR``); the test skips with a reason when they are absent.  Cases run
under the router's default profiles (:mod:`paxm_contracttest.eval_suites`), so a pass here means
the provider leaves the router nothing to rescue.  ``paxm eval run`` covers the full runtime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.eval_suites import evals_dir, recall_case, suite_cases
from paxm_core import ProviderConfig
from paxm_provider_sqlite.provider import SQLiteProvider

EVALS = evals_dir(Path(__file__).resolve().parents[3])
BASELINE = suite_cases(EVALS, "baseline")


def run_case(case: dict[str, Any], tmp_path: Path) -> tuple[list[str], list[float]]:
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "case.sqlite")))
    try:
        kept = recall_case(prov, case, timeout=5)
        return [h.id for h in kept], [h.relevance for h in kept]
    finally:
        prov.close()


@pytest.mark.skipif(not BASELINE, reason=f"shared eval suites not found under {EVALS} (set PAXM_EVALS_DIR)")
@pytest.mark.parametrize("case", BASELINE, ids=[c["id"] for c in BASELINE])
def test_baseline_case(case: dict[str, Any], tmp_path: Path) -> None:
    got, scores = run_case(case, tmp_path)
    missing = [e for e in case.get("expected") or [] if e not in got]
    forbidden = [f for f in case.get("forbidden") or [] if f in got]
    assert not missing and not forbidden, f"got={got} scores={scores} missing={missing} forbidden={forbidden}"
    if case.get("expected_first"):
        assert got[:1] == [case["expected_first"]]
