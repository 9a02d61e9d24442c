from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from paxm_core.api.events import HookEvent
from paxm_core.api.json import JSONObject
from paxm_core.passive.session_state import SessionState, session_key

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def ev(name: str, session: str = "s1") -> HookEvent:
    return HookEvent(target="claude", event=name, metadata={"session_id": session})


def test_keys() -> None:
    assert session_key(ev("user_input")) == "claude/session/s1"
    assert session_key(HookEvent("codex", "x", metadata={"transcript_path": "/t"})) == "codex/transcript//t"
    assert session_key(HookEvent("", "x", workspace="/w")) == "/workspace//w"  # no target: no default agent is assumed
    assert session_key(HookEvent("claude", "x")) == ""


def test_first_input_only_once(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "hooks" / "session_state.json")
    assert state.mark_initial(ev("user_input"), T0)
    assert not state.mark_initial(ev("user_input"), T0 + timedelta(minutes=1))
    assert state.mark_initial(ev("user_input", "s2"), T0)
    assert (tmp_path / "hooks" / "session_state.json").stat().st_mode & 0o777 == 0o600
    assert "prompt" not in (tmp_path / "hooks" / "session_state.json").read_text()


def test_local_time_refresh_after_more_than_12_hours(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "s.json")
    assert not state.observe(ev("session_start"), T0)
    assert not state.observe(ev("user_input"), T0 + timedelta(hours=12))  # exactly 12 h: not yet
    assert state.observe(ev("user_input"), T0 + timedelta(hours=24, seconds=1))
    assert not state.observe(ev("tool_use"), T0 + timedelta(days=3))  # untracked event


def test_unknown_session_after_shared_activity_refreshes(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "s.json")
    assert not state.observe(ev("user_input", "a"), T0)  # nothing recorded yet
    assert state.observe(ev("user_input", "b"), T0)


def test_corrupt_file_counts_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("{not json")
    state = SessionState(path)
    assert state.mark_initial(ev("user_input"), T0)


def test_old_entries_are_pruned(tmp_path: Path) -> None:
    state = SessionState(tmp_path / "s.json")
    state.mark_initial(ev("user_input", "old"), T0)
    state.mark_initial(ev("user_input", "new"), T0 + timedelta(days=8))
    assert state.mark_initial(ev("user_input", "old"), T0 + timedelta(days=8))  # forgotten: initial again


def test_write_behind_keeps_state_in_memory_until_flushed(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    state = SessionState(path, write_behind=30.0)
    assert state.mark_initial(ev("user_input"), T0)
    assert not state.mark_initial(ev("user_input"), T0)  # remembered in memory
    assert not path.exists()
    state.close()
    assert not SessionState(path).mark_initial(ev("user_input"), T0)  # and on disk after close


def test_write_behind_writes_once_a_change_is_due_and_starts_no_thread(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    state = SessionState(path, write_behind=0.3)
    threads = threading.active_count()
    assert state.mark_initial(ev("user_input"), T0)
    assert threading.active_count() == threads  # the daemon's own steps write it (flush_due)
    state.flush_due()
    assert not path.exists()  # the change is not due yet
    time.sleep(0.4)
    state.flush_due()
    assert not SessionState(path).mark_initial(ev("user_input"), T0)
    path.unlink()
    state.flush_due()
    assert not path.exists()  # nothing changed since: nothing written


def test_ledgers_are_bounded_and_age_out(tmp_path: Path) -> None:
    from paxm_core.passive.session_state import LEDGER_TTL, MAX_LEDGERS

    state = SessionState(tmp_path / "state.json")
    start = datetime(2026, 12, 1, tzinfo=UTC)

    def give(ledger: JSONObject) -> None:
        ledger.setdefault("ids", ["p:m"])

    for n in range(MAX_LEDGERS + 5):
        state.update_ledger(f"claude/session/s{n}", give, start + timedelta(seconds=n))
    data = json.loads((tmp_path / "state.json").read_text())
    assert len(data["ledgers"]) == MAX_LEDGERS and "claude/session/s0" not in data["ledgers"]
    assert os.stat(tmp_path / "state.json").st_mode & 0o777 == 0o600
    later = start + LEDGER_TTL + timedelta(hours=1)
    state.update_ledger("claude/session/new", lambda led: None, later)
    assert set(json.loads((tmp_path / "state.json").read_text())["ledgers"]) == {"claude/session/new"}
    assert state.ledger("claude/session/s10") == {}  # gone: its memories may be injected again
