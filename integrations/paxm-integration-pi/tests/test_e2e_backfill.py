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
from paxm_contracttest.harness import kit
from paxm_contracttest.harness.harnesses import PI_CURRENT

pytestmark = [pytest.mark.harness, pytest.mark.slow]


pi = kit.installed_fixture(PI_CURRENT)


def test_a_session_from_before_paxm_is_backfilled_and_recalled(
    pi: tuple[kit.Harness, kit.Installed], tmp_path: Path
) -> None:
    box = kit.HarnessBox(tmp_path / "box", *pi)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    try:
        with FakeOpenAI(tmp_path / "requests.jsonl", marker=marker) as fake:
            box.point_at(fake.url)
            first = box.turn(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.")
            assert first.returncode == 0, first.stderr[-4000:]
            assert len(fake.completions()) == 2 and fake.completions()[1].has_tool_result
            sessions = sorted(((box.home / ".pi" / "agent") / "sessions").rglob("*.jsonl"))
            assert len(sessions) == 1, sessions

            episode, _ = kit.backfilled_then_skipped_live(box, fake, marker)
            assert "TOOL_RAN_OK" in episode  # the tool call's output is part of the backfilled turn
    finally:
        box.stop_daemon()
