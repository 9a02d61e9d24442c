"""The OpenCode session reader: the real database written by the pinned binary, and edge cases.

``fixtures/opencode-sessions-1.18.33/opencode.db`` comes from ``make_transcript_fixtures.py``
(``opencode-ai`` 1.18.33, ``opencode run --print-logs --format json <prompt>`` twice, offline,
with paxm's plugin installed, against the fake Chat Completions server): two sessions, each
runs ``bash`` (``echo TOOL_RAN_OK``) before answering.  ``opencode run`` stores the prompt with the quotes it got.
The older ``storage/`` JSON layout is built here in the shape those releases wrote.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from paxm_contracttest.sandbox import PaxmSandbox
from paxm_core.integration import EVENT_TURN_END, SupportsTranscripts
from paxm_integration_opencode import transcripts
from paxm_integration_opencode.integration import KiloIntegration, OpenCodeIntegration

FIXTURE_DB = Path(__file__).with_name("fixtures") / "opencode-sessions-1.18.33" / "opencode.db"
PAXM = str(Path(sys.executable).parent / "paxm")
PROMPTS = [
    '"RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on."',
    '"What naming scheme did we decide on for release branches?"',
]


def test_integrations_support_transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opencode, kilo = OpenCodeIntegration(), KiloIntegration()
    assert isinstance(opencode, SupportsTranscripts) and isinstance(kilo, SupportsTranscripts)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert opencode.data_dir() == tmp_path / "data" / "opencode"
    assert kilo.data_dir() == tmp_path / "data" / "kilo"
    assert opencode.transcript_files() == []  # absent directory
    (tmp_path / "data" / "opencode" / "storage" / "session" / "proj").mkdir(parents=True)
    shutil.copy(FIXTURE_DB, tmp_path / "data" / "opencode" / "opencode.db")
    (tmp_path / "data" / "opencode" / "storage" / "session" / "proj" / "ses_1.json").write_text("{}")
    assert [p.name for p in opencode.transcript_files()] == ["opencode.db", "ses_1.json"]
    monkeypatch.setenv("PAXM_OPENCODE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert opencode.transcript_files() == []
    assert kilo.data_dir() == tmp_path / "data" / "kilo"  # Kilo has its own override


def test_real_database_gives_prompt_tools_and_answer() -> None:
    before = FIXTURE_DB.read_bytes()
    turns = list(OpenCodeIntegration().read_turns(FIXTURE_DB))
    assert FIXTURE_DB.read_bytes() == before  # opened read-only: nothing written, no WAL left behind
    assert not FIXTURE_DB.with_name("opencode.db-wal").exists()
    assert [t.event.prompt for t in turns] == PROMPTS
    for turn in turns:
        event = turn.event
        assert event.target == "opencode" and event.event == EVENT_TURN_END
        assert event.assistant == "Noted, I will remember that. [marker-seen]"
        assert turn.session_id.startswith("ses_") and event.metadata["session_id"] == turn.session_id
        assert event.metadata["opencode_message_id"].startswith("msg_")
        assert event.workspace.endswith("/box/work")
        assert turn.started_at > 1.7e9
        # what the live plugin sends at session.idle: the turn's user and assistant texts
        assert [(m.role, m.text) for m in event.messages] == [("user", event.prompt), ("assistant", event.assistant)]
        assert "paxm-recall" not in json.dumps([m.text for m in event.messages])
    ids = [t.turn_id for t in turns]
    assert ids == [t.turn_id for t in transcripts.read_turns(FIXTURE_DB)] and len(set(ids)) == 2
    kilo_ids = [t.turn_id for t in KiloIntegration().read_turns(FIXTURE_DB)]
    assert not set(kilo_ids) & set(ids)  # the harness is part of the id


def _db(tmp_path: Path) -> sqlite3.Connection:
    """A copy of the real database (OpenCode's own schema) with its sessions removed."""
    path = tmp_path / "opencode.db"
    shutil.copy(FIXTURE_DB, path)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM part")
    conn.execute("DELETE FROM message")
    project = conn.execute("SELECT project_id FROM session LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM session")
    conn.execute("CREATE TEMP TABLE p(id TEXT)")
    conn.execute("INSERT INTO p VALUES (?)", (project,))
    return conn


def _session(conn: sqlite3.Connection, sid: str, created: int, parent: str | None = None) -> None:
    project = conn.execute("SELECT id FROM p").fetchone()[0]
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
        " VALUES (?, ?, ?, 's', '/w', 't', '1', ?, ?)",
        (sid, project, parent, created, created),
    )


def _message(
    conn: sqlite3.Connection, sid: str, mid: str, created: int, info: dict[str, object], *parts: object
) -> None:
    data = {**info, "time": {"created": created}}
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
        (mid, sid, created, created, json.dumps(data)),
    )
    for i, part in enumerate(parts):
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
            (f"prt_{mid}_{i:03d}", mid, sid, created, created, part if isinstance(part, str) else json.dumps(part)),
        )


def test_reasoning_synthetic_subagents_branches_and_corrupt_rows(tmp_path: Path) -> None:
    conn = _db(tmp_path)
    t = 1_767_323_046_000
    _session(conn, "ses_A", t)
    _session(conn, "ses_SUB", t + 5, parent="ses_A")
    user = {"role": "user"}
    _message(
        conn,
        "ses_A",
        "msg_1",
        t,
        user,
        {"type": "text", "text": "Fix the build"},
        {"type": "text", "text": "<paxm-recall>INJECTED</paxm-recall>", "synthetic": True},
        {"type": "text", "text": "IGNORED PART", "ignored": True},
        {"type": "file", "url": "file:///x"},
    )
    _message(
        conn,
        "ses_A",
        "msg_2",
        t + 1,
        {"role": "assistant", "parentID": "msg_1"},
        {"type": "step-start"},
        {"type": "reasoning", "text": "SECRET-THOUGHT"},
        {"type": "tool", "tool": "bash", "state": {"status": "error", "input": {"command": "make"}, "error": "boom"}},
        {"type": "tool", "tool": "read", "state": {"status": "pending", "input": {}}},
        "{torn json",
    )
    _message(
        conn, "ses_A", "msg_3", t + 2, {"role": "assistant", "parentID": "msg_1"}, {"type": "text", "text": "Fixed it."}
    )
    _message(conn, "ses_A", "msg_4", t + 3, user, {"type": "text", "text": "Second prompt"})
    # an answer to the first prompt written after the second (a reverted branch) is not this turn's
    _message(
        conn, "ses_A", "msg_5", t + 4, {"role": "assistant", "parentID": "msg_1"}, {"type": "text", "text": "STALE"}
    )
    _message(
        conn,
        "ses_A",
        "msg_6",
        t + 5,
        {"role": "assistant", "parentID": "msg_4"},
        {"type": "text", "text": "Second answer."},
    )
    _message(conn, "ses_A", "msg_7", t + 6, user, {"type": "text", "text": "Unanswered"})
    _message(conn, "ses_SUB", "msg_8", t + 7, user, {"type": "text", "text": "SUBAGENT PROMPT"})
    _message(conn, "ses_SUB", "msg_9", t + 8, {"role": "assistant", "parentID": "msg_8"}, {"type": "text", "text": "x"})
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data)"
        " VALUES ('msg_bad', 'ses_A', ?, ?, 'nope')",
        (t + 9, t + 9),
    )
    conn.commit()
    conn.close()
    turns = list(transcripts.read_turns(tmp_path / "opencode.db"))
    assert [(x.event.prompt, x.event.assistant) for x in turns] == [
        ("Fix the build", "Fixed it."),
        ("Second prompt", "Second answer."),
    ]
    assert [(m.role, m.text) for m in turns[0].event.messages] == [
        ("user", "Fix the build"),
        ("assistant", "Fixed it."),
    ]
    assert turns[0].started_at == pytest.approx(t / 1000)
    assert turns[0].event.workspace == "/w"
    blob = json.dumps([[m.text for m in x.event.messages] for x in turns])
    for leaked in ("SECRET-THOUGHT", "INJECTED", "IGNORED PART", "STALE", "SUBAGENT", "Unanswered", "boom"):
        assert leaked not in blob


def test_oversized_rows_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = _db(tmp_path)
    _session(conn, "ses_B", 1)
    _message(conn, "ses_B", "msg_1", 1, {"role": "user"}, {"type": "text", "text": "Prompt"})
    _message(
        conn,
        "ses_B",
        "msg_2",
        2,
        {"role": "assistant", "parentID": "msg_1"},
        {"type": "text", "text": "y" * 9000},
        {"type": "text", "text": "Small."},
    )
    conn.commit()
    conn.close()
    monkeypatch.setattr(transcripts, "MAX_RECORD", 4096)
    (turn,) = transcripts.read_turns(tmp_path / "opencode.db")
    assert turn.event.assistant == "Small."


def test_missing_corrupt_and_foreign_databases_give_no_turns(tmp_path: Path) -> None:
    assert list(transcripts.read_turns(tmp_path / "missing.db")) == []
    assert not (tmp_path / "missing.db").exists()  # read-only: never created
    (tmp_path / "junk.db").write_bytes(b"this is not a database" * 100)
    assert list(transcripts.read_turns(tmp_path / "junk.db")) == []
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE t (x)")
    assert list(transcripts.read_turns(tmp_path / "other.db")) == []
    # truncated in the middle (a copy cut short): whatever still reads is fine, nothing raises
    data = FIXTURE_DB.read_bytes()
    (tmp_path / "cut.db").write_bytes(data[: len(data) // 3])
    assert isinstance(list(transcripts.read_turns(tmp_path / "cut.db")), list)


def test_a_database_locked_by_a_running_opencode_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    shutil.copy(FIXTURE_DB, path)
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")  # OpenCode holding the write lock mid-transaction
    writer.execute("UPDATE session SET title = 'x'")
    try:
        assert [t.event.prompt for t in transcripts.read_turns(path)] == PROMPTS
    finally:
        writer.rollback()
        writer.close()


def _legacy(root: Path) -> Path:
    storage = root / "storage"
    session = storage / "session" / "proj1" / "ses_L.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"id": "ses_L", "directory": "/legacy", "time": {"created": 1_700_000_000_000}}))
    messages = [
        ("msg_1", {"role": "user", "time": {"created": 1_700_000_001_000}}, [{"type": "text", "text": "Old prompt"}]),
        (
            "msg_2",
            {"role": "assistant", "time": {"created": 1_700_000_002_000}},
            [
                {"type": "reasoning", "text": "SECRET-THOUGHT"},
                {
                    "type": "tool",
                    "tool": "grep",
                    "state": {"status": "completed", "input": {"q": "x"}, "output": "hit"},
                },
                {"type": "text", "text": "Old answer."},
            ],
        ),
    ]
    for mid, info, parts in messages:
        (storage / "message" / "ses_L").mkdir(parents=True, exist_ok=True)
        (storage / "message" / "ses_L" / f"{mid}.json").write_text(json.dumps({"id": mid, **info}))
        (storage / "part" / mid).mkdir(parents=True, exist_ok=True)
        for i, part in enumerate(parts):
            (storage / "part" / mid / f"prt_{i:03d}.json").write_text(json.dumps(part))
    (storage / "part" / "msg_2" / "prt_999.json").write_text("{torn")
    return session


def test_legacy_storage_tree(tmp_path: Path) -> None:
    session = _legacy(tmp_path)
    (turn,) = transcripts.read_turns(session)
    assert (turn.event.prompt, turn.event.assistant, turn.session_id) == ("Old prompt", "Old answer.", "ses_L")
    assert [(m.role, m.text) for m in turn.event.messages] == [("user", "Old prompt"), ("assistant", "Old answer.")]
    assert turn.event.workspace == "/legacy" and turn.started_at == pytest.approx(1_700_000_001)
    assert "SECRET" not in json.dumps([m.text for m in turn.event.messages])
    assert list(transcripts.read_turns(tmp_path / "storage" / "session" / "proj1" / "missing.json")) == []


def test_paxm_backfill_stores_the_real_sessions_once_and_recalls_them(tmp_path: Path) -> None:
    """``paxm backfill scan|run --agent opencode`` on the real fixture database, into SQLite, then recall."""
    # the default config location: paxm finds it as a user's paxm would
    box = PaxmSandbox(tmp_path, config=tmp_path / "home" / ".config" / "paxm" / "config.yaml")
    home, work = box.home, box.workspace
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    db = data / "opencode.db"
    shutil.copy(FIXTURE_DB, db)
    with sqlite3.connect(db) as conn:  # the sessions ran in the sandbox's workspace
        conn.execute("UPDATE session SET directory = ?", (str(work),))

    box.paxm("setup", "--yes", "--agent", "opencode", "--provider", "sqlite", cwd=work)
    scan = box.paxm_json("backfill", "scan", "--agent", "opencode", cwd=work)
    assert (scan["files"], scan["turns"], scan["sessions"]) == (1, 2, 2)
    first = box.paxm_json("backfill", "run", "--agent", "opencode", "--before", "2099-01-01", cwd=work)
    assert (first["queued"], first["delivered"]) == (2, 2), first
    # OpenCode writes to its database all the time: a changed file is read again, nothing is new
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE session SET time_updated = time_updated + 1")
    again = box.paxm_json("backfill", "run", "--agent", "opencode", "--before", "2099-01-01", cwd=work)
    assert again["queued"] == 0, again
    recalled = box.recall("release branches naming scheme OSPREY")
    assert "OSPREY-42-&lt;version>" in recalled and "Noted, I will remember that." in recalled
