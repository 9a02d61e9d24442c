"""Per-session economy with the real Claude Code binary (offline, fake Anthropic server on 127.0.0.1).

On both Claude releases the kit pins.  One session, resumed turn after turn (``--session-id``
then ``--resume``): the memory its first prompt got is not injected again on the second, and
after ``/compact`` (Claude runs ``SessionStart`` with ``source: "compact"``) it is offered once
more.  See docs/session-economy.md.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from paxm_contracttest.harness.claude import assert_no_garbage, hook_blocks, hooks_succeeded, model_text
from paxm_contracttest.harness.harnesses import CLAUDE, CLAUDE_CURRENT
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture

pytestmark = [pytest.mark.harness, pytest.mark.slow]

claude_release = installed_fixture(CLAUDE, CLAUDE_CURRENT)


@pytest.fixture()
def box(claude_release: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    harness, installed = claude_release
    return HarnessBox(tmp_path / "box", harness, installed)


def _first_request(fake: object, seen: int) -> str:
    requests = fake.messages()[seen:]  # type: ignore[attr-defined]
    assert requests, "Claude sent no model request"
    return model_text(requests[0])


def test_injected_once_per_session_and_offered_again_after_compaction(box: HarnessBox) -> None:
    box.setup()
    box.generous_recall_budget()
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    box.paxm("remember", "--global", "--text", f"Release branches are named {marker}-<version>.")
    session = str(uuid.uuid4())
    daemon = box.start_daemon()
    try:
        with box.fake(marker=marker) as fake:
            first = box.turn(fake, "How are release branches named?", "--session-id", session)
            hooks_succeeded(first)
            text = _first_request(fake, 0)
            assert box.recalled(text, marker), text[-3000:]
            assert text.count(marker) == 1

            seen = len(fake.messages())
            # a prompt that finds the memory again (it names the marker): without the ledger it
            # would be injected a second time
            again = f"Remind me how release branches are named: is it {marker}?"
            second = box.turn(fake, again, "--resume", session)
            hooks_succeeded(second)
            text = _first_request(fake, seen)
            assert again in text
            # the conversation carries turn 1's injection; the second prompt added no copy
            injected = [b for b in hook_blocks(text) if marker in b]
            assert len(injected) == 1, [b[:300] for b in hook_blocks(text)]
            assert injected[0].lstrip().startswith("UserPromptSubmit")
            assert not [h for h in second.hooks if h.get("hookEvent") == "UserPromptSubmit" and h.get("stdout")]

            seen = len(fake.messages())
            compact = box.turn(fake, "/compact", "--resume", session)
            hooks_succeeded(compact)
            assert any(h.get("hookEvent") == "SessionStart" for h in compact.hooks), compact.hooks

            seen = len(fake.messages())
            third = box.turn(fake, "Thanks, that is all for now.", "--resume", session)
            hooks_succeeded(third)
            text = _first_request(fake, seen)
            # the summary replaced the conversation; the memory came back through the compact
            # SessionStart, not through this prompt (which does not ask for it)
            offered = [b for b in hook_blocks(text) if marker in b]
            assert len(offered) == 1 and "SessionStart" in offered[0], [b[:300] for b in hook_blocks(text)]
            for request in fake.messages():
                assert_no_garbage(model_text(request))
    finally:
        box.stop_daemon(daemon)
