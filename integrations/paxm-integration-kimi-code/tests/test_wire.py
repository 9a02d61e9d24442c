"""Reading Kimi Code's wire.jsonl: the last finished turn, bounded, tolerant of damage."""

from __future__ import annotations

import json
from pathlib import Path

from paxm_integration_kimi_code.wire import find_wire, last_turn, read_tail

FIXTURE = Path(__file__).parent / "fixtures" / "kimi-code-2.1.0" / "wire.jsonl"


def test_the_captured_wire_gives_the_prompt_and_the_final_reply() -> None:
    turn = last_turn(read_tail(FIXTURE))
    assert turn.prompt == "RUN_TOOL: please note the decision"
    assert turn.assistant == "Noted, I will remember that. [marker-seen]"
    assert turn.replies == [turn.assistant]  # the tool-call step has no visible text


def _prompt(text: str, turn: int) -> str:
    entry = {
        "type": "turn.prompt",
        "agentId": "main",
        "input": [{"type": "text", "text": text}],
        "origin": {"kind": "user"},
        "turnId": turn,
    }
    return json.dumps(entry)


def _reply(parts: list[dict[str, str]]) -> str:
    message = {"role": "assistant", "content": parts, "toolCalls": []}
    return json.dumps({"type": "agent.message.appended", "message": {"message": message, "meta": {"source": "llm"}}})


def _ended(turn: int) -> str:
    return json.dumps({"type": "turn.ended", "agentId": "main", "turnId": turn, "reason": "completed"})


def test_reasoning_is_never_part_of_the_turn_and_a_running_turn_is_not_captured(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    lines = [
        _prompt("first question", 0),
        _reply([{"type": "think", "think": "SECRET-REASONING"}, {"type": "text", "text": "First answer."}]),
        _ended(0),
        _prompt("second question", 1),
        _reply([{"type": "text", "text": "half-writ"}]),
    ]
    wire.write_text("\n".join(lines) + '\n{"type": "agent.message.app')  # Kimi still writing
    turn = last_turn(read_tail(wire))
    assert (turn.prompt, turn.assistant) == ("first question", "First answer.")
    assert "SECRET-REASONING" not in json.dumps(turn.replies)


def test_the_turn_counts_as_ended_at_agent_turn_ended_which_kimi_writes_before_stop(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    ended = json.dumps({"turnId": 0, "outcome": "done", "type": "agent.turn.ended", "kind": "event"})
    wire.write_text("\n".join([_prompt("q", 0), _reply([{"type": "text", "text": "A."}]), ended]) + "\n")
    assert last_turn(read_tail(wire)).assistant == "A."


def test_only_the_tail_is_read(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    filler = json.dumps({"type": "llm.tools_snapshot", "tools": ["x" * 1000]})
    wire.write_text(
        "\n".join([_prompt("old", 0), *[filler] * 50, _reply([{"type": "text", "text": "Late."}]), _ended(0)]) + "\n"
    )
    entries = read_tail(wire, limit=4096)
    assert all(e.get("type") != "turn.prompt" for e in entries)  # cut off, and no partial line parsed
    turn = last_turn(entries)
    assert (turn.prompt, turn.assistant) == ("", "Late.")


def test_find_wire_refuses_odd_session_ids(tmp_path: Path) -> None:
    main = tmp_path / "sessions" / "wd_x" / "session_1" / "agents" / "main"
    main.mkdir(parents=True)
    (main / "wire.jsonl").write_text("")
    assert find_wire(tmp_path, "session_1") == main / "wire.jsonl"
    for bad in ("../session_1", "*", "", "session_1/../../x", ".."):
        assert find_wire(tmp_path, bad) is None
    assert find_wire(tmp_path / "missing", "session_1") is None
    assert last_turn(read_tail(tmp_path / "nope.jsonl")).assistant == ""


def test_a_stop_read_while_kimi_still_writes_the_turn_waits_for_its_end(tmp_path: Path) -> None:
    """Kimi's wire writer is asynchronous: at ``Stop`` the turn's reply may not be on disk yet.
    The reader must wait for it rather than take the previous turn again."""
    import threading

    from paxm_integration_kimi_code.wire import wait_for_turn

    wire = tmp_path / "wire.jsonl"
    done = [_prompt("first question", 0), _reply([{"type": "text", "text": "First answer."}]), _ended(0)]
    wire.write_text("\n".join([*done, _prompt("second question", 1)]) + "\n")

    def finish() -> None:
        with wire.open("a") as handle:
            handle.write(_reply([{"type": "text", "text": "Second answer."}]) + "\n" + _ended(1) + "\n")

    timer = threading.Timer(0.3, finish)
    timer.start()
    try:
        turn = wait_for_turn(wire, timeout=30)
    finally:
        timer.join()
    assert (turn.prompt, turn.assistant) == ("second question", "Second answer.")


def test_a_turn_that_never_ends_on_disk_gives_the_last_ended_one_after_the_wait(tmp_path: Path) -> None:
    from paxm_integration_kimi_code.wire import wait_for_turn

    wire = tmp_path / "wire.jsonl"
    lines = [_prompt("first question", 0), _reply([{"type": "text", "text": "First answer."}]), _ended(0)]
    wire.write_text("\n".join([*lines, _prompt("second question", 1)]) + "\n")
    turn = wait_for_turn(wire, timeout=0.2, poll=0.01)
    assert (turn.prompt, turn.assistant) == ("first question", "First answer.")
    wire.write_text("\n".join(lines) + "\n")  # nothing running: no wait at all
    assert wait_for_turn(wire, timeout=3600).assistant == "First answer."
    assert wait_for_turn(tmp_path / "missing.jsonl", timeout=3600).assistant == ""
