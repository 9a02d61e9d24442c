"""``paxm forget`` across SQLite and a real PostgreSQL, including a queued, undelivered copy.

The capture queue is filled through the real ``CaptureQueue`` with the config's routes and
delivered by ``paxm queue flush`` in a subprocess; "PostgreSQL down" is the provider pointed
at a port nothing listens on, "back" is the config pointed at the running server again.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from pgserver import APP_PASSWORD, APP_USER, PASSWORD_ENV, PgServer

from paxm_core import MemoryItem
from paxm_core.capture import CaptureEvent, CaptureQueue, routes_from_write_profiles
from paxm_core.config import load_config

ENTRY = "import sys; from paxm_core.cli import main; main(sys.argv[1:])"
SECRET = "the staging quokka token is kept in the blue vault"


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def _write_config(path: Path, server: PgServer, schema: str, port: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    dsn = f"host=127.0.0.1 port={port} dbname=paxm user={APP_USER} connect_timeout=2"
    routes = "[{name: sqlite}, {name: pg}]"
    path.write_text(
        f"""version: 1
identity: {{user_id: alice}}
providers:
  sqlite: {{type: sqlite, enabled: true, path: {path.parent / "memory.sqlite"}}}
  pg: {{type: postgres, enabled: true, dsn: "{dsn}", password: "env:{PASSWORD_ENV}", schema: {schema}, user_id: alice}}
recall_profiles:
  default: {{providers: {routes}, max_results: 5}}
write_profiles:
  default: {{providers: {routes}}}
"""
    )
    os.chmod(path, 0o600)


def paxm(cfg: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **{PASSWORD_ENV: APP_PASSWORD})
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        env=env,
        timeout=120,
    )


def _pg_texts(server: PgServer, schema: str) -> list[str]:
    conninfo = server.dsn() + f" password={APP_PASSWORD}"
    with psycopg.connect(conninfo) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (f"{schema}.paxm_memories",)).fetchone()
        if exists is None or exists[0] is None:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
            ).fetchall()
            table = next((t[0] for t in tables if "memor" in t[0]), None)
            if table is None:
                return []
        else:
            table = "paxm_memories"
        return [r[0] for r in conn.execute(f'SELECT text FROM "{schema}"."{table}" ORDER BY text').fetchall()]


def _capture(cfg: Path, session: str, text: str, *, terminal: bool = True) -> None:
    config = load_config(str(cfg))
    with CaptureQueue(config.capture_queue_path, routes=routes_from_write_profiles(config.write_profiles)) as queue:
        queue.append(
            CaptureEvent(
                event_id="evt_" + secrets.token_hex(16),
                session_key=f"test/workspace/repo/session/{session}",
                item=MemoryItem(text=text, source="hook:test"),
                terminal=terminal,
            )
        )


def _owed(cfg: Path) -> dict[str, Any]:
    status = paxm(cfg, "queue", "status", "--json")
    assert status.returncode == 0, status.stderr
    data: dict[str, Any] = json.loads(status.stdout)
    return data


def test_a_queued_copy_for_a_down_provider_is_never_delivered(pg_server: PgServer, schema: str, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "config.yaml"
    _write_config(cfg, pg_server, schema, _dead_port())  # PostgreSQL is down
    _capture(cfg, "s1", SECRET)
    _capture(cfg, "s2", "the build uses the wombat compiler flags")
    _capture(cfg, "s3", "another quokka token note, turn still open", terminal=False)
    flushed = paxm(cfg, "queue", "flush", "--timeout", "8s", "--json")
    assert flushed.returncode == 1  # pg deliveries are left in retry
    assert _owed(cfg)["providers"]["sqlite"] == {"delivered": 2}, flushed.stdout
    assert _owed(cfg)["providers"]["pg"].get("retry", 0) + _owed(cfg)["providers"]["pg"].get("pending", 0) == 2

    # forget while pg is still down: the SQLite copy goes, the queued copy for pg goes too
    done = paxm(cfg, "forget", "--query", "quokka token", "--yes", "--json")
    report = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr  # pg could not be searched: said, and exit 1
    assert [e["provider"] for e in report["search_errors"]] == ["pg"]
    assert "could not search: pg" in done.stderr
    local = next(p for p in report["providers"] if p["provider"] == "sqlite")
    assert len(local["deleted"]) == 1 and local["failed"] == []
    kinds = sorted((c["kind"], c["reason"]) for c in report["queue"]["copies"])
    assert kinds == [("episode", "episode id"), ("event", "text")]
    episode = next(c for c in report["queue"]["copies"] if c["kind"] == "episode")
    assert episode["first_line"] == SECRET
    assert [u["provider"] for u in episode["undelivered"]] == ["pg"]
    assert report["queue"]["removed"] == 2

    # pg comes back: only the unrelated turn is delivered, the forgotten one never
    _write_config(cfg, pg_server, schema, pg_server.port)
    flushed = paxm(cfg, "queue", "flush", "--timeout", "20s", "--seal-open", "--json")
    assert flushed.returncode == 0, flushed.stdout + flushed.stderr
    assert _pg_texts(pg_server, schema) == ["the build uses the wombat compiler flags"]
    recalled = paxm(cfg, "recall", "--query", "quokka token", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["hits"] == []
    status = _owed(cfg)
    assert status["deliveries"].get("retry", 0) == 0 and status["deliveries"].get("pending", 0) == 0
    assert status["open_events"] == 0


def test_forget_by_id_deletes_on_both_providers(pg_server: PgServer, schema: str, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "config.yaml"
    _write_config(cfg, pg_server, schema, pg_server.port)
    stored = paxm(cfg, "remember", "--text", SECRET, "--json")
    assert stored.returncode == 0, stored.stderr
    refs = json.loads(stored.stdout)["refs"]
    assert sorted(r["provider"] for r in refs) == ["pg", "sqlite"]
    ids = {r["id"] for r in refs}
    assert len(ids) == 1  # both keep the router's admission id
    (memory_id,) = ids

    done = paxm(cfg, "forget", memory_id, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["not_found"] == []
    assert {p["provider"]: (p["status"], p["deleted"]) for p in report["providers"]} == {
        "sqlite": ("ok", [memory_id]),
        "pg": ("ok", [memory_id]),
    }
    assert _pg_texts(pg_server, schema) == []
    again = paxm(cfg, "forget", memory_id, "--yes", "--json")
    assert again.returncode == 1
    report = json.loads(again.stdout)
    assert report["not_found"] == [memory_id]
    assert {p["provider"]: p["not_found"] for p in report["providers"]} == {"sqlite": [memory_id], "pg": [memory_id]}
    assert f"not found anywhere: {memory_id}" in again.stderr


def test_forget_on_one_provider_keeps_the_other(pg_server: PgServer, schema: str, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "config.yaml"
    _write_config(cfg, pg_server, schema, pg_server.port)
    assert paxm(cfg, "remember", "--text", SECRET).returncode == 0
    done = paxm(cfg, "forget", "--query", "quokka", "--provider", "pg", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [p["provider"] for p in report["providers"]] == ["pg"]
    assert _pg_texts(pg_server, schema) == []
    recalled = json.loads(paxm(cfg, "recall", "--query", "quokka", "--json").stdout)
    assert [h["provider"] for h in recalled["hits"]] == ["sqlite"]
