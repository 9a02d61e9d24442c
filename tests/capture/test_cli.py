"""``paxm queue status|retry|flush`` as real subprocesses over the real SQLite provider."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
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
        # a daemon that holds its lock is starting: wait for its socket (a loaded machine's
        # start-up takes seconds), not for a fixed couple of seconds
        while send_control(config_path, "ping", timeout=60, starting_wait=60) is None:
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


class BusyDaemon:
    """Holds the hook daemon's lock and socket like a running daemon too busy to answer a
    status probe (it reads the request and answers nothing until the client gives up), but
    answers a flush, as the real one does once its flush is done."""

    def __init__(self, hooks: Path) -> None:
        hooks.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.lock = os.open(hooks / "paxm-hook.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(self.lock, f"{os.getpid()}\n".encode())
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(hooks / "paxm-hook.sock"))
        self.sock.listen(8)
        self.requests: list[dict[str, object]] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # shut down by close()
                return
            with conn:
                data = b""
                while not data.endswith(b"\n") and (chunk := conn.recv(65536)):
                    data += chunk
                request = json.loads(data)
                self.requests.append(request)
                if request["action"] == "flush":
                    report = {"sealed": 0, "delivered": 0, "failed": 0, "dead": 0, "timed_out": False}
                    conn.sendall(json.dumps({"ok": True, "flush": report, "flushed": 0}).encode() + b"\n")
                else:
                    conn.recv(1)  # busy: returns only when the client stops waiting and closes

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept; close the fd once the thread is gone
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()
        self.sock.close()
        os.close(self.lock)


def test_a_daemon_too_busy_to_answer_status_is_running_and_flush_waits_for_it(tmp_path: Path) -> None:
    """A daemon that holds its lock runs, however slowly it answers: status says so, and flush
    asks it and waits instead of delivering behind its back (a second worker would race it)."""
    config_path = tmp_path / "config.yaml"
    config = load_config(config_path)
    with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as q:
        q.append(event("b1", "sess-b", text="a sealed turn owed to the provider", terminal=True))
    busy = BusyDaemon(tmp_path / "hooks")
    try:
        status = json.loads(paxm("--config", str(config_path), "queue", "status", "--json").stdout)
        daemon = status["daemon"]
        assert daemon["running"] is True and daemon["responding"] is False
        assert daemon["pid"] == os.getpid() and "hook daemon status failed" in daemon["error"]
        text = paxm("--config", str(config_path), "queue", "status").stdout
        assert f"Hook daemon: running (pid {os.getpid()}, not answering: hook daemon status failed" in text
        flushed = paxm("--config", str(config_path), "queue", "flush", "--timeout", "30s", "--json")
        data = json.loads(flushed.stdout)
        assert data["via_daemon"] is True, flushed.stdout + flushed.stderr
        assert [r["action"] for r in busy.requests] == ["status", "status", "status", "flush"]
        assert busy.requests[-1]["timeout"] == 30
        # nothing was delivered by the CLI itself: the (fake) daemon owns delivery, so the turn
        # is still owed and flush says so
        assert flushed.returncode == 1 and data["remaining"] == 1 and data["ok"] is False
        with CaptureQueue(config.capture_queue_path, recover=False) as q:
            assert q.status().deliveries == {"pending": 1}
    finally:
        busy.close()
