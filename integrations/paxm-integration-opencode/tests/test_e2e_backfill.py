"""Backfill end to end with the real OpenCode (offline, fake Chat Completions server on 127.0.0.1).

A user ran OpenCode before installing paxm: that session (a decision, after a ``bash`` tool
call) is in OpenCode's database only.  ``paxm setup`` then ``paxm backfill run --agent opencode``
stores it into SQLite and the decision is recalled; a second OpenCode session (paxm's plugin
live now, recall injected and the turn captured live) is then not stored again by a second
backfill, which stores nothing.  The same for Kilo Code (``kilo`` 7.7.9, OpenCode's fork: the
same database schema, in ``~/.local/share/kilo/kilo.db``).  Each ``opencode run`` takes from a few seconds to over a
minute on a loaded machine (OpenCode's start-up; the harness pre-installs its config-dir
dependency so it does not stall on the network).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.harness.harnesses import KILO, OPENCODE
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

LATER = "2099-01-01"  # --before: the sessions just ran (the default leaves the last 2 minutes to hooks)


both = installed_fixture(OPENCODE, KILO)


@pytest.fixture
def box(both: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    """A sandbox for the real OpenCode, or for Kilo Code (its fork: same database, own data dir)."""
    return HarnessBox(tmp_path / "box", *both)


def test_a_session_from_before_paxm_is_backfilled_and_recalled(box: HarnessBox) -> None:
    agent = box.harness.agent
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            first = box.turn(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.")
            assert first.returncode == 0, first.stderr[-4000:]
            assert any(step.has_tool_result for step in fake.completions())
            database = box.home / ".local" / "share" / agent / f"{agent}.db"
            assert database.is_file()

            box.paxm("setup", "--yes", "--agent", agent, "--provider", "sqlite")
            box.generous_recall_budget()
            assert box.memory_texts() == []  # nothing captured: paxm was not there
            scan = box.paxm_json("backfill", "scan", "--agent", agent)
            assert (scan["files"], scan["turns"]) == (1, 1), scan
            run = box.paxm_json("backfill", "run", "--agent", agent, "--before", LATER)
            assert (run["queued"], run["delivered"]) == (1, 1), run
            stored = [t for t in box.memory_texts() if marker in t]
            assert len(stored) == 1 and "Noted, I will remember that." in stored[0], box.memory_texts()
            assert f"{marker}-&lt;version>" in box.recall("release branches naming scheme")

            # paxm is live now: the next session is recalled into and captured by the plugin
            second = box.turn(fake, "What naming scheme did we decide on for release branches?")
            assert second.returncode == 0, second.stderr[-4000:]
            assert second.reply.endswith("[marker-seen]")  # the fake saw the backfilled memory
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            live = box.memory_texts()
            assert any("What naming scheme" in t for t in live)
            again = box.paxm_json("backfill", "run", "--agent", agent, "--before", LATER)
            assert again["queued"] == 0 and again["skipped_live"] == 1, again
            texts = box.memory_texts()
            assert len(texts) == len(live)
            assert not any("paxm-recall" in t or "paxm-session-identity" in t for t in texts)
    finally:
        box.stop_daemon()
