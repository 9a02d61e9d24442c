"""Backfill end to end with the real Pi (offline, fake Chat Completions server on 127.0.0.1).

A user ran Pi before installing paxm: that session (a decision and a ``bash`` tool call) is on
disk only.  ``paxm setup`` then ``paxm backfill run --agent pi`` stores it into SQLite and the
decision is recalled; a second Pi session (paxm's extension live now, recall injected and the
turn captured live) is then not stored again by a second backfill, which stores nothing.
Runs the current Pi build (``harnesses.PI_CURRENT`` of the shared real-binary kit); the older session format is covered
by the committed fixtures in ``test_transcripts.py``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI
from paxm_contracttest.harness.harnesses import PI_CURRENT
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

LATER = "2099-01-01"  # --before: the sessions just ran (the default leaves the last 2 minutes to hooks)


pi = installed_fixture(PI_CURRENT)


def test_a_session_from_before_paxm_is_backfilled_and_recalled(pi: tuple[Harness, Installed], tmp_path: Path) -> None:
    box = HarnessBox(tmp_path / "box", *pi)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.point_at(fake.url)
            first = box.turn(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.")
            assert first.returncode == 0, first.stderr[-4000:]
            assert len(fake.completions()) == 2 and fake.completions()[1].has_tool_result
            sessions = sorted(((box.home / ".pi" / "agent") / "sessions").rglob("*.jsonl"))
            assert len(sessions) == 1, sessions

            box.paxm("setup", "--yes", "--agent", "pi", "--provider", "sqlite")
            box.generous_recall_budget()
            assert box.memory_texts() == []  # nothing captured: paxm was not there
            scan = box.paxm_json("backfill", "scan", "--agent", "pi")
            assert (scan["files"], scan["turns"]) == (1, 1), scan
            run = box.paxm_json("backfill", "run", "--agent", "pi", "--before", LATER)
            assert (run["queued"], run["delivered"]) == (1, 1), run
            stored = [t for t in box.memory_texts() if marker in t]
            assert len(stored) == 1 and "TOOL_RAN_OK" in stored[0] and "Noted, I will remember that." in stored[0]
            assert f"{marker}-&lt;version>" in box.recall("release branches naming scheme")

            # paxm is live now: the next session is recalled into and captured by the hooks
            second = box.turn(fake, "What naming scheme did we decide on for release branches?")
            assert second.returncode == 0, second.stderr[-4000:]
            assert second.reply.endswith("[marker-seen]")  # the fake saw the backfilled memory
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            live = len(box.memory_texts())
            again = box.paxm_json("backfill", "run", "--agent", "pi", "--before", LATER)
            assert again["queued"] == 0 and again["skipped_live"] == 1, again  # turn 2 was captured live
            texts = box.memory_texts()
            assert len(texts) == live
            assert not any("paxm-recall" in t or "paxm-session-identity" in t for t in texts)
    finally:
        box.stop_daemon()
