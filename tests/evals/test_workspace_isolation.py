"""Upstream's workspace-isolation suite shape: the recall's workspace in ``recall.metadata.workspace``,
each memory's in its ``metadata.workspace``; the runner scopes the recall to it as upstream's does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from paxm_core.evals.runner import Runner
from paxm_core.evals.suite import parse_suite

PROJECTS = ("osprey", "quill", "rook", "sable", "tern")


def _isolation_case(index: int, project: str, mode: str) -> dict[str, Any]:
    """Two memories that differ only in their workspace; recall asks for one workspace by metadata."""
    case_id = f"workspace_scope-{mode}-{index:02d}"
    return {
        "id": case_id,
        "category": "workspace_scope",
        "memories": [
            {
                "id": f"{case_id}-target",
                "text": f"Project {project} release train leaves on Tuesdays.",
                "tier": "ltm",
                "metadata": {"workspace": f"/eval/workspace/{project}"},
            },
            {
                "id": f"{case_id}-forbidden",
                "text": f"Project {project} release train leaves on Fridays.",
                "tier": "ltm",
                "metadata": {"workspace": f"/eval/workspace/other-{project}"},
            },
        ],
        "recall": {
            "mode": mode,
            "query": f"{project} release train",
            "limit": 3,
            "metadata": {"workspace": f"/eval/workspace/{project}"},
        },
        "expected": [f"{case_id}-target"],
        "forbidden": [f"{case_id}-forbidden"],
    }


def _suite() -> dict[str, Any]:
    cases = [_isolation_case(i, p, "active") for i, p in enumerate(PROJECTS, 1)]
    cases.append(_isolation_case(9, "osprey", "passive_initial"))
    return {"version": 1, "name": "workspace-isolation", "cases": cases}


def test_recall_metadata_workspace_scopes_the_recall() -> None:
    result = Runner().run(parse_suite(_suite()))
    failed = [(c.id, c.hit_ids, c.error) for c in result.cases if not c.passed]
    assert not failed
    assert result.passed == result.case_count == len(PROJECTS) + 1
    assert result.false_positive_rate == 0.0


def test_the_cli_gate_passes_with_upstream_s_hard_budget(tmp_path: Path, kit: ModuleType) -> None:
    suite = kit.write_json(tmp_path / "suite.json", _suite())
    budget = kit.write_json(
        tmp_path / "budget.json",
        {"min_pass_rate": 1.0, "min_recall_at_k": 1.0, "min_precision_at_k": 1.0, "min_mrr": 1.0,
         "max_false_positive_rate": 0.0},
    )  # fmt: skip
    out = subprocess.run(
        [str(Path(sys.executable).with_name("paxm")), "eval", "run", "--suite", str(suite), "--gate", "quality",
         "--budget", str(budget), "--json"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert json.loads(out.stdout)["result"]["passed"] == len(PROJECTS) + 1
