"""The shared deterministic eval suites, run straight against the provider.

The suites are upstream's data and live outside this repository (``../shared/evals`` beside
the checkout, or ``$PAXM_EVALS_DIR``); the test skips with a reason when they are absent.  Profiles mirror the
defaults the router applies (tiers, thresholds, result limits), so a pass here means the
provider leaves the router nothing to rescue.  ``paxm eval run`` covers the full runtime.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from paxm_core import Deadline, MemoryItem, ProviderConfig, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider

REPO = Path(__file__).resolve().parents[3]
EVALS = Path(os.environ.get("PAXM_EVALS_DIR") or REPO.parent / "shared" / "evals")
# mode -> (tiers, min_relevance, default limit): upstream's default recall profiles
PROFILES: dict[str, tuple[tuple[str, ...], float, int]] = {
    "active": ((), 0.25, 3),
    "passive": (("ltm",), 0.75, 2),
    "passive_initial": (("ltm",), 0.35, 5),
}


def _cases(name: str) -> list[dict[str, Any]]:
    path = EVALS / name / "suite.json"
    if not path.is_file():
        return []
    cases: list[dict[str, Any]] = json.loads(path.read_text())["cases"]
    return [c for c in cases if "recall" in c and not c.get("write")]


BASELINE = _cases("baseline")


def run_case(case: dict[str, Any], tmp_path: Path) -> tuple[list[str], list[float]]:
    prov = SQLiteProvider("sqlite", ProviderConfig(path=str(tmp_path / "case.sqlite")))
    try:
        prov.put_batch([MemoryItem.from_json(m) for m in case["memories"]], Deadline.none())
        recall = case["recall"]
        tiers, threshold, default_limit = PROFILES[recall.get("mode") or "active"]
        limit = recall.get("limit") or default_limit
        metadata = dict(recall.get("metadata") or {})
        if recall.get("workspace"):
            metadata["workspace"] = recall["workspace"]
        hits = prov.search(SearchQuery(recall["query"], limit=limit, metadata=metadata, tiers=tiers), Deadline.after(5))
        kept = [h for h in hits if h.relevance >= threshold][:limit]
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
