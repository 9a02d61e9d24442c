"""The persistent session-sequence allocator (inventory §3 "Session sequence allocation")."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paxm_core import PaxmError
from paxm_core.session_sequence import MemorySequenceAllocator, SessionSequenceStore


def test_next_is_max_of_floor_and_last_plus_one(tmp_path: Path) -> None:
    store = SessionSequenceStore(tmp_path / "state" / "session-sequences.sqlite")
    try:
        assert store.next("s", 100) == 100
        assert store.next("s", 100) == 101
        assert store.next("s", 50) == 102  # a clock step backwards never reuses a value
        assert store.next("s", 500) == 500
        assert store.next("other", 0) == 1
    finally:
        store.close()
    assert (tmp_path / "state" / "session-sequences.sqlite").stat().st_mode & 0o777 == 0o600
    reopened = SessionSequenceStore(tmp_path / "state" / "session-sequences.sqlite")
    try:
        assert reopened.next("s", 1) == 501  # persistent across processes and restarts
    finally:
        reopened.close()


def test_store_errors_are_clear(tmp_path: Path) -> None:
    store = SessionSequenceStore(tmp_path / "seq.sqlite")
    with pytest.raises(PaxmError, match="session id is required"):
        store.next("  ", 1)
    store.close()
    with pytest.raises(PaxmError, match="closed"):
        store.next("s", 1)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PaxmError, match="cannot open session sequence store"):
        SessionSequenceStore(blocker / "seq.sqlite", lazy=False)
    lazy = SessionSequenceStore(blocker / "seq.sqlite")  # nothing happens until a sequence is needed
    with pytest.raises(PaxmError, match="cannot open session sequence store"):
        lazy.next("s", 1)


def test_store_is_opened_only_when_a_sequence_is_needed(tmp_path: Path) -> None:
    store = SessionSequenceStore(tmp_path / "state" / "seq.sqlite")
    assert not (tmp_path / "state").exists()
    assert store.next("s", 5) == 5
    assert (tmp_path / "state" / "seq.sqlite").exists()
    store.close()


def test_memory_fallback_is_monotonic() -> None:
    alloc = MemorySequenceAllocator()
    assert [alloc.next("s", 10), alloc.next("s", 10), alloc.next("s", 5), alloc.next("t", 0)] == [10, 11, 12, 1]


_WORKER = textwrap.dedent(
    """
    import sys
    from paxm_core.session_sequence import SessionSequenceStore
    store = SessionSequenceStore(sys.argv[1])
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # start together
    floor = int(sys.argv[2])
    print(" ".join(str(store.next("shared-session", floor)) for _ in range(40)))
    store.close()
    """
)


def test_two_processes_get_strictly_increasing_distinct_sequences(tmp_path: Path) -> None:
    path = tmp_path / "session-sequences.sqlite"
    floor = "1782000000000000000"  # the same second (same created_at floor) in both processes
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), floor],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outputs = [proc.communicate(timeout=60)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs)
    runs = [[int(v) for v in out.split()] for out in outputs]
    for run in runs:
        assert len(run) == 40 and all(a < b for a, b in zip(run, run[1:], strict=False))
    merged = runs[0] + runs[1]
    assert len(set(merged)) == 80
    assert sorted(merged) == list(range(int(floor), int(floor) + 80))
