"""No echo with the real Gemini CLI (offline, the fake Gemini API on 127.0.0.1).

Gemini CLI folds the SessionStart hook's context into the prompt itself
(``<hook_context>`` + paxm's blocks with ``<``/``>`` HTML-escaped, then the user's words), and
hands that prompt to BeforeAgent and AfterAgent.  paxm must neither store those blocks as the
user's words nor query with them: otherwise every Gemini prompt recalls earlier Gemini turns
(which share the boilerplate) and a decision made in another harness never reaches Gemini.
Runs on the shared real-binary kit (``paxm_contracttest.harness.kit``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from paxm_contracttest.harness.harnesses import GEMINI
from paxm_contracttest.harness.kit import Harness, HarnessBox, Installed, installed_fixture, ok

pytestmark = [pytest.mark.harness, pytest.mark.slow]

ENVELOPE, _CLOSE = GEMINI.envelope
#: what marks paxm's blocks (and Gemini's wrapper around them) in any spelling a store could hold
BLOCK_MARKERS = ("paxm-recall", "paxm-session-identity", "paxm-local-time", "hook_context", "&lt;paxm", "\\u003cpaxm")
#: Gemini sessions before the question, on other subjects (the second one runs a shell tool)
CHATTER = (
    "Summarise what the deploy log says about the cache warm-up.",
    "RUN_TOOL: list the files in the build directory.",
    "Rename the helper parse_rows to read_rows everywhere.",
    "Explain why the nightly job failed on Tuesday.",
    "Which tests cover the CSV importer?",
)

gemini = installed_fixture(GEMINI)


@pytest.fixture
def box(gemini: tuple[Harness, Installed], tmp_path: Path) -> HarnessBox:
    return HarnessBox(tmp_path / "box", *gemini)


def _claude_hook(sandbox: HarnessBox, native: str, payload: dict[str, object]) -> None:
    """Run paxm's Claude Code hook for ``native`` the way Claude Code does (command, JSON on stdin)."""
    settings = json.loads((sandbox.home / ".claude" / "settings.json").read_text())
    commands = [h["command"] for group in settings["hooks"][native] for h in group["hooks"] if "paxm" in h["command"]]
    assert commands, settings["hooks"][native]
    base = {"session_id": "claude-1", "transcript_path": "", "cwd": str(sandbox.workspace), "hook_event_name": native}
    done = subprocess.run(
        commands[0],
        shell=True,
        input=json.dumps({**base, **payload}),
        env=sandbox.env(),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=sandbox.workspace,
    )
    assert done.returncode == 0, done.stderr


def test_claude_code_decision_reaches_gemini_after_gemini_sessions_echoed_paxm_blocks(box: HarnessBox) -> None:
    box.setup("claude")
    box.generous_recall_budget()
    box.generous_recall_budget(agent="claude")
    marker = f"OSPREY-{uuid.uuid4().hex[:10]}"
    decision = f"Decision: the metrics dashboard lives at {marker}.example from now on."
    try:
        # a Claude Code turn, through paxm's Claude Code hooks
        _claude_hook(box, "UserPromptSubmit", {"prompt": decision})
        _claude_hook(box, "Stop", {"last_assistant_message": "Noted: the dashboard moved.", "stop_hook_active": False})
        assert any(marker in t for t in box.flushed_memories()), box.memory_texts()

        with box.fake(marker=marker) as fake:
            for prompt in CHATTER:
                seen = len(fake.agent_steps())
                ok(box.turn(fake, prompt))
                first = fake.agent_steps()[seen]
                # the echo's source: paxm's SessionStart blocks folded into the very prompt text
                folded = [p for p in first.user_text().split("\n") if p.startswith("<hook_context>&lt;paxm-")]
                assert folded, first.user_text()[:2000]
                box.flushed_memories()
            stored = box.memory_texts()
            assert sum("Gemini CLI user input:" in t for t in stored) >= len(CHATTER), stored

            seen = len(fake.agent_steps())
            run = box.turn(fake, "Where does the metrics dashboard live?")
            ok(run)
            steps = fake.agent_steps()[seen:]
            assert steps and all(box.recalled(s.user_text(), marker) for s in steps), [
                s.user_text()[-3000:] for s in steps
            ]
            assert run.reply.endswith("[marker-seen]")
            # the answer ranks first, and no recalled memory carries paxm's boilerplate back
            recalled = steps[0].user_text().split(ENVELOPE, 1)[1]
            assert marker in recalled.split("### Memory 2", 1)[0], recalled[:3000]
            echoed = ("paxm-session-identity", "paxm-local-time", "&lt;paxm", "&lt;hook_context", '"user_id"')
            assert not any(m in recalled for m in echoed), recalled[:3000]
        for text in box.flushed_memories():
            assert not any(m in text.lower() for m in BLOCK_MARKERS), text
            assert '"user_id"' not in text and "local_time" not in text, text
    finally:
        box.stop_daemon()
