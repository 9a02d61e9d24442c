"""Rate limiting, reader lookup and the checkpoint store, without the CLI."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from paxm_core.api.errors import UsageError
from paxm_core.backfill.checkpoint import CheckpointStore
from paxm_core.backfill.rate import RateLimiter, parse_rate
from paxm_core.backfill.sources import transcript_reader


@pytest.mark.parametrize(("text", "per_second"), [("30/m", 0.5), ("5/s", 5.0), ("3600/h", 1.0), (" 1.5 / s ", 1.5)])
def test_parse_rate(text: str, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second)


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_rate_limiter_holds_the_average_rate() -> None:
    fake = FakeTime()
    limiter = RateLimiter(parse_rate("30/m"), clock=fake.clock, sleep=fake.sleep)
    sent = 0
    while sent < 60:
        sent += limiter.allowance(500)
    # 60 turns at 30/m: about two minutes (one token of burst)
    assert 115.0 <= fake.now <= 121.0


def test_unlimited_rate_never_waits() -> None:
    fake = FakeTime()
    assert RateLimiter(None, clock=fake.clock, sleep=fake.sleep).allowance(500) == 500
    assert fake.now == 0.0


class _NoReader:
    name = "pi"


class _Manager:
    def __init__(self, *integrations: Any) -> None:
        self._all = {i.name: i for i in integrations}

    def integration(self, name: str) -> Any:
        return self._all.get(name)

    def integrations(self) -> dict[str, Any]:
        return self._all


def test_an_integration_without_a_transcript_reader_is_refused_clearly() -> None:
    with pytest.raises(UsageError, match="no transcript reader installed for pi"):
        transcript_reader(_Manager(_NoReader()), "pi")
    with pytest.raises(UsageError, match=r"no integration installed for 'opencode' \(installed: pi\)"):
        transcript_reader(_Manager(_NoReader()), "opencode")


def test_checkpoint_store_is_private_and_remembers(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = CheckpointStore(tmp_path / "bf" / "checkpoint.sqlite")
    finally:
        os.umask(old)
    try:
        run = store.start_run("claude", "sqlite")
        store.record_step(run, "claude", [("t1", "queued"), ("t2", "live"), ("t1", "queued")])
        assert store.done_turns("claude") == {"t1", "t2"} and store.done_turns("codex") == set()
        assert store.counts() == {"claude": {"live": 1, "queued": 1}}
        path = tmp_path / "x.jsonl"
        assert not store.file_done("claude", path, 10, 5)
        store.record_step(run, "claude", files=[(path, 10, 5, 3)])
        assert store.file_done("claude", path, 10, 5) and not store.file_done("claude", path, 11, 5)
        store.record_step(run, queued=2, state="done")
        assert store.runs()[0]["state"] == "done" and store.runs()[0]["queued"] == 2
    finally:
        store.close()
    assert stat.S_IMODE((tmp_path / "bf").stat().st_mode) == 0o700
    for child in (tmp_path / "bf").iterdir():
        assert stat.S_IMODE(child.stat().st_mode) == 0o600, child


def test_live_fingerprints_of_prompts_and_turn_ends_never_collide() -> None:
    from paxm_core.backfill.render import live_fingerprint

    prompt = live_fingerprint("pi", "S1", " same text ")
    assert prompt == live_fingerprint("pi", "S1", "same text")  # the user_input form is unchanged
    assert prompt == live_fingerprint("pi", "S1", "same text", "user_input")
    end = live_fingerprint("pi", "S1", "same text", "turn_end")
    assert end != prompt
    assert end != live_fingerprint("pi", "S2", "same text", "turn_end")
    assert end != live_fingerprint("opencode", "S1", "same text", "turn_end")


@pytest.mark.parametrize(
    ("cores", "size", "workers"),
    [(1, 10**9, 0), (2, 10**9, 1), (4, 10**9, 3), (16, 10**9, 4), (8, 1024, 0)],
)
def test_auto_workers_leave_a_core_to_the_run_and_skip_small_runs(
    monkeypatch: pytest.MonkeyPatch, cores: int, size: int, workers: int
) -> None:
    from paxm_core.backfill import workers as module

    monkeypatch.setattr(module.os, "sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    assert module.auto_workers(size) == workers


def test_a_failing_worker_fails_the_run_and_an_unpicklable_reader_renders_in_process(tmp_path: Path) -> None:
    from paxm_core.backfill.workers import render_files_parallel, worker_setup
    from paxm_core.plugins import get_plugin_manager

    class Runtime:
        config = None  # the worker cannot render with it
        tools = None

    class Local:  # defined here: it cannot cross a pipe
        pass

    assert worker_setup(Runtime(), Local(), None, None, set()) is None
    reader = get_plugin_manager().integration("claude")
    setup = worker_setup(Runtime(), reader, None, None, set())
    assert setup is not None
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",'
        ' "message": {"role": "user", "content": "hello"}}\n'
        '{"type": "assistant", "sessionId": "s", "timestamp": "2026-01-01T00:00:01Z",'
        ' "message": {"id": "a", "role": "assistant", "content": [{"type": "text", "text": "hi"}]}}\n'
    )
    source = render_files_parallel(setup, [(path, 1, 1)], 1)
    with pytest.raises(Exception, match="NoneType|exited"):
        for _path, _size, _mtime, turns in source:
            list(turns)
    source.close()


def test_a_checkpoint_step_records_turns_files_and_counters_together(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "checkpoint.sqlite")
    try:
        run = store.start_run("claude", "sqlite")
        a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
        store.record_step(run, "claude", [("t1", "queued"), ("t2", "empty")], [(a, 10, 5, 2)], queued=1, found=2)
        store.record_step(run, "claude", [("t1", "queued")], [], queued=1, found=3, bogus=7)
        assert store.done_turns("claude") == {"t1", "t2"}
        assert store.file_done("claude", a, 10, 5) and not store.file_done("claude", b, 10, 5)
        latest = store.runs()[0]
        assert (latest["queued"], latest["found"], latest["state"]) == (1, 3, "running")
        # a step whose transaction fails records none of it: turns, files and counters go together
        store._conn.execute(
            "CREATE TRIGGER no_b BEFORE INSERT ON files WHEN NEW.path LIKE '%b.jsonl'"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            store.record_step(run, "claude", [("t3", "queued")], [(b, 1, 1, 1)], found=9)
        assert "t3" not in store.done_turns("claude") and store.runs()[0]["found"] == 3
    finally:
        store.close()
