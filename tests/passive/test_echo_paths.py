"""Echo stripping at both places it applies: the text composed for storage and the recall query.

Gemini CLI folds paxm's SessionStart blocks into the prompt (``<hook_context>`` with ``<``/``>``
HTML-escaped, then the user's words) and gives that prompt to BeforeAgent and AfterAgent; a
harness may put them anywhere in the prompt.  Through the real hook client and daemon over the
SQLite provider, and through :func:`compose_write` for the raw payload.
"""

from __future__ import annotations

import json
from pathlib import Path

from paxm_core.api.events import HookEvent
from paxm_core.config import AgentConfig, Config
from paxm_core.envelope import wrap_recall_context
from paxm_core.integration import guard_escaped_envelope
from paxm_core.passive.compose import compose_write
from paxm_core.passive.context import identity_block, local_time_block
from tests.capture.test_huge_turns import _filler, _flush
from tests.passive.conftest import memories, run_client, stop_daemon, write_config

BASE = {"cwd": "/w"}
MARKERS = ("paxm-", "hook_context", "user_id", "local_time")


def _gemini_escaped(context: str) -> str:
    """``context`` as Gemini CLI hands it back: paxm's guard, then ``<``/``>`` escaped, wrapped."""
    escaped = guard_escaped_envelope(context).replace("<", "&lt;").replace(">", "&gt;")
    return f"<hook_context>{escaped}</hook_context>"


def _with_gemini(config: Config) -> None:
    """Add the ``gemini-cli`` agent the way setup does (the integration's own defaults), enabled."""
    from paxm_core.config.codec import decode
    from paxm_integration_gemini_cli import GeminiCliIntegration

    agent = decode(AgentConfig, dict(GeminiCliIntegration().default_agent_config()), "agents.gemini-cli")
    agent.enabled, agent.agent_id = True, "gemini-cli-alice"
    config.agents["gemini-cli"] = agent


def _session_start() -> str:
    return _gemini_escaped(identity_block("alice", "gemini-cli-alice", "s-1") + "\n" + local_time_block())


def test_raw_json_template_stores_no_block() -> None:
    prompt = _session_start() + "\n\nWhere does the dashboard live?"
    raw = json.dumps({"hook_event_name": "BeforeAgent", "session_id": "s", "prompt": prompt})
    event = HookEvent(target="gemini-cli", event="user_input", prompt=prompt, query=prompt, raw=raw)
    write = compose_write(event, template="{{ .safe_text }}\n{{ .raw_json }}", profile="ltm")
    assert write is not None
    assert not any(m in write.text for m in MARKERS), write.text
    stored_raw = write.text.split("\n", 2)[-1]
    assert json.loads(stored_raw)["prompt"].strip() == "Where does the dashboard live?"  # still valid JSON


def test_gemini_turns_store_the_users_words_and_recall_by_them(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", agents=("claude",), mutate=_with_gemini)
    # the recalled memory a harness hands back at the prompt's end: words that match no stored turn
    echoed_recall = _gemini_escaped(wrap_recall_context("passive", "### Memory 1\n\n" + _filler(3 * 1024)))
    try:
        seed = {**BASE, "session_id": "seed", "prompt": "Decision: the cache TTL is seven minutes, id kiwi-7781"}
        assert run_client(config, "claude", "user_input", json.dumps(seed).encode()).returncode == 0
        done = {**BASE, "session_id": "seed", "last_assistant_message": "Noted kiwi-7781."}
        assert run_client(config, "claude", "turn_end", json.dumps(done).encode()).returncode == 0
        for n in range(3):  # earlier Gemini turns, their prompts carrying the blocks back
            prompt = f"{_session_start()}\n\nRename helper {n} in the importer."
            turn = {**BASE, "session_id": f"g{n}", "hook_event_name": "BeforeAgent", "prompt": prompt}
            assert run_client(config, "gemini-cli", "user_input", json.dumps(turn).encode()).returncode == 0
            end = {**turn, "hook_event_name": "AfterAgent", "prompt_response": f"Renamed helper {n}."}
            assert run_client(config, "gemini-cli", "turn_end", json.dumps(end).encode()).returncode == 0
        _flush(config)
        # a long prompt (over the 8 KiB query limit): blocks first, pasted log, the question, an echo last
        question = "Given the log above, what is the cache TTL for kiwi-7781?"
        long_prompt = f"{_session_start()}\n\n{_filler(20 * 1024)}\n\n{question}\n\n{echoed_recall}"
        ask = {**BASE, "session_id": "ask", "hook_event_name": "BeforeAgent", "prompt": long_prompt}
        answer = run_client(config, "gemini-cli", "user_input", json.dumps(ask).encode())
        _flush(config)
    finally:
        stop_daemon(config)
    assert answer.returncode == 0, answer.stderr
    context = json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "seven minutes" in context, context[:2000]
    texts = [m["text"] for m in memories(config)]
    assert sum("Rename helper" in t for t in texts) == 3, texts
    for text in texts:
        assert not any(m in text for m in MARKERS), text
