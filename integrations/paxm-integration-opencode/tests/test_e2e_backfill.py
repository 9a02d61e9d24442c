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

from paxm_contracttest.harness import kit
from paxm_contracttest.harness.harnesses import KILO, OPENCODE

pytestmark = [pytest.mark.harness, pytest.mark.slow]


both = kit.installed_fixture(OPENCODE, KILO)


@pytest.fixture
def box(both: tuple[kit.Harness, kit.Installed], tmp_path: Path) -> kit.HarnessBox:
    """A sandbox for the real OpenCode, or for Kilo Code (its fork: same database, own data dir)."""
    return kit.HarnessBox(tmp_path / "box", *both)


def test_a_session_from_before_paxm_is_backfilled_and_recalled(box: kit.HarnessBox) -> None:
    agent = box.harness.agent
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    try:
        with box.fake(marker=marker) as fake:
            first = box.turn(fake, f"RUN_TOOL: Decision: release branches are named {marker}-<version> from now on.")
            assert first.returncode == 0, first.stderr[-4000:]
            assert any(step.has_tool_result for step in fake.completions())
            database = box.home / ".local" / "share" / agent / f"{agent}.db"
            assert database.is_file()

            _, live = kit.backfilled_then_skipped_live(box, fake, marker)
            assert any("What naming scheme" in t for t in live)  # the plugin captured the live turn
    finally:
        box.stop_daemon()
