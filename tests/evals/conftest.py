"""Builders for small synthetic suites used by the eval tests (exposed as the ``kit`` fixture)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: upstream's suites live beside the checkout (never copied into the repo)
SHARED_EVALS = (REPO / ".." / "shared" / "evals").resolve()


def retrieval_case(case_id: str = "c1", **overrides: Any) -> dict[str, Any]:
    """A valid retrieval case: one target and one distractor memory, active recall."""
    case: dict[str, Any] = {
        "id": case_id,
        "category": "exact",
        "memories": [
            {
                "id": f"{case_id}-target",
                "text": "Project memory: amber-orchid the release channel is stable.",
                "tier": "ltm",
            },
            {"id": f"{case_id}-forbidden", "text": "Unrelated cooking note about sourdough hydration.", "tier": "ltm"},
        ],
        "recall": {"mode": "active", "query": "amber-orchid release channel", "limit": 3},
        "expected": [f"{case_id}-target"],
        "forbidden": [f"{case_id}-forbidden"],
    }
    case.update(overrides)
    return case


def write_case(case_id: str = "w1") -> dict[str, Any]:
    """A valid conversation-write case (hook write then active recall)."""
    return {
        "id": case_id,
        "category": "user_input",
        "turns": [{"role": "user", "text": "Decision: lunar cache TTL"}, {"role": "assistant", "text": "Noted."}],
        "write": {"target": "codex", "event": "user_input", "prompt": "Decision: lunar cache uses a seven minute TTL."},
        "recall": {"mode": "active", "query": "lunar cache TTL", "limit": 3},
        "expected_write": ["lunar cache", "seven minute TTL"],
        "forbidden_write": ["private-reasoning"],
    }


def suite(*cases: dict[str, Any], name: str = "synthetic") -> dict[str, Any]:
    return {"version": 1, "name": name, "cases": list(cases) or [retrieval_case()]}


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture
def kit() -> ModuleType:
    """This module: suite builders and the location of upstream's shared suites."""
    return sys.modules[__name__]
