"""A backfill that reads and renders in worker processes queues what a serial run queues.

The real CLI, the real SQLite provider and real worker processes (``--workers 2``).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

OLD_ENOUGH = "2099-01-01"


def _run(home: Any, *extra: str) -> dict[str, Any]:
    done = home.paxm("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, *extra)
    return dict(json.loads(done.stdout))


def _queued_events(home: Any) -> dict[str, tuple[str, int, str]]:
    """``event id -> (session key, terminal, payload)`` of the backfill queue."""
    conn = sqlite3.connect(home.backfill_dir / "queue.sqlite")
    try:
        rows = conn.execute("SELECT event_id, session_key, terminal, payload_json FROM capture_events").fetchall()
    finally:
        conn.close()
    here = str(home.home)  # the transcript path in the metadata names the sandbox
    return {r[0]: (r[1].replace(here, "~"), r[2], r[3].replace(here, "~")) for r in rows}


def _processes_of(home: Any) -> list[int]:
    """Live processes started in ``home``'s sandbox (their environment names its HOME)."""
    marker = f"HOME={home.home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def test_workers_queue_exactly_the_serial_runs_events(home: Any, synth: Any, tmp_path: Path) -> None:
    total = synth.write_sessions(home.projects, 8, 30)
    serial = type(home)(tmp_path / "serial")
    serial.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    synth.write_sessions(serial.projects, 8, 30)

    parallel_report = _run(home, "--workers", "2", "--batch", "50")
    serial_report = _run(serial, "--workers", "0", "--batch", "50")
    for report in (parallel_report, serial_report):
        assert report["state"] == "done", report
        assert report["queued"] == report["delivered"] == report["found"] == total
    assert parallel_report["workers"] == 2 and serial_report["workers"] == 0

    # event for event: the same ids, sessions, seals and payloads (text, metadata, times)
    assert _queued_events(home) == _queued_events(serial)
    assert len(_queued_events(home)) == 2 * total
    assert Counter(t for t, _ in home.memories()) == Counter(t for t, _ in serial.memories())
    everything = "\n".join(t + m for t, m in home.memories())
    for leaked in (synth.THINKING, "RECALLED-SECRET-NEVER-STORE", "paxm-recall"):
        assert leaked not in everything

    again = _run(home, "--workers", "2")
    assert again["queued"] == 0 and again["state"] == "done"
    assert len(home.memories()) == total
    assert _processes_of(home) == []  # the pool's processes are gone


def test_kill_9_of_a_parallel_run_resumes_with_nothing_lost_duplicated_or_left_running(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 60, 50)
    args = ("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, "--batch", "40", "--workers", "2")

    def no_worker_left() -> None:
        # the workers notice their run is gone and exit on their own
        deadline = time.monotonic() + 10
        while _processes_of(home) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_of(home) == [], "a worker outlived its killed run"

    # the first kill while the workers are still starting
    kills, midway = home.kill_runs(args, total, random.Random(23), first_delay=0.8, after_kill=no_worker_left)
    assert kills >= 2 and midway >= 1, "the runs finished before they could be killed midway: use more turns"
    final = _run(home, "--workers", "2")
    assert final["state"] == "done", final
    ids = Counter(json.loads(meta).get("backfill_turn_id", "") for _, meta in home.memories())
    assert len(home.memories()) == total == len(ids)
    assert set(ids.values()) == {1}, "a turn was stored twice"
    assert _run(home, "--workers", "2")["queued"] == 0
