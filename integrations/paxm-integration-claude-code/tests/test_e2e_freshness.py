"""Freshness, supersession and point of action with the real Claude Code binary (offline, fake model).

The sandbox's workspace is a real git working tree.  A turn names a file of it; the captured
memory is anchored to it.  Then:

* the file is deleted: the next session gets the memory marked ``freshness="stale"`` with the reason;
* a later turn corrects an earlier one: the earlier memory is shown ``superseded_by`` the correction;
* the model is about to run a command on the file: the ``PreToolUse`` hook injects the memory there.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.harness.claude import model_text
from paxm_contracttest.harness.harnesses import CLAUDE, CLAUDE_CURRENT
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture, model_inputs, ok

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE = '<paxm-recall version="1" mode="passive">'
TAX = "def calculate_tax(amount):\n    return round(amount * 0.2, 2)\n"

claude_release = installed_fixture(CLAUDE, CLAUDE_CURRENT)


@pytest.fixture()
def box(claude_release: tuple[Harness, Installed], tmp_path: Path) -> Iterator[HarnessBox]:
    """paxm set up for Claude Code over a workspace holding ``src/billing/tax.py``; paxm's hook
    daemon is stopped after the test, however it ends."""
    harness, installed = claude_release
    box = HarnessBox(tmp_path / "box", harness, installed)
    box.commit_workspace({"src/billing/tax.py": TAX})
    box.setup()
    box.generous_recall_budget()
    try:
        yield box
    finally:
        box.stop_daemon()


def _envelope(text: str) -> str:
    start = text.find(ENVELOPE)
    assert start >= 0, text[-3000:]
    return text[start : text.find("</paxm-recall>", start)]


def _heading_of(block: str, needle: str) -> str:
    """The ``### Memory`` heading of the memory whose text holds ``needle``."""
    heading = ""
    for line in block.splitlines():
        if line.startswith("### Memory "):
            heading = line
        elif needle in line:
            return heading
    raise AssertionError(f"{needle!r} not in {block}")


def test_a_memory_about_a_deleted_file_is_recalled_marked_stale(box: HarnessBox) -> None:
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        first = box.turn(fake, f"Decision {marker}: VAT is computed in src/billing/tax.py by calculate_tax.")
        ok(first)
        assert any(marker in t for t in box.flushed_memories())
        recalled = box.recall_hits(marker)
        assert recalled[0]["freshness"] == {"state": "fresh", "anchored": True}
        (box.workspace / "src" / "billing" / "tax.py").unlink()
        seen = len(model_inputs(fake))
        second = box.turn(fake, f"Where is VAT computed ({marker})?")
        ok(second)
        block = _envelope(model_inputs(fake)[seen])
        heading = _heading_of(block, marker)
        assert heading.endswith(' freshness="stale" reason="src/billing/tax.py no longer exists"'), heading


def test_a_users_correction_is_shown_superseding_the_earlier_decision(box: HarnessBox) -> None:
    marker = f"GREBE-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        ok(box.turn(fake, f"We store the invoices of project {marker} in the MySQL database."))
        assert any("MySQL" in t for t in box.flushed_memories())
        ok(box.turn(fake, f"No, we switched the invoices database of project {marker} to Postgres."))
        assert any("Postgres" in t for t in box.flushed_memories())
        hits = box.recall_hits(f"invoices database {marker}")
        newer = next(h["id"] for h in hits if "Postgres" in h["text"])
        older = next(h for h in hits if "MySQL" in h["text"])
        assert older["superseded_by"] == newer
        seen = len(model_inputs(fake))
        ok(box.turn(fake, f"Which database holds the invoices of project {marker}?"))
        block = _envelope(model_inputs(fake)[seen])
        assert _heading_of(block, "MySQL").endswith(f' superseded_by="{newer}"')
        assert "superseded_by" not in _heading_of(block, "Postgres")
        assert block.index("Postgres") < block.index("MySQL")  # the newer word is read first


def test_the_memory_anchored_to_a_file_is_injected_before_a_command_on_it(box: HarnessBox) -> None:
    marker = f"AVOCET-{uuid.uuid4().hex[:10]}"
    command = {"command": "cat src/billing/tax.py", "description": "Show the tax module"}
    with box.fake(marker=marker) as fake:
        ok(box.turn(fake, f"Rule {marker}: calculate_tax in src/billing/tax.py must round half-even."))
        assert any(marker in t for t in box.flushed_memories())
    with box.fake("tool", tool_call=("Bash", command)) as fake:
        run = box.turn(fake, "RUN_TOOL: show me that module", "--allowedTools", "Bash(cat:*)")
        ok(run)
        requests = fake.messages()
        after = [model_text(r) for r in requests if "tool_result" in json.dumps(r.get("body"))]
        assert after, [model_text(r)[-500:] for r in requests]
        assert marker not in model_text(requests[0])  # the prompt's recall did not bring it
        block = _envelope(after[0])
        assert marker in block and len(block) < 1000
        assert [h for h in run.hooks if h.get("hookEvent") == "PreToolUse"], run.hooks


def test_anchors_ride_in_the_memorys_metadata(box: HarnessBox) -> None:
    marker = f"STILT-{uuid.uuid4().hex[:10]}"
    with box.fake(marker=marker) as fake:
        ok(box.turn(fake, f"Note {marker}: src/billing/tax.py holds calculate_tax."))
        box.flushed_memories()
    [hit] = [h for h in box.recall_hits(marker) if marker in h["text"]]
    anchors = json.loads(hit["metadata"]["paxm_anchors"])
    assert anchors["files"] == ["src/billing/tax.py"]
    assert anchors["symbols"] == [["calculate_tax", "src/billing/tax.py"]]
    assert re.fullmatch(r"[0-9a-f]{40}", anchors["commit"])
