"""The stdlib-only raw inbox: loadable by path, durable, idempotent, conflict-detecting."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests._kit import load_module

INBOX_FILE = Path(__file__).resolve().parents[2] / "paxm_core" / "capture" / "_inbox.py"


def load_by_path() -> ModuleType:
    return load_module("_paxm_inbox_under_test", INBOX_FILE)


def test_loads_by_path_without_any_paxm_module() -> None:
    code = (
        "import importlib.util, sys, json\n"
        f"spec = importlib.util.spec_from_file_location('inbox', {str(INBOX_FILE)!r})\n"
        "import sqlite3, hashlib, os, time\n"  # what sqlite3 itself pulls in is fine
        "before = set(sys.modules)\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert not {name for name in loaded if "paxm" in name}
    # nothing beyond the stdlib modules the hook client already pays for
    assert loaded <= {"inbox", "__future__"}, loaded


def test_append_raw_is_durable_private_and_idempotent(tmp_path: Path) -> None:
    inbox = load_by_path()
    db = tmp_path / "hooks" / "capture.sqlite"
    assert inbox.append_raw(db, "evt_a", "codex", "user_input", b'{"prompt": "hi"}', 1000.5) is True
    assert inbox.append_raw(db, "evt_a", "codex", "user_input", '{"prompt": "hi"}') is False
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(db.parent).st_mode) == 0o700
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT event_id, target, event, raw, received_at, state FROM capture_inbox").fetchall()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert rows == [("evt_a", "codex", "user_input", b'{"prompt": "hi"}', "1970-01-01T00:16:40.500000Z", "pending")]
    assert mode == "wal"


@pytest.mark.parametrize(
    ("target", "event", "raw"),
    [
        ("claude", "user_input", b'{"prompt": "hi"}'),
        ("codex", "turn_end", b'{"prompt": "hi"}'),
        ("codex", "user_input", b'{"prompt": "hi!"}'),
    ],
)
def test_same_id_different_content_conflicts(tmp_path: Path, target: str, event: str, raw: bytes) -> None:
    inbox = load_by_path()
    db = tmp_path / "q.sqlite"
    inbox.append_raw(db, "evt_a", "codex", "user_input", b'{"prompt": "hi"}')
    with pytest.raises(inbox.InboxConflict, match="conflicts with an existing event"):
        inbox.append_raw(db, "evt_a", target, event, raw)


def test_invalid_json_is_kept_not_dropped(tmp_path: Path) -> None:
    inbox = load_by_path()
    db = tmp_path / "q.sqlite"
    assert inbox.append_raw(db, "evt_bad", "codex", "user_input", b"\xff not json")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT raw FROM capture_inbox").fetchone()[0] == b"\xff not json"


def test_empty_event_id_rejected(tmp_path: Path) -> None:
    inbox = load_by_path()
    with pytest.raises(ValueError, match="event_id is required"):
        inbox.append_raw(tmp_path / "q.sqlite", " ", "codex", "user_input", b"{}")


def test_concurrent_processes_create_schema_once(tmp_path: Path) -> None:
    db = tmp_path / "q.sqlite"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('inbox', {str(INBOX_FILE)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "for i in range(20): m.append_raw(sys.argv[1], f'evt_{sys.argv[2]}_{i}', 'codex', 'user_input', b'{}')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), str(n)]) for n in range(4)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM capture_inbox").fetchone()[0] == 80
        names = [r[0] for r in conn.execute("SELECT name FROM _paxm_migrations ORDER BY name")]
    assert names == [name for name, _ in load_by_path().MIGRATIONS]
