"""Turn integrity through the real hook client and daemon (issue 13, item 9).

An aggressive ``flush`` loop runs against the daemon while turns are in flight: every
delivered memory still holds one whole turn, prompt and answer.  A ``Stop`` without assistant
text still ends its turn, so consecutive turns never merge.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from .conftest import memories, queue_rows, run_client, stop_daemon, wait_for, write_config

TURNS = 40


def _flush(config: Path, **params: object) -> dict[str, object]:
    from paxm_core.passive.control import send_control

    report = send_control(config, "flush", timeout=30, params={"timeout": 20, **params})
    assert report is not None
    return report


def test_flush_loop_during_live_turns_never_splits_a_turn(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    stop = threading.Event()
    flushes: list[dict[str, object]] = []
    errors: list[BaseException] = []

    def flush_loop() -> None:
        while not stop.is_set():
            try:
                flushes.append(_flush(config))
            except BaseException as exc:  # surfaced below
                errors.append(exc)
                return

    try:
        assert run_client(config, "claude", "session_start", json.dumps({"session_id": "w"}).encode()).returncode == 0
        wait_for(lambda: (tmp_path / "cfg" / "hooks" / "paxm-hook.sock").exists())
        flusher = threading.Thread(target=flush_loop, daemon=True)
        flusher.start()
        for i in range(TURNS):
            prompt = {"session_id": "live", "cwd": "/w", "prompt": f"turn marker U{i:04d}Z"}
            answer = {"session_id": "live", "cwd": "/w", "last_assistant_message": f"answer marker A{i:04d}Z"}
            assert run_client(config, "claude", "user_input", json.dumps(prompt).encode()).returncode == 0
            time.sleep(0.03)  # the turn is live: the flush loop runs meanwhile
            assert run_client(config, "claude", "turn_end", json.dumps(answer).encode()).returncode == 0
        stop.set()
        flusher.join(60)
        assert not errors, errors
        final = _flush(config)
        assert final["ok"] and final["delivered_all"], final
    finally:
        stop.set()
        stop_daemon(config)
    assert len(flushes) >= TURNS // 4, f"only {len(flushes)} flushes ran during the turns"
    assert all(f["ok"] and f["delivered_all"] for f in flushes), json.dumps(
        [f["flush"] for f in flushes if not f["delivered_all"]][:2]
    )
    rows = [m["text"] for m in memories(config) if "marker" in m["text"]]
    for i in range(TURNS):
        holding = [t for t in rows if f"U{i:04d}Z" in t]
        assert len(holding) == 1, f"turn {i}: {len(holding)} memories hold its prompt"
        assert f"A{i:04d}Z" in holding[0], f"turn {i}: prompt and answer were split"
        assert sum(f"A{i:04d}Z" in t for t in rows) == 1, f"turn {i}: answer stored twice"
        assert not any(f"U{j:04d}Z" in holding[0] for j in range(TURNS) if j != i), f"turn {i} merged"
    live = "SELECT complete, COUNT(*) FROM capture_episodes WHERE session_key LIKE '%/session/live' GROUP BY complete"
    assert queue_rows(config, live) == [(1, TURNS)]  # every turn sealed by its own end


def test_a_stop_without_assistant_text_still_ends_its_turn(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    try:
        turns = [
            ({"prompt": "first prompt kiwi-1101"}, {}),  # the turn ended in a tool call: no text
            ({"prompt": "second prompt kiwi-1102"}, {"last_assistant_message": ""}),
            ({"prompt": "third prompt kiwi-1103"}, {"last_assistant_message": "third answer kiwi-2103"}),
        ]
        for prompt, end in turns:
            base = {"session_id": "tools", "cwd": "/w"}
            assert run_client(config, "claude", "user_input", json.dumps({**base, **prompt}).encode()).returncode == 0
            assert run_client(config, "claude", "turn_end", json.dumps({**base, **end}).encode()).returncode == 0
        report = _flush(config)
        assert report["ok"] and report["delivered_all"] and report["flush"]["live"] == 0, report
    finally:
        stop_daemon(config)
    texts = sorted(m["text"] for m in memories(config) if "kiwi-" in m["text"])
    assert len(texts) == 3, texts
    assert "kiwi-1101" in texts[0] and "kiwi-110" not in texts[0].replace("kiwi-1101", "")
    assert "kiwi-1102" in texts[1] and "kiwi-110" not in texts[1].replace("kiwi-1102", "")
    assert "kiwi-1103" in texts[2] and "kiwi-2103" in texts[2]
    assert queue_rows(config, "SELECT COUNT(*) FROM capture_episodes WHERE complete = 0") == [(0,)]


def test_a_live_turn_is_sealed_at_daemon_shutdown_never_lost(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    try:
        prompt = {"session_id": "open", "cwd": "/w", "prompt": "left open at shutdown kiwi-3301"}
        assert run_client(config, "claude", "user_input", json.dumps(prompt).encode()).returncode == 0
        wait_for(lambda: (tmp_path / "cfg" / "hooks" / "paxm-hook.sock").exists())
        report = _flush(config)
        assert report["ok"] and report["flush"]["live"] == 1, report
        assert queue_rows(config, "SELECT COUNT(*) FROM capture_episodes") == [(0,)]  # left whole
    finally:
        stop_daemon(config)  # shutdown seals what is still open and delivers it
    assert any("kiwi-3301" in m["text"] for m in memories(config))
    assert queue_rows(config, "SELECT COUNT(*) FROM capture_events WHERE episode_id = ''") == [(0,)]
