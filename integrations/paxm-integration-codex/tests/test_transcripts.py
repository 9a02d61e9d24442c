"""Reading Codex rollouts back as finished turns (backfill)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from paxm_core.integration import SupportsTranscripts
from paxm_integration_codex import CodexIntegration
from paxm_integration_codex.transcripts import sessions_dir

FIXTURES = Path(__file__).parent / "fixtures"

CODEX = CodexIntegration()


def test_turns_of_a_session() -> None:
    assert isinstance(CODEX, SupportsTranscripts)
    turns = list(CODEX.read_turns(FIXTURES / "codex_session.jsonl"))
    assert [t.event.prompt for t in turns] == ["Use brisk-queue for ingest.", "Older Codex: what port?"]
    first, second = turns
    assert first.session_id == "sess-1" and first.event.workspace == "/work/app"
    assert first.event.metadata["turn_id"] == "t1"
    assert [(m.role, m.text) for m in first.event.messages] == [
        ("user", "Use brisk-queue for ingest."),
        ("tool_call", 'exec_command {"cmd":"grep -r queue ."}'),
        ("tool_result", "ingest.py: import queue"),
        ("assistant", "Switched ingest to brisk-queue."),
    ]
    everything = " ".join(m.text for t in turns for m in t.event.messages)
    assert (
        "HIDDEN-THOUGHT" not in everything
        and "OLD MEMORY" not in everything
        and "environment_context" not in everything
    )
    assert second.event.assistant == "Port 8443."  # the commentary message is not the answer
    assert first.started_at == pytest.approx(1793613601.0)
    # stable ids: same input, same id
    again = list(CODEX.read_turns(FIXTURES / "codex_session.jsonl"))
    assert [t.turn_id for t in again] == [t.turn_id for t in turns] and turns[0].turn_id != turns[1].turn_id


def test_transcript_files_and_missing_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    assert sessions_dir() == tmp_path / "codex" / "sessions"
    assert CODEX.transcript_files() == []
    day = tmp_path / "codex" / "sessions" / "2026" / "11" / "02"
    day.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex_session.jsonl", day / "rollout-b.jsonl")
    shutil.copy(FIXTURES / "codex_session.jsonl", day / "rollout-a.jsonl")
    assert [p.name for p in CODEX.transcript_files()] == ["rollout-a.jsonl", "rollout-b.jsonl"]
    monkeypatch.setenv("PAXM_CODEX_SESSIONS", str(day))
    assert sessions_dir() == day
    assert list(CODEX.read_turns(tmp_path / "absent.jsonl")) == []
