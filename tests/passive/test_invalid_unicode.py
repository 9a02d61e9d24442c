"""Item 4 of issue 13: text that is not valid Unicode never drops a turn or crashes a command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import memories, queue_rows, run_client, stop_daemon, wait_for, write_config

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def test_a_cut_emoji_in_prompt_and_answer_still_stores_the_turn(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    try:
        # a lone high surrogate as JSON escapes it (what a harness writes for a cut emoji)
        prompt = b'{"session_id":"u1","cwd":"/w","prompt":"cut emoji \\ud83d here, marker heron-77"}'
        stop = b'{"session_id":"u1","cwd":"/w","last_assistant_message":"answer \\udc00 done heron-77"}'
        assert run_client(config, "claude", "user_input", prompt).returncode == 0
        assert run_client(config, "claude", "turn_end", stop).returncode == 0
        flush = subprocess.run([*PAXM, "--config", str(config), "queue", "flush"], capture_output=True, timeout=60)
        assert flush.returncode == 0, flush.stdout + flush.stderr
        texts = wait_for(lambda: [m["text"] for m in memories(config) if "heron-77" in m["text"]])
        (text,) = texts
        assert "cut emoji \ufffd here" in text and "answer \ufffd done" in text
        assert queue_rows(config, "SELECT count(*) FROM capture_inbox WHERE state = 'failed'") == [(0,)]
        again = subprocess.run([*PAXM, "--config", str(config), "queue", "flush"], capture_output=True, timeout=60)
        assert again.returncode == 0
    finally:
        stop_daemon(config)


def test_remember_with_invalid_bytes_stores_replacement_characters(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    via_stdin = subprocess.run(
        [*PAXM, "--config", str(config), "remember", "--stdin", "--json"],
        input=b"caf\xe9 \xff\xfe bytes marker wren-5",
        capture_output=True,
        timeout=60,
    )
    assert via_stdin.returncode == 0, via_stdin.stderr
    assert b"Traceback" not in via_stdin.stderr
    via_argv = subprocess.run(
        [*PAXM.copy(), "--config", str(config), "remember", "--text", b"argv \xff marker wren-6"],  # type: ignore[list-item]
        capture_output=True,
        timeout=60,
    )
    assert via_argv.returncode == 0, via_argv.stderr
    assert b"Traceback" not in via_argv.stderr
    texts = [m["text"] for m in memories(config)]
    assert any("wren-5" in t and "\ufffd" in t for t in texts)
    assert any("wren-6" in t and "\ufffd" in t for t in texts)
    logs = subprocess.run([*PAXM, "--config", str(config), "logs", "--json"], capture_output=True, timeout=60)
    events = [json.loads(line) for line in logs.stdout.splitlines() if line.strip()]
    writes = [e for e in events if e.get("kind") == "remember"]
    assert len(writes) == 2 and all(e.get("ok", True) for e in writes)
