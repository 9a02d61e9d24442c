"""The Pi session reader: real session files written by the pinned binaries, and edge cases.

``fixtures/pi-sessions-1.6.0`` and ``fixtures/pi-sessions-0.73.1`` come from
``make_transcript_fixtures.py`` (``@earendil-works/pi-coding-agent`` 1.6.0 on Node 24 and
``@mariozechner/pi-coding-agent`` 0.73.1, each run as ``pi --offline --provider fake --model
fake-model -p <prompt>`` with paxm's extension installed, against the fake Chat Completions
server): two sessions, the first runs ``bash`` (``echo TOOL_RAN_OK``); each session file carries
paxm's context as a ``paxm-memory-recall`` custom message, the second one with the recall
envelope, which must never become part of a turn.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from paxm_contracttest.sandbox import PaxmSandbox
from paxm_core.integration import EVENT_TURN_END, SupportsTranscripts
from paxm_integration_pi import transcripts
from paxm_integration_pi.integration import PiIntegration

FIXTURES = Path(__file__).with_name("fixtures")
VERSIONS = ("pi-sessions-1.6.0", "pi-sessions-0.73.1")
PAXM = str(Path(sys.executable).parent / "paxm")


def _files(version: str) -> list[Path]:
    return sorted((FIXTURES / version).glob("*.jsonl"))


def test_integration_supports_transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = PiIntegration()
    assert isinstance(integration, SupportsTranscripts)
    sessions = tmp_path / "agent" / "sessions" / "--work--"
    sessions.mkdir(parents=True)
    for path in _files(VERSIONS[0]):
        (sessions / path.name).write_bytes(path.read_bytes())
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert [p.name for p in integration.transcript_files()] == [p.name for p in _files(VERSIONS[0])]
    monkeypatch.setenv("PAXM_PI_SESSIONS", str(tmp_path / "nowhere"))
    assert integration.transcript_files() == []
    monkeypatch.delenv("PAXM_PI_SESSIONS")
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert transcripts.sessions_dir() == Path.home() / ".pi" / "agent" / "sessions"


@pytest.mark.parametrize("version", VERSIONS)
def test_real_sessions_give_prompt_tools_and_answer_without_recalled_context(version: str) -> None:
    files = _files(version)
    raw = "".join(p.read_text() for p in files)
    assert "paxm-recall" in raw and "paxm-memory-recall" in raw  # the live recall really is in there
    turns = [t for path in files for t in transcripts.read_turns(path)]
    assert [t.event.prompt for t in turns] == [
        "RUN_TOOL: Decision: release branches are named OSPREY-42-<version> from now on.",
        "What naming scheme did we decide on for release branches?",
    ]
    for path, turn in zip(files, turns, strict=True):
        event = turn.event
        assert event.target == "pi" and event.event == EVENT_TURN_END and event.native_event == "agent_end"
        assert event.assistant == "Noted, I will remember that. [marker-seen]"
        assert path.stem.endswith(turn.session_id)  # <time>_<session id>.jsonl
        assert event.metadata["session_id"] == turn.session_id
        assert event.metadata["transcript_path"] == str(path)
        assert event.workspace.endswith("/box/work")
        assert turn.started_at > 1.7e9 and event.captured_at == turn.started_at
        roles = [m.role for m in event.messages]
        assert roles == ["user", "tool_call", "tool_result", "assistant"]
        assert event.messages[1].text.startswith('bash {"command":"echo TOOL_RAN_OK"')  # as the live extension
        assert event.messages[2].text == "TOOL_RAN_OK"
        blob = json.dumps([event.prompt, event.assistant, [m.text for m in event.messages], event.metadata])
        assert "paxm-recall" not in blob and "paxm-session-identity" not in blob


def test_turn_ids_are_stable_and_distinct() -> None:
    files = [p for v in VERSIONS for p in _files(v)]
    first = [t.turn_id for p in files for t in transcripts.read_turns(p)]
    assert first == [t.turn_id for p in files for t in transcripts.read_turns(p)]
    assert len(set(first)) == len(first) == 4
    assert all(t.startswith("backfill-") for t in first)


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def _msg(entry_id: str, message: dict[str, object], stamp: str = "2026-01-02T03:04:05.000Z") -> dict[str, object]:
    return {"type": "message", "id": entry_id, "parentId": None, "timestamp": stamp, "message": message}


def test_thinking_custom_messages_branches_and_corrupt_lines_are_handled(tmp_path: Path) -> None:
    records: list[object] = [
        {"type": "session", "version": 3, "id": "S1", "timestamp": "2026-01-02T03:04:00.000Z", "cwd": "/w"},
        _msg("sys", {"role": "system", "content": "SYSTEM PROMPT"}),
        _msg("u1", {"role": "user", "content": [{"type": "text", "text": "Fix the build"}]}, "2026-01-02T03:04:06Z"),
        {"type": "custom_message", "customType": "paxm-memory-recall", "content": "<paxm-recall>OLD</paxm-recall>"},
        '{"type": "message", "message": {torn',
        "[1, 2]",
        _msg(
            "a1",
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "SECRET-THOUGHT"},
                    {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "make"}},
                ],
            },
        ),
        _msg(
            "r1",
            {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "boom"}], "isError": True},
        ),
        _msg("a2", {"role": "assistant", "content": [{"type": "text", "text": "Fixed it."}]}),
        {"type": "compaction", "id": "k1", "summary": "COMPACTED SUMMARY"},
        # the user went back and branched: a second prompt from an earlier point, answered
        _msg("u2", {"role": "user", "content": "Try again differently"}, "2026-01-02T03:05:00Z"),
        _msg("a3", {"role": "assistant", "content": [{"type": "text", "text": "Done differently."}]}),
        # a prompt the session was killed on is dropped
        _msg("u3", {"role": "user", "content": "Unanswered"}),
    ]
    turns = list(transcripts.read_turns(_write(tmp_path / "2026_S1.jsonl", records)))
    assert [(t.event.prompt, t.event.assistant) for t in turns] == [
        ("Fix the build", "Fixed it."),
        ("Try again differently", "Done differently."),
    ]
    first = turns[0].event
    assert [(m.role, m.text) for m in first.messages] == [
        ("user", "Fix the build"),
        ("tool_call", 'bash {"command":"make"}'),
        ("tool_result", "Error: boom"),
        ("assistant", "Fixed it."),
    ]
    assert turns[0].session_id == "S1" and first.workspace == "/w"
    assert turns[0].started_at == pytest.approx(1767323046.0)
    blob = json.dumps([[m.text for m in t.event.messages] for t in turns])
    for leaked in ("SECRET-THOUGHT", "paxm-recall", "SYSTEM PROMPT", "COMPACTED", "Unanswered"):
        assert leaked not in blob


def test_oversized_lines_are_skipped_and_long_turns_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE", 4096)
    big = "x" * 10_000
    records: list[object] = [
        _msg("u1", {"role": "user", "content": "Prompt one"}),
        *[
            _msg(f"t{i}", {"role": "toolResult", "content": [{"type": "text", "text": f"result {i}"}]})
            for i in range(50)
        ],
        _msg("a1", {"role": "assistant", "content": [{"type": "text", "text": "Short answer."}]}),
        _msg("a2", {"role": "assistant", "content": [{"type": "text", "text": big}]}),  # too long a line
        _msg("r2", {"role": "toolResult", "content": [{"type": "text", "text": "after the long line"}]}),
    ]
    path = _write(tmp_path / "x_S2.jsonl", records)
    (turn,) = transcripts.read_turns(path)
    assert turn.session_id == "S2"  # from the file name when there is no header
    assert turn.event.assistant == "Short answer."
    assert len(turn.event.messages) == transcripts.MAX_MESSAGES
    assert [m.text for m in turn.event.messages[-2:]] == ["Short answer.", "after the long line"]
    assert turn.event.messages[0].text == "result 32"  # the oldest went first (50 + 3 messages, 20 kept)
    assert big not in json.dumps([m.text for m in turn.event.messages])


def test_unreadable_or_empty_files_give_no_turns(tmp_path: Path) -> None:
    assert list(transcripts.read_turns(tmp_path / "missing.jsonl")) == []
    assert list(transcripts.read_turns(_write(tmp_path / "e.jsonl", ["", "not json", "null"]))) == []
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage\n" * 10)
    assert list(transcripts.read_turns(tmp_path / "bin.jsonl")) == []


def test_paxm_backfill_stores_the_real_sessions_once_and_recalls_them(tmp_path: Path) -> None:
    """``paxm backfill scan|run --agent pi`` on the real fixture sessions, into SQLite, then recall."""
    # the default config location: paxm finds it as a user's paxm would
    box = PaxmSandbox(tmp_path, config=tmp_path / "home" / ".config" / "paxm" / "config.yaml")
    home, work = box.home, box.workspace
    sessions = home / ".pi" / "agent" / "sessions" / "--work--"
    sessions.mkdir(parents=True)
    for path in _files(VERSIONS[0]):
        recorded = json.loads(path.read_text().splitlines()[0])["cwd"]
        (sessions / path.name).write_text(path.read_text().replace(recorded, str(work)))

    # the privacy rules hold for past sessions too: a secret is redacted, an ignored project is not stored
    token = "ghp_" + "A1b2C3d4" * 5
    secret = [
        {"type": "session", "version": 3, "id": "SECRET-S", "cwd": str(work)},
        _msg("u1", {"role": "user", "content": f"Deploy with token {token} please"}),
        _msg("a1", {"role": "assistant", "content": [{"type": "text", "text": "Deployed with the token."}]}),
    ]
    _write(sessions / "2026-01-01T00-00-00-000Z_SECRET-S.jsonl", secret)
    private = tmp_path / "private-project"
    private.mkdir()
    (private / ".paxm-ignore").write_text("")
    hidden = [
        {"type": "session", "version": 3, "id": "HIDDEN-S", "cwd": str(private)},
        _msg("u1", {"role": "user", "content": "HIDDEN-PROJECT decision"}),
        _msg("a1", {"role": "assistant", "content": [{"type": "text", "text": "HIDDEN-PROJECT noted."}]}),
    ]
    _write(sessions / "2026-01-01T00-00-01-000Z_HIDDEN-S.jsonl", hidden)

    box.paxm("setup", "--yes", "--agent", "pi", "--provider", "sqlite", cwd=work)
    scan = box.paxm_json("backfill", "scan", "--agent", "pi", cwd=work)
    assert (scan["files"], scan["turns"], scan["sessions"]) == (4, 4, 4)
    first = box.paxm_json("backfill", "run", "--agent", "pi", "--before", "2099-01-01", cwd=work)
    assert (first["queued"], first["delivered"]) == (3, 3), first
    with sqlite3.connect(home / ".local" / "share" / "paxm" / "memory.sqlite") as conn:
        stored = "\n".join(row[0] for row in conn.execute("SELECT text FROM memories"))
    assert "Deploy with token" in stored and token not in stored
    assert "HIDDEN-PROJECT" not in stored
    again = box.paxm_json("backfill", "run", "--agent", "pi", "--before", "2099-01-01", cwd=work)
    assert again["queued"] == 0, again
    recalled = box.recall("release branches naming scheme OSPREY")
    assert "OSPREY-42-&lt;version>" in recalled  # recalled text is data: tag-like text is escaped
    assert "TOOL_RAN_OK" in recalled  # the tool call and its result are part of the stored turn
    assert "paxm-session-identity" not in recalled
