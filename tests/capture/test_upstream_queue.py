"""Upstream paxm's capture queue at paxm's default path: set aside (kept, 0600), what it can still
deliver imported, capture continues, and doctor says what happened.

The database is built with upstream's exact DDL (``internal/capturequeue/queue.go``, ``migrate``)
and filled the way upstream's queue fills it: events ``{"item": RememberInput}``, episodes, and
one delivery row per provider.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from paxm_core.capture import _inbox

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"

#: upstream's statements, verbatim
UPSTREAM_DDL = [
    "PRAGMA busy_timeout = 5000",
    "PRAGMA journal_mode = WAL",
    """CREATE TABLE IF NOT EXISTS capture_events (
  event_id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  source_sequence INTEGER,
  final_sequence INTEGER,
  terminal INTEGER NOT NULL DEFAULT 0,
  payload_json TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  episode_id TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  UNIQUE(session_key, sequence)
)""",
    "CREATE INDEX IF NOT EXISTS capture_events_pending ON capture_events(session_key, episode_id, sequence)",
    """CREATE TABLE IF NOT EXISTS capture_episodes (
  episode_id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  first_sequence INTEGER NOT NULL,
  last_sequence INTEGER NOT NULL,
  complete INTEGER NOT NULL,
  payload_json TEXT NOT NULL,
  payload_hash TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  created_at TEXT NOT NULL,
  UNIQUE(session_key, first_sequence, last_sequence)
)""",
    """CREATE TABLE IF NOT EXISTS capture_deliveries (
  episode_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  profiles_json TEXT NOT NULL DEFAULT '[]',
  state TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT NOT NULL DEFAULT '',
  lease_until TEXT NOT NULL DEFAULT '',
  last_error TEXT NOT NULL DEFAULT '',
  provider_ref TEXT NOT NULL DEFAULT '',
  delivered_at TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(episode_id, provider)
)""",
    "CREATE INDEX IF NOT EXISTS capture_deliveries_schedule"
    " ON capture_deliveries(state, next_attempt_at, provider, episode_id)",
    "CREATE INDEX IF NOT EXISTS capture_episodes_schedule ON capture_episodes(session_key, first_sequence, episode_id)",
]

STAMP = "2026-12-01T10:00:00.123456789Z"


def _payload(text: str) -> str:
    item = {"text": text, "profile": "ltm", "source": "hook:codex", "metadata": {"hook_target": "codex"},
            "created_at": "0001-01-01T00:00:00Z", "agent_name": "codex"}  # fmt: skip
    return json.dumps({"item": item})


def _event(conn: sqlite3.Connection, event_id: str, session: str, seq: int, text: str, episode: str = "") -> None:
    conn.execute(
        "INSERT INTO capture_events(event_id, session_key, sequence, source_sequence, final_sequence, terminal,"
        " payload_json, payload_hash, episode_id, created_at) VALUES (?, ?, ?, NULL, NULL, ?, ?, 'h', ?, ?)",
        (event_id, session, seq, int(bool(episode)), _payload(text), episode, STAMP),
    )


def _episode(conn: sqlite3.Connection, episode: str, session: str, state: str, delivery: str) -> None:
    conn.execute(
        "INSERT INTO capture_episodes(episode_id, session_key, first_sequence, last_sequence, complete,"
        " payload_json, payload_hash, state, created_at) VALUES (?, ?, 1, 2, 1, '{}', 'h', ?, ?)",
        (episode, session, state, STAMP),
    )
    conn.execute(
        "INSERT INTO capture_deliveries(episode_id, provider, profiles_json, state)"
        " VALUES (?, 'sqlite', '[\"ltm\"]', ?)",
        (episode, delivery),
    )


def build_upstream_queue(path: Path) -> None:
    """Four sessions: undelivered episode, delivered episode, dead episode, a turn in progress."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in UPSTREAM_DDL:
            conn.execute(statement)
        conn.execute("BEGIN")
        _event(conn, "evt_a1", "codex/s-a", 1, "User: which port does osprey use?", "ep_a")
        _event(conn, "evt_a2", "codex/s-a", 2, "Assistant: osprey listens on port 7311.", "ep_a")
        _episode(conn, "ep_a", "codex/s-a", "pending", "retry")
        _event(conn, "evt_b1", "codex/s-b", 1, "User: heron already delivered upstream", "ep_b")
        _episode(conn, "ep_b", "codex/s-b", "delivered", "delivered")
        _event(conn, "evt_c1", "codex/s-c", 1, "User: kestrel gave up upstream", "ep_c")
        _episode(conn, "ep_c", "codex/s-c", "dead", "dead")
        _event(conn, "evt_d1", "codex/s-d", 1, "User: plover turn still in progress")
        conn.execute("COMMIT")
    finally:
        conn.close()
    path.chmod(0o644)  # how upstream's Go process leaves it under a 022 umask


def paxm(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "--config", str(cfg), *args],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, env=dict(os.environ), timeout=120,
    )  # fmt: skip


def recalled(cfg: Path, query: str) -> list[str]:
    result = paxm(cfg, "recall", "--query", query, "--json")
    assert result.returncode == 0, result.stderr
    return [str(hit["text"]) for hit in json.loads(result.stdout)["hits"]]


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(mode=0o700)
    path.write_text(
        "version: 1\nidentity: {user_id: alice}\nagents: {}\n"
        f"providers:\n  sqlite: {{type: sqlite, enabled: true, path: {path.parent / 'memory.sqlite'}}}\n",
        encoding="utf-8",
    )
    path.chmod(0o600)
    build_upstream_queue(path.parent / "hooks" / "capture.sqlite")
    return path


def _copies(queue: Path) -> list[Path]:
    return sorted(p for p in queue.parent.iterdir() if p.name.startswith("capture.sqlite.upstream-"))


def test_flush_imports_upstream_s_undelivered_turns_and_capture_continues(cfg: Path) -> None:
    queue = cfg.parent / "hooks" / "capture.sqlite"
    flushed = paxm(cfg, "queue", "flush", "--seal-open", "--json")
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr
    assert "no such column" not in flushed.stderr
    # upstream's file is kept, as paxm's own private copy, and marked imported
    (copy,) = _copies(queue)
    assert copy.name.endswith(".imported") and copy.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM capture_events").fetchone() == (5,)
    status = paxm(cfg, "queue", "status", "--json")
    assert status.returncode == 0, status.stderr
    # the undelivered episode and the turn in progress were delivered; what upstream
    # delivered or gave up on was not imported (no duplicate, no resurrection)
    assert any("7311" in t for t in recalled(cfg, "osprey port"))
    assert any("plover" in t for t in recalled(cfg, "plover turn"))
    assert recalled(cfg, "heron delivered upstream") == []
    assert recalled(cfg, "kestrel gave up") == []
    # doctor says what happened, and it is not an error
    doctor = paxm(cfg, "config", "doctor", "--json")
    rows = json.loads(doctor.stdout)
    upstream = [r for r in rows if r.get("subject") == "upstream-queue"]
    assert upstream and all(r["level"] == "warn" for r in upstream), rows
    assert "imported 3" in upstream[0]["message"] and str(copy) in upstream[0]["message"], upstream
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr


def test_the_hook_client_path_sets_upstream_s_queue_aside_and_stores_the_event(cfg: Path) -> None:
    """A hook arriving while no daemon runs (the stdlib inbox) must not be blocked by the old file."""
    queue = cfg.parent / "hooks" / "capture.sqlite"
    assert _inbox.append_raw(queue, "evt_" + "f" * 32, "codex", "user_input", b'{"prompt": "hi"}')
    (copy,) = _copies(queue)
    assert copy.stat().st_mode & 0o777 == 0o600
    assert queue.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(queue) as conn:
        assert conn.execute("SELECT count(*) FROM capture_inbox").fetchone() == (1,)
    # doctor, before any daemon imported it, says it is waiting (a warning with the fix)
    rows: list[dict[str, Any]] = json.loads(paxm(cfg, "config", "doctor", "--json").stdout)
    waiting = [r for r in rows if r.get("subject") == "upstream-queue"]
    assert waiting and "paxm queue flush" in waiting[0]["fix"], rows


def test_an_unreadable_event_stays_in_the_copy_and_the_rest_is_imported(cfg: Path) -> None:
    queue = cfg.parent / "hooks" / "capture.sqlite"
    with sqlite3.connect(queue) as conn:
        conn.execute("UPDATE capture_events SET payload_json = 'not json' WHERE event_id = 'evt_a1'")
    flushed = paxm(cfg, "queue", "flush", "--seal-open", "--json")
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr
    (copy,) = _copies(queue)
    assert copy.name.endswith(".imported")
    assert any("7311" in t for t in recalled(cfg, "osprey port"))
    rows = json.loads(paxm(cfg, "config", "doctor", "--json").stdout)
    (row,) = [r for r in rows if r.get("subject") == "upstream-queue"]
    assert "imported 2" in row["message"] and "1 unreadable" in row["message"], row


def test_the_hook_daemon_starts_on_upstream_s_queue_and_delivers_old_and_new_turns(tmp_path: Path) -> None:
    """The passive path end to end: real daemon, real hook client, upstream's queue at the default path."""
    from paxm_core.config import load_config, save_config
    from paxm_core.passive.control import send_control

    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(mode=0o700)
    config = load_config(path)
    config.providers["sqlite"].path = str(path.parent / "memory.sqlite")
    config.agents["claude"].enabled = True
    save_config(config, path)
    build_upstream_queue(path.parent / "hooks" / "capture.sqlite")
    client = Path(__file__).resolve().parents[2] / "paxm_core" / "passive" / "client.py"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "paxm_core.passive.daemon", "--config", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        sock, started = path.parent / "hooks" / "paxm-hook.sock", time.monotonic()
        while not sock.exists() and daemon.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.05)
        assert sock.exists(), "the hook daemon did not start on upstream's queue"
        turn = json.dumps({"session_id": "new", "cwd": "/w", "last_assistant_message": "Saved grebe-5150."})
        hook = subprocess.run(
            [sys.executable, "-I", "-S", str(client), "--config", str(path), "--target", "claude", "--event",
             "turn_end"],
            input=turn.encode(), capture_output=True, timeout=30,
        )  # fmt: skip
        assert hook.returncode == 0, hook.stderr
        report = send_control(path, "flush", timeout=60, starting_wait=30)
        assert report is not None and report["ok"], report
        with sqlite3.connect(path.parent / "memory.sqlite") as conn:
            texts = [row[0] for row in conn.execute("SELECT text FROM memories")]
        assert any("7311" in t for t in texts) and any("grebe-5150" in t for t in texts), texts
        assert not any("heron" in t or "kestrel" in t for t in texts), texts
    finally:
        send_control(path, "shutdown")
        daemon.wait(timeout=30)
