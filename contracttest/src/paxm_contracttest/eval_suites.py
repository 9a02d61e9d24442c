"""Upstream's deterministic eval suites, run straight against a provider (no router, no CLI).

The suites are upstream's data outside this repository (``../shared/evals`` beside the checkout,
or ``$PAXM_EVALS_DIR``); :func:`suite_cases` is empty when they are absent, so a test can skip
with a reason.  :data:`PROFILES` mirror the defaults the router applies (tiers, thresholds,
result limits), so a pass here means the provider leaves the router nothing to rescue.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Protocol

from paxm_core import Deadline, MemoryHit, MemoryItem, SearchQuery, SupportsPutBatch

__all__ = ["PROFILES", "evals_dir", "recall_case", "suite_budget", "suite_cases"]

#: recall mode -> (tiers, min_relevance, default limit): upstream's default recall profiles
PROFILES: dict[str, tuple[tuple[str, ...], float, int]] = {
    "active": ((), 0.25, 3),
    "passive": (("ltm",), 0.75, 2),
    "passive_initial": (("ltm",), 0.35, 5),
}


class _Searchable(SupportsPutBatch, Protocol):
    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]: ...


def evals_dir(repo: Path) -> Path:
    """``$PAXM_EVALS_DIR``, else ``shared/evals`` beside the checkout at ``repo``."""
    return Path(os.environ.get("PAXM_EVALS_DIR") or repo.parent / "shared" / "evals")


def suite_cases(evals: Path, name: str) -> list[dict[str, Any]]:
    """The recall cases (no write cases) of suite ``name``; ``[]`` when the suite is absent."""
    path = evals / name / "suite.json"
    if not path.is_file():
        return []
    cases: list[dict[str, Any]] = json.loads(path.read_text())["cases"]
    return [c for c in cases if "recall" in c and not c.get("write")]


def suite_budget(evals: Path, name: str) -> dict[str, float]:
    """Suite ``name``'s ``budget.json`` (minimum pass rate, recall, precision, MRR; maximum false positives)."""
    budget: dict[str, float] = json.loads((evals / name / "budget.json").read_text())
    return budget


def recall_case(provider: _Searchable, case: dict[str, Any], *, timeout: float) -> list[MemoryHit]:
    """Store ``case``'s memories in ``provider`` and recall its query under the case's profile.

    Returns the hits the router would keep: at or above the profile's relevance threshold, at
    most the case's limit (else the profile's).  ``provider`` must hold nothing from other cases.
    """
    provider.put_batch([MemoryItem.from_json(m) for m in case["memories"]], Deadline.none())
    recall = case["recall"]
    tiers, threshold, default_limit = PROFILES[recall.get("mode") or "active"]
    limit = recall.get("limit") or default_limit
    metadata = dict(recall.get("metadata") or {})
    if recall.get("workspace"):
        metadata["workspace"] = recall["workspace"]
    query = SearchQuery(recall["query"], limit=limit, metadata=metadata, tiers=tiers)
    return [h for h in provider.search(query, Deadline.after(timeout)) if h.relevance >= threshold][:limit]
