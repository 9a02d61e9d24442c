"""Crash test: turns streamed through the real hook client while the daemon is SIGKILLed at
random points.  Afterwards every captured turn is delivered exactly once and recallable."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from paxm_contracttest.sandbox import is_daemon_process

from .conftest import CLIENT, daemon_pid, memories, stop_daemon, wait_for, write_config

CYCLES = int(os.environ.get("PAXM_CRASH_CYCLES", "200"))


def client(config: Path, event: str, payload: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--config", str(config), "--target", "claude", "--event", event]
    return subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, timeout=30)


def kill_later(config: Path, delay: float, kills: list[int]) -> None:
    time.sleep(delay)
    pid = daemon_pid(config)
    if pid and is_daemon_process(pid):  # not a pid a killed daemon's lock file still names
        try:
            os.kill(pid, signal.SIGKILL)
            kills.append(pid)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_sigkill_at_random_points_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("PAXM_CRASH_SEED", "7")))
    config = write_config(tmp_path / "cfg")
    kills: list[int] = []
    try:
        for i in range(CYCLES):
            session = f"crash-{i}"
            killer = None
            if rng.random() < 0.25:  # kill while one of this turn's hooks is in flight
                killer = threading.Thread(target=kill_later, args=(config, rng.uniform(0.0, 0.12), kills))
                killer.start()
            prompt = {"session_id": session, "cwd": "/crash", "prompt": f"turn marker U{i:04d}Z"}
            stop = {"session_id": session, "cwd": "/crash", "last_assistant_message": f"answer marker A{i:04d}Z"}
            assert client(config, "user_input", prompt).returncode == 0
            assert client(config, "turn_end", stop).returncode == 0
            if killer is not None:
                killer.join()
        # let a daemon come up (the last client may have just started one) and deliver everything
        if not daemon_pid(config):
            client(config, "session_start", {"session_id": "wake"})  # any hook starts a daemon
        from paxm_core.passive.control import send_control

        wait_for(lambda: send_control(config, "flush") is not None, timeout=60)
        report = send_control(config, "flush")
        # "ok" only says the flush ran; "delivered_all" says nothing is left owed or dead
        assert report is not None and report["ok"] and report["delivered_all"], json.dumps(report)
    finally:
        stop_daemon(config)
    assert len(kills) >= CYCLES // 10, f"only {len(kills)} kills happened"

    queue = sqlite3.connect(config.parent / "hooks" / "capture.sqlite")
    try:
        assert (
            queue.execute("SELECT state, count(*) FROM capture_inbox WHERE state != 'done' GROUP BY state").fetchall()
            == []
        )
        states = dict(queue.execute("SELECT state, count(*) FROM capture_deliveries GROUP BY state").fetchall())
        assert set(states) == {"delivered"}, states
    finally:
        queue.close()

    rows = [m["text"] for m in memories(config)]
    for i in range(CYCLES):
        user, answer = f"U{i:04d}Z", f"A{i:04d}Z"
        holding = [t for t in rows if user in t]
        assert len(holding) == 1, f"turn {i}: {len(holding)} memories hold its prompt"
        assert answer in holding[0], f"turn {i}: prompt and answer were split"
        assert sum(answer in t for t in rows) == 1

    from paxm_core.runtime import Runtime

    with Runtime.load(str(config), telemetry=None) as runtime:
        for i in rng.sample(range(CYCLES), min(CYCLES, 40)):
            hits = runtime.tools.recall(f"U{i:04d}Z", profile="default").hits
            assert any(f"A{i:04d}Z" in h.text for h in hits), f"turn {i} is not recallable"
