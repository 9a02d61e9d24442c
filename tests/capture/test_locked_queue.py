"""A queue file whose write lock another process holds never costs a hook its budget or its event.

Issue 42, item 4: the inbox lives in the queue file, so a long transaction elsewhere used to
block both the daemon's append and the client's inbox fallback; the prompt was lost and its
turn split.  The hook now keeps such an event in the spool beside the queue file.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.passive.conftest import CLIENT, memories, queue_rows, run_client, stop_daemon, wait_for, write_config

HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def _hold_lock(queue: Path) -> subprocess.Popen[str]:
    """A second process holding ``BEGIN IMMEDIATE`` on ``queue`` until its stdin gets a line."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(queue)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def _release(holder: subprocess.Popen[str]) -> None:
    holder.communicate("\n", timeout=30)


def _flush(config: Path) -> dict[str, object]:
    from paxm_core.passive.control import send_control

    report = send_control(config, "flush", timeout=60, params={"timeout": 30})
    assert report is not None
    return report


@contextlib.contextmanager
def _warm_daemon_then_locked_queue(config: Path) -> Iterator[None]:
    """A daemon that is up with its queue open, then the queue's write lock held by another process."""
    warm = {"session_id": "warm", "cwd": "/w", "prompt": "warm-up prompt"}
    assert run_client(config, "claude", "user_input", json.dumps(warm).encode()).returncode == 0
    wait_for(lambda: (config.parent / "hooks" / "paxm-hook.sock").exists())
    holder = _hold_lock(config.parent / "hooks" / "capture.sqlite")
    try:
        yield
    finally:
        _release(holder)


def _end_turn_and_flush(config: Path, answer: dict[str, str]) -> None:
    """Send the turn's end, then flush: every event is delivered."""
    assert run_client(config, "claude", "turn_end", json.dumps(answer).encode()).returncode == 0
    report = _flush(config)
    assert report["ok"] and report["delivered_all"], report


def test_a_locked_queue_costs_the_hook_no_more_than_its_budget_and_loses_no_prompt(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    queue = config.parent / "hooks" / "capture.sqlite"
    base = {"session_id": "locked", "cwd": "/w"}
    try:
        with _warm_daemon_then_locked_queue(config):
            prompt = {**base, "prompt": "locked prompt marker LQ7731"}
            started = time.monotonic()
            proc = run_client(config, "claude", "user_input", json.dumps(prompt).encode(), "--timeout", "2")
            elapsed = time.monotonic() - started
            assert proc.returncode == 0, proc.stderr
            # the budget plus the interpreter's start-up, never the lock holder's time
            assert elapsed < 2.0 + 0.8, f"hook took {elapsed:.2f}s with a 2s budget"
            spool = Path(str(queue) + ".spool")
            assert spool.exists() and spool.stat().st_mode & 0o777 == 0o600
            # the daemon's own append is still waiting on the lock; give it time to give up
            time.sleep(4)
        _end_turn_and_flush(config, {**base, "last_assistant_message": "locked answer marker LA7731"})
    finally:
        stop_daemon(config)
    texts = [m["text"] for m in memories(config) if "LQ7731" in m["text"] or "LA7731" in m["text"]]
    assert len(texts) == 1, texts  # one turn, one memory: not split
    assert "LQ7731" in texts[0] and "LA7731" in texts[0]
    assert texts[0].count("LQ7731") == 1  # delivered exactly once
    rows = queue_rows(config, "SELECT count(*) FROM capture_events WHERE payload_json LIKE '%LQ7731%'")
    assert rows == [(1,)]
    assert not list(config.parent.joinpath("hooks").glob("capture.sqlite.spool*"))  # imported and removed


def test_a_daemon_that_cannot_append_keeps_the_event_in_the_spool(tmp_path: Path) -> None:
    """A budget longer than the daemon's lock wait: the daemon answers, so it keeps the event itself."""
    config = write_config(tmp_path / "cfg")
    base = {"session_id": "slow", "cwd": "/w"}
    try:
        with _warm_daemon_then_locked_queue(config):
            prompt = {**base, "prompt": "slow prompt marker SQ4410"}
            proc = run_client(config, "claude", "user_input", json.dumps(prompt).encode(), "--timeout", "12")
            assert proc.returncode == 0
            # the daemon answered (its append gave up on the lock), so the client stored nothing
            assert b"did not answer" not in proc.stderr, proc.stderr
        _end_turn_and_flush(config, {**base, "last_assistant_message": "slow answer marker SA4410"})
    finally:
        stop_daemon(config)
    texts = [m["text"] for m in memories(config) if "SQ4410" in m["text"] or "SA4410" in m["text"]]
    assert len(texts) == 1 and "SQ4410" in texts[0] and "SA4410" in texts[0], texts


def test_the_spool_path_of_the_client_imports_only_c_level_modules(tmp_path: Path) -> None:
    """A hung daemon and a locked queue: the event goes to the spool, with no module beyond the inbox path's."""
    from paxm_core.capture import _spool
    from tests.passive.test_client import INBOX_PATH_IMPORTS, FakeDaemon, baseline, imported_modules

    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    queue = config.parent / "hooks" / "capture.sqlite"
    fake = FakeDaemon(config.parent / "hooks" / "paxm-hook.sock", "hang")
    try:
        from paxm_core.capture import CaptureQueue

        CaptureQueue(queue).close()
        holder = _hold_lock(queue)
        try:
            argv = [sys.executable, "-I", "-S", "-X", "importtime", str(CLIENT), "--config", str(config)]
            argv += ["--target", "claude", "--event", "turn_end", "--timeout", "1"]
            started = time.monotonic()
            proc = subprocess.run(argv, input=b'{"last_assistant_message": "x"}', capture_output=True, timeout=20)
            assert time.monotonic() - started < 1.8
        finally:
            _release(holder)
    finally:
        fake.close()
    assert proc.returncode == 0 and proc.stdout == b""
    allowed = baseline(INBOX_PATH_IMPORTS) | {"client_core", "paxm_capture_inbox", "paxm_capture_spool", "paxm_redact"}
    extra = imported_modules(proc.stderr) - allowed
    assert not extra, f"hook client imported modules beyond its allowed set: {sorted(extra)}"
    ((record,), torn) = _spool.read_records(_spool.spool_path(queue))
    event_id, _target, name, raw, _received = record
    assert torn == 0 and name == "turn_end" and raw == b'{"last_assistant_message": "x"}'
    assert event_id == fake.requests[0]["event_id"]


def test_an_event_follows_spooled_events_when_their_import_met_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is released between the daemon's failed import and this event's append: no overtaking."""
    from paxm_core.api.errors import QueueError
    from paxm_core.capture import CaptureQueue, _spool, routes_from_write_profiles
    from paxm_core.passive.processor import HookProcessor
    from paxm_core.runtime import Runtime

    config = write_config(tmp_path / "cfg")
    runtime = Runtime.load(str(config))
    queue = CaptureQueue(
        config.parent / "hooks" / "capture.sqlite", routes=routes_from_write_profiles(runtime.config.write_profiles)
    )
    processor = HookProcessor(runtime, queue)
    try:
        prompt = json.dumps({**{"session_id": "r", "cwd": "/w"}, "prompt": "spooled prompt PB9001"}).encode()
        _spool.append_record(queue.path, "evt_" + "a" * 32, "claude", "user_input", prompt, time.time() - 1)
        real_import = queue.import_spool
        calls: list[int] = []

        def locked_once() -> int:
            calls.append(1)
            if len(calls) == 1:  # the lock was still held for this import, and is gone right after
                raise QueueError("capture queue: database is locked; another process holds the database")
            return real_import()

        monkeypatch.setattr(queue, "import_spool", locked_once)
        answer = json.dumps({"session_id": "r", "cwd": "/w", "last_assistant_message": "answer PB9002"})
        request = {"event_id": "evt_" + "b" * 32, "target": "claude", "event": "turn_end", "raw": answer}
        response = processor.handle_hook({**request, "captured_at": time.time()})
        assert response["ok"], response
        assert queue_rows(config, "SELECT count(*) FROM capture_events") == [(0,)]  # it went behind them
        records, _ = _spool.read_records(_spool.spool_path(queue.path))
        assert [r[2] for r in records] == ["user_input", "turn_end"]
        processor.drain_inbox()
    finally:
        processor.close()
        queue.close()
        runtime.close()
    episodes = queue_rows(config, "SELECT payload_json FROM capture_episodes")
    assert len(episodes) == 1 and "PB9001" in episodes[0][0] and "PB9002" in episodes[0][0]
