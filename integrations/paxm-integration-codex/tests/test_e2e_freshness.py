"""Freshness with the real Codex CLI (offline, fake Responses server on 127.0.0.1).

The sandbox's workspace is a real git working tree.  A Codex turn names a file of it and the
captured memory is anchored to it; once the file is deleted, the next session's prompt gets the
memory marked ``freshness="stale"`` with the reason, inside the envelope Codex hands the model.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.responses import FakeResponses, input_text
from paxm_contracttest.harness.harnesses import CODEX
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'

codex = installed_fixture(CODEX)


def _freshness(box: HarnessBox, query: str) -> list[dict[str, object]]:
    """``freshness`` of each ``paxm recall --json`` hit holding ``query``, run in the workspace."""
    return [h.get("freshness", {}) for h in box.recall_hits(query) if query in h["text"]]


def test_a_memory_about_a_deleted_file_is_recalled_marked_stale(
    codex: tuple[Harness, Installed], tmp_path: Path
) -> None:
    box = HarnessBox(tmp_path / "box", *codex)
    box.commit_workspace({"src/billing/tax.py": "def calculate_tax(amount):\n    return amount\n"})
    marker = f"DUNLIN-{uuid.uuid4().hex[:10]}"
    try:
        with FakeResponses(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.point_at(fake.url)
            box.paxm("setup", "--yes", "--agent", "codex", "--provider", "sqlite")
            box.generous_recall_budget()
            first = box.turn(fake, f"Decision {marker}: VAT is computed in src/billing/tax.py by calculate_tax.")
            assert first.returncode == 0, first.stderr[-3000:]
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(marker in t for t in box.memory_texts())

            # still there: fresh (the CLI asks without capturing a turn that would match too)
            assert _freshness(box, marker) == [{"state": "fresh", "anchored": True}]

            (box.workspace / "src" / "billing" / "tax.py").unlink()
            seen = len(fake.responses())
            stale = box.turn(fake, f"Where is VAT computed ({marker})?")
            assert stale.returncode == 0, stale.stderr[-3000:]
            developer = input_text(fake.responses()[seen], ("developer",))
            start = developer.index(ENVELOPE)
            block = developer[start : developer.index("</paxm-recall>", start)]
            assert 'freshness="stale" reason="src/billing/tax.py no longer exists"' in block, block
            assert marker in block
            # the asking turn is a memory too now (unanchored: no freshness); the decision is stale
            stale_state = {"state": "stale", "anchored": True, "reason": "src/billing/tax.py no longer exists"}
            assert sorted(map(str, _freshness(box, marker))) == sorted(map(str, [stale_state, {}]))
    finally:
        box.stop_daemon()
