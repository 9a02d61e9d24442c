"""Claude Code's part of the kit: its streamed run (hook timings as Claude waits) and what it shows the model.

``claude -p --output-format stream-json --include-hook-events`` writes ``hook_started`` and
``hook_response`` events as it runs each hook; this runner stamps the lines as they arrive, so
``durationMs`` is how long Claude waited.  ``SessionStart``'s events are written only once the
session is initialised: its real duration comes from Claude's transcript instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_contracttest.fake_models.server import Recorded, messages_text

if TYPE_CHECKING:
    from paxm_contracttest.harness.kit import HarnessBox, Turn

__all__ = [
    "USER_SETTINGS",
    "assert_no_garbage",
    "hook_blocks",
    "hooks_succeeded",
    "model_text",
    "run_claude",
    "seed_settings",
]

#: the user's own ~/.claude/settings.json before paxm is installed (uninstall must give it back)
USER_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 3}]}]},
}


def seed_settings(box: HarnessBox) -> dict[str, Any]:
    """Write :data:`USER_SETTINGS` as the user's ``~/.claude/settings.json``; returns a copy."""
    settings = box.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps(USER_SETTINGS))
    return json.loads(json.dumps(USER_SETTINGS))  # type: ignore[no-any-return]


def hooks_succeeded(run: Turn, *, within_ms: int | None = None) -> None:
    """The turn finished, Claude ran hooks, and every one succeeded (exit 0), each inside
    ``within_ms`` where given."""
    assert run.returncode == 0, (run.stderr[-3000:], run.stdout[-3000:])
    assert run.hooks, "Claude recorded no hook runs"
    for hook in run.hooks:
        assert hook.get("outcome") == "success" and hook.get("exit_code") == 0, hook
        if within_ms is not None:
            assert int(hook.get("durationMs", within_ms)) < within_ms, hook


def run_claude(box: HarnessBox, argv: list[str], env: dict[str, str], timeout: float) -> Turn:
    """One ``claude -p`` turn, its stream read line by line (the kit's runner for Claude Code)."""
    from paxm_contracttest.harness.kit import Turn, stamped_run

    returncode, lines, stderr, wall = stamped_run(box, argv, env, timeout, watch="stdout")
    events: list[tuple[float, dict[str, Any]]] = []
    for arrived, line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append((arrived, event))
    result: dict[str, Any] = next((e for _, e in reversed(events) if e.get("type") == "result"), {})
    turn = Turn(returncode, "".join(line for _, line in lines), stderr, wall, str(result.get("result", "")))
    turn.hooks = _hook_runs(events)
    turn.extra["init"] = next((e for _, e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
    _prefer_transcript_timing(box.home, str(result.get("session_id", "")), turn.hooks)
    return turn


def _hook_runs(events: list[tuple[float, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Pair ``hook_started``/``hook_response`` stream events into hook runs."""
    started: dict[str, float] = {}
    runs: list[dict[str, Any]] = []
    for arrived, event in events:
        if event.get("type") != "system":
            continue
        hook_id = str(event.get("hook_id", ""))
        if event.get("subtype") == "hook_started":
            started[hook_id] = arrived
        elif event.get("subtype") == "hook_response":
            begin = started.pop(hook_id, arrived)
            runs.append(
                {
                    "hookEvent": event.get("hook_event"),
                    "outcome": event.get("outcome"),
                    "exit_code": event.get("exit_code"),
                    "stdout": event.get("stdout", ""),
                    "stderr": event.get("stderr", ""),
                    "durationMs": int((arrived - begin) * 1000),
                    "timing": "stream",
                }
            )
    return runs


def _prefer_transcript_timing(home: Path, session_id: str, hooks: list[dict[str, Any]]) -> None:
    # the transcript has the real ``durationMs`` of every hook that printed context (hooks with
    # empty output are not recorded there)
    recorded: dict[str, list[int]] = {}
    for transcript in (home / ".claude" / "projects").glob(f"*/{session_id}.jsonl") if session_id else ():
        for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            attachment = entry.get("attachment") if isinstance(entry, dict) else None
            if isinstance(attachment, dict) and "durationMs" in attachment:
                recorded.setdefault(str(attachment.get("hookEvent")), []).append(int(attachment["durationMs"]))
    for hook in hooks:
        durations = recorded.get(str(hook["hookEvent"]))
        if durations:
            hook["durationMs"] = durations.pop(0)
            hook["timing"] = "transcript"
        elif hook["hookEvent"] == "SessionStart":
            hook["timing"] = "unknown"


def model_text(request: Recorded) -> str:
    """All text the model was shown in ``messages`` (hook context arrives there)."""
    return messages_text(request.body.get("messages"))


def hook_blocks(text: str) -> list[str]:
    """The ``<system-reminder>`` blocks in which Claude passed hook output to the model."""
    blocks = text.split("<system-reminder>")
    return [b.split("</system-reminder>")[0] for b in blocks[1:] if " hook success:" in b or " hook additional" in b]


def assert_no_garbage(text: str) -> None:
    """No tracebacks, client errors, daemon frames or half envelopes reached the model."""
    for bad in ("Traceback", "paxm hook:", "PAXM-HOOK"):
        assert bad not in text, f"{bad!r} reached the model:\n{text[:3000]}"
    for block in hook_blocks(text):
        for bad in ("Error", "Exception", "timed out", '"ok"'):
            assert bad not in block, f"{bad!r} in hook output given to the model:\n{block[:3000]}"
        assert block.count("<paxm-recall") == block.count("</paxm-recall>"), block[:3000]
        assert block.count("<paxm-session-identity") == block.count("</paxm-session-identity>"), block[:3000]
