"""Item 5 of issue 13: capture loss is visible (doctor) and self-healing (corrupt queue)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from paxm_core.capture import _inbox

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]
PASSIVE_TESTS = Path(__file__).parents[1] / "passive"
sys.path.insert(0, str(PASSIVE_TESTS.parent))

from passive.conftest import memories, run_client, stop_daemon, write_config  # noqa: E402


def _doctor(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAXM, "--config", str(config), "config", "doctor"], capture_output=True, text=True, timeout=60
    )


def test_an_empty_config_is_an_error_not_silent_defaults(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_bytes(b"")
    doctor = _doctor(config)
    assert doctor.returncode != 0
    assert "empty" in doctor.stderr and "paxm setup" in doctor.stderr


def test_a_corrupt_queue_is_moved_aside_and_capture_resumes(tmp_path: Path) -> None:
    queue = tmp_path / "hooks" / "capture.sqlite"
    queue.parent.mkdir(parents=True)
    queue.write_bytes(b"this is not a database" * 100)
    assert _inbox.append_raw(queue, "evt_" + "c" * 32, "claude", "turn_end", b"{}", time.time())
    kept = list(queue.parent.glob("capture.sqlite.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"this is not a database")
    conn = sqlite3.connect(queue)
    try:
        assert conn.execute("SELECT count(*) FROM capture_inbox").fetchone() == (1,)
    finally:
        conn.close()


def _no_agents(config: Any) -> None:
    """No agent enabled (not even upstream's default): their hooks are not installed in these tests."""
    for agent in config.agents.values():
        agent.enabled = False


def test_doctor_reports_failed_inbox_entries_and_a_moved_aside_queue(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg", agents=(), mutate=_no_agents)
    assert _doctor(config).returncode == 0
    queue = config.parent / "hooks" / "capture.sqlite"
    assert _inbox.append_raw(queue, "evt_" + "d" * 32, "claude", "turn_end", b"{}", time.time())
    conn = sqlite3.connect(queue)
    try:
        conn.execute("UPDATE capture_inbox SET state = 'failed'")
        conn.commit()
    finally:
        conn.close()
    doctor = _doctor(config)
    assert doctor.returncode != 0
    assert "capture" in doctor.stdout + doctor.stderr and "failed" in doctor.stdout + doctor.stderr
    as_json = subprocess.run(
        [*PAXM, "--config", str(config), "config", "doctor", "--json"], capture_output=True, text=True, timeout=60
    )
    assert as_json.returncode != 0
    entries = json.loads(as_json.stdout)
    assert any(e.get("check") == "capture" and not e["ok"] for e in entries)


def test_doctor_reports_the_daemons_last_startup_error(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    log = config.parent / "hooks" / "paxm-hook-daemon.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("2026-01-01T00:00:00+00:00 pid=1 startup failed: cannot open the queue\n")
    doctor = _doctor(config)
    assert doctor.returncode != 0
    assert "startup failed: cannot open the queue" in doctor.stdout + doctor.stderr


def test_sqlite_hint_fits_the_error() -> None:
    from paxm_core.capture._inbox import sqlite_hint

    assert "permission" not in sqlite_hint("file is not a database").lower()
    assert "corrupt" in sqlite_hint("file is not a database").lower()
    assert "permission" in sqlite_hint("attempt to write a readonly database").lower()
    assert "full" in sqlite_hint("database or disk is full").lower()


def test_hooks_keep_working_after_the_queue_was_corrupted(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    queue = config.parent / "hooks" / "capture.sqlite"
    queue.parent.mkdir(parents=True, exist_ok=True)
    queue.write_bytes(b"garbage" * 1000)
    try:
        prompt = json.dumps({"session_id": "k1", "cwd": "/w", "prompt": "Decision: corrupt-queue marker ibis-9"})
        stop = json.dumps({"session_id": "k1", "cwd": "/w", "last_assistant_message": "ok ibis-9"})
        assert run_client(config, "claude", "user_input", prompt.encode()).returncode == 0
        assert run_client(config, "claude", "turn_end", stop.encode()).returncode == 0
        flush = subprocess.run([*PAXM, "--config", str(config), "queue", "flush"], capture_output=True, timeout=60)
        assert flush.returncode == 0, flush.stdout + flush.stderr
        assert any("ibis-9" in m["text"] for m in memories(config))
    finally:
        stop_daemon(config)
