"""``paxm queue status|retry|flush`` as real subprocesses over the real SQLite provider."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from _capture_helpers import event

from paxm_core.capture import CaptureQueue, routes_from_write_profiles
from paxm_core.capture._inbox import append_raw
from paxm_core.config import load_config


def paxm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from paxm_core.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_status_of_missing_queue_does_not_create_it(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    result = paxm("--config", str(config), "queue", "status", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["exists"] is False and data["path"] == str(tmp_path / "hooks" / "capture.sqlite")
    assert data["daemon"] == {"running": False}
    assert not (tmp_path / "hooks").exists()


def test_flush_delivers_to_the_real_sqlite_provider(tmp_path: Path) -> None:
    config_path = tmp_path / "config.yaml"
    config = load_config(config_path)
    with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as q:
        q.append(event("e1", "sess-a", text="we chose postgres for the billing service"))
        q.append(event("e2", "sess-a", text="because of row level security", terminal=True))
        q.append(event("e3", "sess-b", text="open turn, sealed by flush --seal-open"))
    flushed = paxm("--config", str(config_path), "queue", "flush", "--timeout", "20s", "--seal-open")
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr
    assert "sealed 1 episode(s), delivered 2" in flushed.stdout and "0 still owed" in flushed.stdout

    status = paxm("--config", str(config_path), "queue", "status", "--json")
    data = json.loads(status.stdout)
    assert data["deliveries"] == {"delivered": 2} and data["episodes"] == {"delivered": 2}
    assert data["open_events"] == 0 and data["oldest_pending_age_seconds"] is None

    with sqlite3.connect(config.capture_queue_path) as conn:
        refs = sorted(r[0] for r in conn.execute("SELECT provider_ref FROM capture_deliveries"))
        episodes = sorted(r[0] for r in conn.execute("SELECT episode_id FROM capture_episodes"))
    assert refs == episodes  # the provider honoured the stable episode id

    text = paxm("--config", str(config_path), "queue", "status")
    assert "Deliveries: pending 0, delivering 0, retry 0, delivered 2, dead 0" in text.stdout
    assert "Hook daemon: not running" in text.stdout


def test_flush_drains_the_raw_inbox_and_exits_1_on_unprocessable_entries(tmp_path: Path) -> None:
    config_path = tmp_path / "config.yaml"
    queue_path = tmp_path / "hooks" / "capture.sqlite"
    good = json.dumps({"session_id": "s-1", "cwd": str(tmp_path), "prompt": "remember: deploys go out on tuesdays"})
    append_raw(queue_path, "evt_good", "codex", "user_input", good.encode(), 1_800_000_000.0)
    append_raw(queue_path, "evt_bad", "codex", "user_input", b'{"prompt": "mine"}', 1_800_000_001.0)
    with sqlite3.connect(queue_path) as conn:  # damaged on disk: the checksum no longer matches
        conn.execute("UPDATE capture_inbox SET raw = ? WHERE event_id = 'evt_bad'", (b'{"prompt": "evil"}',))
    result = paxm("--config", str(config_path), "queue", "flush", "--timeout", "10s", "--seal-open", "--json")
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert data["inbox_failed"] == 1 and data["inbox_pending"] == 0 and data["ok"] is False
    assert data["delivered"] == 1 and data["remaining"] == 0  # the good entry went all the way
    with sqlite3.connect(queue_path) as conn:
        states = dict(conn.execute("SELECT event_id, state FROM capture_inbox").fetchall())
        raw = conn.execute("SELECT raw FROM capture_inbox WHERE event_id = 'evt_bad'").fetchone()[0]
    assert states == {"evt_good": "done", "evt_bad": "failed"}
    assert raw == b'{"prompt": "evil"}'  # kept for the operator, never silently dropped
    status = paxm("--config", str(config_path), "queue", "status")
    assert "Failed inbox entries:" in status.stdout and "evt_bad: capture inbox entry" in status.stdout


def test_bad_arguments_are_clean_errors(tmp_path: Path) -> None:
    config = str(tmp_path / "config.yaml")
    retry = paxm("--config", config, "queue", "retry")
    assert retry.returncode == 1 and "Error: queue retry needs --dead" in retry.stderr
    flush = paxm("--config", config, "queue", "flush", "--timeout", "soon")
    assert flush.returncode == 1 and "Error: queue flush --timeout" in flush.stderr
    assert "Traceback" not in retry.stderr + flush.stderr


def test_status_and_flush_go_through_a_running_hook_daemon(tmp_path: Path) -> None:
    import time

    from paxm_core.passive.control import send_control

    config_path = tmp_path / "config.yaml"
    config = load_config(config_path)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "paxm_core.passive.daemon", "--config", str(config_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while send_control(config_path, "ping", timeout=2) is None:
            assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else ""
            assert time.monotonic() < deadline, "hook daemon did not come up"
            time.sleep(0.05)
        with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as q:
            q.append(event("d1", "sess-d", text="an open turn the daemon must seal on flush"))
        status = json.loads(paxm("--config", str(config_path), "queue", "status", "--json").stdout)
        assert status["daemon"]["running"] is True and status["daemon"]["pid"] == daemon.pid
        # a plain flush leaves the live turn whole (and succeeds: nothing sealed is owed)
        plain = paxm("--config", str(config_path), "queue", "flush", "--json")
        assert plain.returncode == 0, plain.stdout + plain.stderr
        assert json.loads(plain.stdout)["live"] == 1
        with CaptureQueue(config.capture_queue_path, recover=False) as q:
            assert q.status().deliveries == {}
        flushed = paxm("--config", str(config_path), "queue", "flush", "--seal-open", "--json")
        assert flushed.returncode == 0, flushed.stdout + flushed.stderr
        data = json.loads(flushed.stdout)
        assert data["via_daemon"] is True and data["ok"] is True and data["remaining"] == 0
        with CaptureQueue(config.capture_queue_path, recover=False) as q:
            assert q.status().deliveries == {"delivered": 1}
    finally:
        try:
            send_control(config_path, "shutdown", timeout=10)
        finally:
            if daemon.poll() is None:
                daemon.kill()
            daemon.wait(timeout=30)
            if daemon.stderr is not None:
                daemon.stderr.close()
