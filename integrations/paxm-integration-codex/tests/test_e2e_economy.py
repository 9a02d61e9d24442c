"""Per-session dedupe with the real Codex CLI (offline, fake Responses server on 127.0.0.1).

One session, resumed (``codex exec resume --last``): the memory the first prompt got is not
injected again on a later prompt that finds it.  See docs/session-economy.md.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.fake_models.responses import FakeResponses, input_text
from paxm_contracttest.harness.harnesses import CODEX
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, Turn, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

OPEN, CLOSE = '<paxm-recall version="1" mode="passive">', "</paxm-recall>"

codex = installed_fixture(CODEX)


def _envelopes(text: str) -> list[str]:
    """Every passive recall envelope in ``text``."""
    return [part.split(CLOSE)[0] for part in text.split(OPEN)[1:]]


def _ok(run: Turn) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    for hook in run.hooks:
        assert hook["outcome"] == "Completed", (hook, run.stderr[-3000:])


def test_a_memory_is_injected_once_per_codex_session(codex: tuple[Harness, Installed], tmp_path: Path) -> None:
    box = HarnessBox(tmp_path / "box", *codex)
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with FakeResponses(tmp_path / "requests.jsonl", marker=marker) as fake:
        box.point_at(fake.url)
        box.paxm("setup", "--yes", "--agent", "codex", "--provider", "sqlite")
        box.generous_recall_budget()
        box.paxm("remember", "--global", "--text", f"Release branches are named {marker}-<version>.")
        daemon = box.start_daemon()
        try:
            first = box.turn(fake, "How are release branches named?")
            _ok(first)
            text = input_text(fake.responses()[0])
            assert [e for e in _envelopes(text) if marker in e], text[-3000:]

            seen = len(fake.responses())
            # a prompt that finds the memory again (it names the marker): without the session
            # ledger it would be injected a second time
            again = f"Remind me how release branches are named: is it {marker}?"
            last = str(box.root / "last-message.txt")
            argv = [str(box.installed.binary), "exec", "--skip-git-repo-check", "-o", last, "resume", "--last", again]
            assert box.harness.run is not None
            second = box.harness.run(box, argv, box.turn_env(str(fake.url)), 240)
            _ok(second)
            assert [h["hookEvent"] for h in second.hooks].count("UserPromptSubmit") == 1, second.hooks
            text = input_text(fake.responses()[seen])
            assert again in text  # the resumed session, with this turn's prompt
            # the history holds the first turn's envelope; this prompt added no second copy
            assert len([e for e in _envelopes(text) if marker in e]) == 1, _envelopes(text)
        finally:
            box.stop_daemon(daemon)
