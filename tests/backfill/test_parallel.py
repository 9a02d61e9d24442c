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


def _delivery_children(home: Any) -> list[int]:
    """The sandbox's live delivery processes (``python -m paxm_core.backfill.delivery``)."""
    found = []
    for pid in _processes_of(home):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"paxm_core.backfill.delivery" in cmdline:
            found.append(pid)
    return found


def _assert_each_turn_once(home: Any, total: int) -> None:
    ids = Counter(json.loads(meta).get("backfill_turn_id", "") for _, meta in home.memories())
    assert len(home.memories()) == total == len(ids)
    assert set(ids.values()) == {1}, "a turn was stored twice"


def _no_process_left(home: Any) -> None:
    # the delivery process and the workers notice their run is gone and exit on their own
    deadline = time.monotonic() + 15
    while _processes_of(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_of(home) == [], "a child outlived its killed run"


def test_a_delivery_process_delivers_what_a_thread_does_and_leaves_nothing_running(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 8, 30)
    report = _run(home, "--workers", "1", "--batch", "50", "--delivery", "process")
    assert report["state"] == "done" and report["delivery"] == "process", report
    assert report["queued"] == report["delivered"] == total
    _assert_each_turn_once(home, total)
    assert _processes_of(home) == []
    status = json.loads(home.paxm("backfill", "status", "--json").stdout)
    assert status["runs"][0]["delivered"] == total and status["queue"]["owed"] == 0
    again = _run(home, "--delivery", "process")
    assert again["queued"] == again["delivered"] == 0 and again["state"] == "done"


def test_kill_9_of_a_run_with_a_delivery_process_leaves_no_orphan_and_resumes(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 60, 50)
    args = ("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, "--batch", "40")
    args += ("--workers", "1", "--delivery", "process")
    kills, midway = home.kill_runs(
        args, total, random.Random(29), first_delay=0.8, after_kill=lambda: _no_process_left(home)
    )
    assert kills >= 2 and midway >= 1, "the runs finished before they could be killed midway: use more turns"
    final = _run(home, "--delivery", "process")
    assert final["state"] == "done", final
    _assert_each_turn_once(home, total)
    assert _run(home, "--delivery", "process")["queued"] == 0


def test_kill_9_of_the_delivery_process_fails_the_run_and_the_next_run_resumes(home: Any, synth: Any) -> None:
    total = synth.write_sessions(home.projects, 60, 50)
    args = ("backfill", "run", "--agent", "claude", "--json", "--before", OLD_ENOUGH, "--batch", "40")
    args += ("--workers", "1", "--delivery", "process")
    rng = random.Random(31)
    child_kills = 0
    for _attempt in range(6):
        before = len(home.memories())
        run = home.popen(*args)
        deadline = time.monotonic() + 60
        # the delivery child, once it has stored something more (however loaded the machine)
        while run.poll() is None and time.monotonic() < deadline:
            if _delivery_children(home) and len(home.memories()) > before:
                break
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.5))
        for pid in _delivery_children(home):
            os.kill(pid, 9)
            child_kills += 1
        out, err = run.communicate(timeout=120)
        if child_kills and run.returncode != 0:
            # the run notices, fails clearly and leaves the rest queued for the next run
            assert "delivery process exited" in err and "Traceback" not in err, (out, err)
        _no_process_left(home)
        if len(home.memories()) >= total:
            break
    assert child_kills >= 2, "the runs finished before their delivery process could be killed"
    assert 0 < len(home.memories()) <= total
    final = _run(home, "--delivery", "process")
    assert final["state"] == "done", final
    _assert_each_turn_once(home, total)
    status = json.loads(home.paxm("backfill", "status", "--json").stdout)
    assert status["queue"]["owed"] == 0 and "failed" in [r["state"] for r in status["runs"]]
