"""The persistent session-sequence allocator (inventory §3 "Session sequence allocation")."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def _run_together(worker: str, path: Path, floor: str) -> list[list[int]]:
    """Start two ``worker`` processes on one store, release them together, their sequences."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", worker, str(path), floor],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
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
    return [[int(v) for v in out.split()] for out in outputs]


def test_two_processes_get_strictly_increasing_distinct_sequences(tmp_path: Path) -> None:
    floor = "1782000000000000000"  # the same second (same created_at floor) in both processes
    runs = _run_together(_WORKER, tmp_path / "session-sequences.sqlite", floor)
    for run in runs:
        assert len(run) == 40 and all(a < b for a, b in zip(run, run[1:], strict=False))
    merged = runs[0] + runs[1]
    assert len(set(merged)) == 80
    assert sorted(merged) == list(range(int(floor), int(floor) + 80))


def _sequential(requests: list[tuple[str, int]], start: dict[str, int]) -> list[int]:
    last = dict(start)
    out = []
    for session, floor in requests:
        last[session] = max(floor, 1, last.get(session, 0) + 1)
        out.append(last[session])
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 40)), max_size=6),
    batch=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 40)), max_size=12),
)
def test_next_many_equals_next_called_in_turn(
    tmp_path: Path, first: list[tuple[str, int]], batch: list[tuple[str, int]]
) -> None:
    path = tmp_path / f"seq-{uuid.uuid4().hex}.sqlite"
    store = SessionSequenceStore(path)
    memory = MemorySequenceAllocator()
    try:
        before = [store.next(session, floor) for session, floor in first]
        assert [memory.next(session, floor) for session, floor in first] == before
        expected = _sequential(batch, {s: v for (s, _), v in zip(first, before, strict=True)})
        assert store.next_many(batch) == expected
        assert memory.next_many(batch) == expected
        # the batch's last values were stored: the next single allocation continues from them
        for session in {s for s, _ in batch}:
            assert store.next(session, 0) == memory.next(session, 0)
    finally:
        store.close()


def test_next_many_is_one_commit_and_reserves_nothing_on_error(tmp_path: Path) -> None:
    path = tmp_path / "seq.sqlite"
    store = SessionSequenceStore(path)
    try:
        assert store.next("s", 10) == 10
        with pytest.raises(PaxmError, match="session id is required"):
            store.next_many([("s", 1), ("  ", 1)])
        assert store.next_many([]) == []
        conn = sqlite3.connect(path)
        try:
            conn.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            store._conn.execute("PRAGMA busy_timeout = 50")  # type: ignore[union-attr]
            with pytest.raises(PaxmError, match="reserve session sequences"):
                store.next_many([("s", 1), ("t", 1)])
            conn.rollback()
        finally:
            conn.close()
        # nothing of the failed batches was reserved, and the store still works
        assert store.next_many([("s", 1), ("t", 1), ("s", 1)]) == [11, 1, 12]
        changes = store._conn.total_changes  # type: ignore[union-attr]
        assert store.next_many([("s", 1)] * 50 + [("t", 1)] * 50) == [*range(13, 63), *range(2, 52)]
        # one row written per session, not one per request
        assert store._conn.total_changes - changes == 2  # type: ignore[union-attr]
    finally:
        store.close()
    store.close()
    with pytest.raises(PaxmError, match="closed"):
        store.next_many([("s", 1)])


_BATCH_WORKER = textwrap.dedent(
    """
    import sys
    from paxm_core.session_sequence import SessionSequenceStore
    store = SessionSequenceStore(sys.argv[1])
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # start together
    floor = int(sys.argv[2])
    out = []
    for n in range(10):  # batches and single allocations, interleaved with the other process
        out += store.next_many([("shared-session", floor)] * 4) if n % 2 else [store.next("shared-session", floor)]
    print(" ".join(str(v) for v in out))
    store.close()
    """
)


def test_two_processes_allocating_in_batches_get_distinct_increasing_sequences(tmp_path: Path) -> None:
    floor = "1782000000000000000"
    runs = _run_together(_BATCH_WORKER, tmp_path / "session-sequences.sqlite", floor)
    for run in runs:
        assert len(run) == 25 and all(a < b for a, b in zip(run, run[1:], strict=False))
    assert sorted(runs[0] + runs[1]) == list(range(int(floor), int(floor) + 50))
