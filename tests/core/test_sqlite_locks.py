"""Opening one new SQLite file from many processes at once never fails on a lock.

SQLite's busy handler does not wait where waiting could deadlock (switching a fresh file to
WAL while another process opens it), so each paxm store retries those steps. The process
test opens every kind of paxm SQLite file from eight processes released together.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paxm_core.sqlite_locks import is_locked, retry_locked

ROOT = Path(__file__).resolve().parents[2]


def test_a_lock_is_retried_until_the_step_succeeds() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "wal"

    assert retry_locked(flaky) == "wal"
    assert len(calls) == 3


def test_any_other_error_is_raised_at_once() -> None:
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: memories")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_locked(broken)
    assert calls == [1]


def test_a_lock_held_past_the_ceiling_is_raised() -> None:
    calls: list[float] = []

    def held() -> None:
        calls.append(time.monotonic())
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        retry_locked(held, ceiling=0.1)
    # retried, with pauses that grow (2 ms doubling to 50 ms: about six tries in 0.1 s), not spun
    assert 2 <= len(calls) < 20


@pytest.mark.parametrize(
    ("message", "locked"),
    [("database is locked", True), ("database table is locked", True), ("SQLITE_BUSY", True), ("disk full", False)],
)
def test_is_locked_reads_sqlite_messages(message: str, locked: bool) -> None:
    assert is_locked(sqlite3.OperationalError(message)) is locked


_OPENERS = {
    "queue": (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('inbox', {str(ROOT / 'paxm_core/capture/_inbox.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "m.append_raw(path, f'evt_{n}', 'codex', 'user_input', b'{}')\n"
    ),
    "sequences": (
        "from paxm_core.session_sequence import SessionSequenceStore\n"
        "store = SessionSequenceStore(path); store.next(f's{n}', 0); store.close()\n"
    ),
    "checkpoint": (
        "from pathlib import Path\n"
        "from paxm_core.backfill.checkpoint import CheckpointStore\n"
        "CheckpointStore(Path(path)).close()\n"
    ),
    "sqlite provider": (
        "from paxm_provider_sqlite.provider import SQLiteProvider\n"
        "from paxm_core import Deadline\n"
        "from paxm_core.api.provider_config import ProviderConfig\n"
        "p = SQLiteProvider('s', ProviderConfig(type='sqlite', path=path)); p.health(Deadline.after(30)); p.close()\n"
    ),
}


@pytest.mark.parametrize("kind", list(_OPENERS))
def test_eight_processes_opening_one_new_file_together_all_succeed(tmp_path: Path, kind: str) -> None:
    go = tmp_path / "go"
    prelude = (
        "import os, sys, time\n"
        "path, n, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]\n"
        "while not os.path.exists(go): time.sleep(0.0005)\n"
    )
    for round_ in range(3):
        path = tmp_path / f"{round_}.sqlite"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", prelude + _OPENERS[kind], str(path), str(n), str(go)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(8)
        ]
        time.sleep(0.3)  # every process imported and waiting, so they open the file together
        go.touch()
        results = [(p.communicate(timeout=60)[1], p.returncode) for p in procs]
        failures = [stderr for stderr, code in results if code != 0]
        go.unlink()
        assert failures == []
