"""``paxm backfill`` end to end: the real CLI, the real SQLite provider, synthetic and real transcripts."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

FIXTURES = (
    Path(__file__).resolve().parents[2]
    / "integrations"
    / "paxm-integration-claude-code"
    / "tests"
    / "fixtures"
    / "claude-transcripts"
)
OLD_ENOUGH = "2099-01-01"  # --before: the synthetic turns are in 2026


def _run(home: Any, *extra: str) -> dict[str, Any]:
    done = home.paxm("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, *extra)
    assert "ETA" not in done.stderr  # no progress bar off a terminal or with --json
    return dict(json.loads(done.stdout))


def _turn_ids(home: Any) -> Counter[str]:
    return Counter(json.loads(meta).get("backfill_turn_id", "") for _, meta in home.memories())


def test_scan_reports_files_bytes_and_turns(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 4, 5)
    done = home.paxm("backfill", "scan", "--agent", "claude", "--json")
    report = json.loads(done.stdout)
    files = list(home.projects.glob("*/*.jsonl"))
    assert report["turns"] == total == 20 and report["sessions"] == 4 and report["files"] == 4
    assert report["bytes"] == sum(p.stat().st_size for p in files)
    after = json.loads(home.paxm("backfill", "scan", "--agent", "claude", "--json", "--after", "2026-09-03").stdout)
    assert 0 < after["turns"] < total  # sessions are spread over days
    assert home.memories() == []  # scanning writes nothing
    text = home.paxm("backfill", "scan", "--agent", "claude").stdout
    assert "20 turns in 4 sessions, 4 files" in text


def test_run_stores_each_turn_once_as_the_live_episode_and_a_rerun_stores_nothing(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 12, 25)
    report = _run(home)
    assert report["state"] == "done", report
    assert report["queued"] == report["delivered"] == total
    memories = home.memories()
    assert len(memories) == total
    assert set(_turn_ids(home).values()) == {1}
    text, meta_json = next(m for m in memories if "HERON-3-7 " in m[0] or "HERON-3-7." in m[0])
    meta = json.loads(meta_json)
    # the live hook's episode: user_input + turn_end events, default templates, its metadata;
    # the answer is all of the turn's assistant text (what it said before its tool call too)
    assert text == (
        "Claude Code user input:\n"
        + synth.prompt_text(3, 7)
        + "\n\nClaude Code assistant response:\nLet me look.\n\n"
        + synth.answer_text(3, 7)
    )
    assert meta["paxm_episode_events"] == "2" and meta["paxm_episode_complete"] == "true"
    assert meta["hook_target"] == "claude" and meta["workspace"] == "/work/project"
    assert meta["started_at"].startswith("2026-09-")
    everything = "\n".join(t + m for t, m in memories)
    for leaked in (synth.THINKING, "RECALLED-SECRET-NEVER-STORE", "paxm-recall", "/status"):
        assert leaked not in everything

    again = _run(home)
    assert again["queued"] == again["delivered"] == 0 and again["state"] == "done"
    assert len(home.memories()) == total

    # a session that grew since: only its new turn is stored
    path = sorted(home.projects.glob("*/*.jsonl"))[0]
    sid = path.stem
    with path.open("a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "user",
                    "sessionId": sid,
                    "uuid": "new-1",
                    "timestamp": "2026-11-01T00:00:00Z",
                    "message": {"role": "user", "content": "Late decision: KITE."},
                }
            )
            + "\n"
        )
        handle.write(
            json.dumps(
                {
                    "type": "assistant",
                    "sessionId": sid,
                    "timestamp": "2026-11-01T00:00:01Z",
                    "message": {
                        "id": "late",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "KITE noted."}],
                    },
                }
            )
            + "\n"
        )
    grown = _run(home)
    assert grown["queued"] == 1 and grown["skipped_done"] == 25
    assert len(home.memories()) == total + 1

    status = json.loads(home.paxm("backfill", "status", "--json").stdout)
    assert status["turns"]["claude"]["queued"] == total + 1
    assert status["queue"]["owed"] == 0
    assert [r["state"] for r in status["runs"]][:3] == ["done", "done", "done"]
    assert "claude: queued" in home.paxm("backfill", "status").stdout


def test_real_transcripts_become_recallable_in_their_workspace(home: Any) -> None:
    project = home.projects / "-box-work"
    project.mkdir(parents=True)
    workspace = home.root / "work"
    workspace.mkdir()
    for path in FIXTURES.glob("*.jsonl"):
        recorded = json.loads(next(line for line in path.read_text().splitlines() if '"cwd"' in line))["cwd"]
        (project / path.name).write_text(path.read_text().replace(recorded, str(workspace)))
    report = _run(home)
    assert report["delivered"] == 2
    texts = [t for t, _ in home.memories()]
    assert any("OSPREY-42-<version>" in t for t in texts)
    assert not any("paxm-recall" in t or "paxm-session-identity" in t for t in texts)
    recalled = home.paxm("recall", "-q", "release branches naming scheme OSPREY", cwd=workspace).stdout
    # recalled text is data: the envelope escapes the tag-like ``<version>`` (paxm_core/envelope.py)
    assert "OSPREY-42-&lt;version>" in recalled


@pytest.mark.slow
def test_kill_9_at_any_point_resumes_with_nothing_lost_or_duplicated(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 60, 50)
    args = ("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, "--batch", "40")
    # midway: kills that landed with part of the turns stored; the first while it starts up
    kills, midway = home.kill_runs(args, total, random.Random(21), first_delay=0.3)
    assert kills >= 2 and midway >= 1, "the runs finished before they could be killed midway: use more turns"
    status = json.loads(home.paxm("backfill", "status", "--json").stdout)
    assert "interrupted" in [r["state"] for r in status["runs"]]
    final = _run(home)
    assert final["state"] == "done", final
    ids = _turn_ids(home)
    assert len(home.memories()) == total == len(ids)
    assert set(ids.values()) == {1}, "a turn was stored twice"
    assert _run(home)["queued"] == 0


def test_turns_captured_live_are_not_stored_again(home: Any, synth: Any) -> None:
    from paxm_core.capture import CaptureQueue, default_queue_path, routes_from_write_profiles
    from paxm_core.passive.processor import HookProcessor
    from paxm_core.runtime import Runtime

    synth.write_sessions(home.projects, 2, 3)
    sid = str(__import__("uuid").UUID(int=1 + 1))  # session 1
    old = dict(os.environ)
    os.environ.update(home.env())
    try:
        runtime = Runtime.load(str(home.config), telemetry=None)
        queue = CaptureQueue(
            default_queue_path(runtime.config), routes=routes_from_write_profiles(runtime.config.write_profiles)
        )
        processor = HookProcessor(runtime, queue)
        base = {"session_id": sid, "cwd": "/work/project", "transcript_path": "/x.jsonl"}
        for event, payload in (
            ("user_input", {**base, "hook_event_name": "UserPromptSubmit", "prompt": synth.prompt_text(1, 1)}),
            ("turn_end", {**base, "hook_event_name": "Stop", "last_assistant_message": synth.answer_text(1, 1)}),
        ):
            answer = processor.handle_hook({"target": "claude", "event": event, "raw": json.dumps(payload)})
            assert answer["ok"], answer
        processor.close()
        queue.close()
        runtime.close()
    finally:
        os.environ.clear()
        os.environ.update(old)
    home.paxm("queue", "flush")
    live = [t for t, _ in home.memories() if synth.prompt_text(1, 1) in t]
    assert len(live) == 1
    report = _run(home)
    assert report["skipped_live"] == 1 and report["queued"] == 5
    assert len([t for t, _ in home.memories() if synth.prompt_text(1, 1) in t]) == 1
    assert len(home.memories()) == 6


def test_files_are_private_and_max_duration_pauses(home: Any, synth: Any) -> None:
    synth.write_sessions(home.projects, 30, 40)
    paused = _run(home, "--max-duration", "1ms", "--batch", "20")
    assert paused["state"] == "paused"
    assert paused["queued"] < 1200
    for path in home.backfill_dir.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(home.backfill_dir.stat().st_mode) == 0o700
    rest = _run(home)
    assert paused["queued"] + rest["queued"] == 1200 and len(home.memories()) == 1200


def test_agents_without_a_reader_and_bad_options_fail_clearly(home: Any) -> None:
    missing = home.paxm("backfill", "scan", "--agent", "no-such-agent", check=False)
    assert missing.returncode == 1 and "no integration installed for 'no-such-agent'" in missing.stderr
    assert "claude" in missing.stderr  # the installed integrations are listed
    # Gemini CLI's integration is installed in this workspace but reads no past sessions
    readerless = home.paxm("backfill", "scan", "--agent", "gemini-cli", check=False)
    assert readerless.returncode == 1 and "no transcript reader installed for gemini-cli" in readerless.stderr
    bad = home.paxm("backfill", "run", "--agent", "claude", "--rate", "fast", check=False)
    assert bad.returncode == 1 and "invalid rate 'fast'" in bad.stderr
    unknown = home.paxm("backfill", "run", "--agent", "claude", "--provider", "nope", check=False)
    assert unknown.returncode == 1 and "provider 'nope' is not enabled" in unknown.stderr
    assert "no backfill has run yet" in home.paxm("backfill", "status").stdout


def test_the_queue_file_is_the_same_capture_queue(home: Any, synth: Any) -> None:
    synth.write_sessions(home.projects, 2, 2)
    _run(home)
    conn = sqlite3.connect(home.backfill_dir / "queue.sqlite")
    try:
        states = dict(conn.execute("SELECT state, COUNT(*) FROM capture_deliveries GROUP BY state").fetchall())
        events = conn.execute("SELECT COUNT(*) FROM capture_events").fetchone()[0]
    finally:
        conn.close()
    assert states == {"delivered": 4} and events == 8


@pytest.mark.parametrize("text", ["", "0/m", "3/d", "x"])
def test_rate_parse_rejects(text: str) -> None:
    from paxm_core.api.errors import UsageError
    from paxm_core.backfill.rate import parse_rate

    with pytest.raises(UsageError):
        parse_rate(text)
