"""The Claude Code transcript reader: real transcripts written by the pinned binary, and edge cases.

``fixtures/claude-transcripts`` comes from ``make_transcript_fixtures.py`` (the real Claude
Code 2.1.197 with paxm's hooks installed, offline): the second session's transcript carries
paxm's recall envelope in a hook attachment, which must never become part of a turn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_core.integration import EVENT_TURN_END, SupportsTranscripts
from paxm_integration_claude_code import transcripts
from paxm_integration_claude_code.integration import ClaudeCodeIntegration

FIXTURES = Path(__file__).with_name("fixtures") / "claude-transcripts"


def test_integration_supports_transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    integration = ClaudeCodeIntegration()
    assert isinstance(integration, SupportsTranscripts)
    project = tmp_path / "projects" / "-work"
    project.mkdir(parents=True)
    for path in FIXTURES.glob("*.jsonl"):
        (project / path.name).write_bytes(path.read_bytes())
    (project / "sub").mkdir()
    (project / "sub" / "agent.jsonl").write_text("{}\n")  # subagent transcripts are not sessions
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    monkeypatch.delenv("PAXM_CLAUDE_PROJECTS", raising=False)
    files = integration.transcript_files()
    assert sorted(p.name for p in files) == sorted(p.name for p in FIXTURES.glob("*.jsonl"))
    monkeypatch.setenv("PAXM_CLAUDE_PROJECTS", str(tmp_path / "nowhere"))
    assert integration.transcript_files() == []


def test_real_transcripts_give_prompt_and_final_answer_without_recalled_context() -> None:
    turns = [t for path in sorted(FIXTURES.glob("*.jsonl")) for t in transcripts.read_turns(path)]
    prompts = sorted(t.event.prompt for t in turns)
    assert prompts == [
        "Decision: release branches are named OSPREY-42-<version> from now on.",
        "What naming scheme did we decide on for release branches?",
    ]
    raw = "".join(p.read_text() for p in FIXTURES.glob("*.jsonl"))
    assert "paxm-recall" in raw  # the fixture really carries the live hook's recall envelope
    for turn in turns:
        event = turn.event
        assert event.target == "claude" and event.event == EVENT_TURN_END
        assert event.assistant == "Noted, I will remember that. [marker-seen]"
        assert event.metadata["session_id"] == turn.session_id
        assert Path(event.metadata["transcript_path"]).stem == turn.session_id
        assert event.workspace.endswith("/box/work")
        assert turn.started_at > 1.7e9
        assert turn.turn_id.startswith("backfill-")
        assert "paxm-recall" not in event.prompt + event.assistant + json.dumps(event.metadata)


def test_turn_ids_are_stable_and_distinct() -> None:
    path = next(iter(sorted(FIXTURES.glob("*.jsonl"))))
    first = [t.turn_id for t in transcripts.read_turns(path)]
    assert first == [t.turn_id for t in transcripts.read_turns(path)]
    ids = [t.turn_id for p in FIXTURES.glob("*.jsonl") for t in transcripts.read_turns(p)]
    assert len(set(ids)) == len(ids)


def _write(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def test_reasoning_tools_wrappers_meta_sidechains_and_corrupt_lines_are_left_out(tmp_path: Path) -> None:
    s = {"sessionId": "S1", "cwd": "/w"}
    records: list[object] = [
        {
            **s,
            "type": "user",
            "uuid": "u0",
            "timestamp": "2026-01-02T03:04:05.000Z",
            "message": {"role": "user", "content": "<command-name>/clear</command-name>"},
        },
        {
            **s,
            "type": "user",
            "uuid": "u1",
            "timestamp": "2026-01-02T03:04:06.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "Fix the build <system-reminder>ctx</system-reminder>"}],
            },
        },
        '{"type": "assistant", "message": {torn',
        {**s, "type": "user", "isMeta": True, "message": {"role": "user", "content": "meta prompt"}},
        {
            **s,
            "type": "assistant",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "SECRET-THOUGHT"},
                    {"type": "redacted_thinking", "data": "zz"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}},
                ],
            },
        },
        {
            **s,
            "type": "user",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        },
        {
            **s,
            "type": "assistant",
            "isSidechain": True,
            "message": {"id": "mx", "role": "assistant", "content": [{"type": "text", "text": "SIDECHAIN"}]},
        },
        {
            **s,
            "type": "assistant",
            "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Part one."}]},
        },
        {
            **s,
            "type": "assistant",
            "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Part two."}]},
        },
        {**s, "type": "attachment", "attachment": {"type": "hook_success", "content": "<paxm-recall>X</paxm-recall>"}},
        # a second turn that never got an answer (session killed) is dropped
        {**s, "type": "user", "uuid": "u2", "message": {"role": "user", "content": "Unanswered"}},
    ]
    turns = list(transcripts.read_turns(_write(tmp_path / "S1.jsonl", records)))
    assert len(turns) == 1
    event = turns[0].event
    assert event.prompt == "Fix the build"
    assert event.assistant == "Part one.\nPart two."
    assert event.workspace == "/w" and turns[0].session_id == "S1"
    assert turns[0].started_at == pytest.approx(1767323046.0)
    text = event.prompt + event.assistant
    for leaked in ("SECRET-THOUGHT", "SIDECHAIN", "paxm-recall", "meta prompt", "/clear"):
        assert leaked not in text


def test_unreadable_or_empty_files_give_no_turns(tmp_path: Path) -> None:
    assert list(transcripts.read_turns(tmp_path / "missing.jsonl")) == []
    assert list(transcripts.read_turns(_write(tmp_path / "e.jsonl", ["", "not json", "[1, 2]"]))) == []


def _assistant(message_id: str, text: str) -> dict[str, object]:
    return {
        "sessionId": "S2",
        "type": "assistant",
        "message": {"id": message_id, "role": "assistant", "content": [{"type": "text", "text": text}]},
    }


def test_every_assistant_message_of_a_turn_is_kept_in_order(tmp_path: Path) -> None:
    prompt = {"sessionId": "S2", "type": "user", "uuid": "u1", "message": {"role": "user", "content": "Pick a rule"}}
    tool = {"sessionId": "S2", "type": "user", "message": {"role": "user", "content": [{"type": "tool_result"}]}}
    records: list[object] = [
        prompt,
        _assistant("m1", "Decided: keys are lowercased."),
        tool,
        _assistant("m2", "Also: the newest record wins."),
        _assistant("m2", "(same message, second block)"),
        tool,
        _assistant("m3", "Done."),
    ]
    (turn,) = transcripts.read_turns(_write(tmp_path / "S2.jsonl", records))
    assert turn.event.assistant == (
        "Decided: keys are lowercased.\n\nAlso: the newest record wins.\n(same message, second block)\n\nDone."
    )


def test_a_long_turn_keeps_its_last_message_whole_and_the_latest_earlier_ones_that_fit(tmp_path: Path) -> None:
    prompt = {"sessionId": "S3", "type": "user", "uuid": "u1", "message": {"role": "user", "content": "Go"}}
    chunk = transcripts.MAX_ANSWER // 3
    earlier = [_assistant(f"m{i}", f"<{i}>" + "x" * chunk) for i in range(5)]
    last = _assistant("last", "FINAL " + "y" * (2 * transcripts.MAX_ANSWER))
    (turn,) = transcripts.read_turns(_write(tmp_path / "S3.jsonl", [prompt, *earlier, last]))
    answer = turn.event.assistant
    assert answer.endswith("FINAL " + "y" * (2 * transcripts.MAX_ANSWER))
    assert "<4>" in answer and "<3>" in answer and "<0>" not in answer
    assert len(answer) - len("FINAL ") - 2 * transcripts.MAX_ANSWER <= transcripts.MAX_ANSWER + 2
