"""Fixtures for hook tests: a real config on disk (SQLite provider), client command, daemon control."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest.sandbox import is_daemon_process

FIXTURES = Path(__file__).parent / "fixtures"
CLIENT = Path(__file__).resolve().parents[2] / "paxm_core" / "passive" / "client.py"


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def write_config(
    directory: Path, *, agents: tuple[str, ...] = ("claude", "codex"), mutate: Any = None, user_id: str = "alice"
) -> Path:
    """A full default config (as setup writes it) with ``agents`` enabled and SQLite in ``directory``."""
    from paxm_core.config import load_config, save_config

    path = directory / "config.yaml"
    config = load_config(path)
    config.identity.user_id = user_id
    config.providers["sqlite"].path = str(directory / "memory.sqlite")
    for name in agents:
        config.agents[name].enabled = True
        config.agents[name].agent_id = f"{name}-{user_id}"
    # Tests that assert injected context must not depend on the machine's load: give passive
    # recall a budget no loaded CI box misses.  The budget itself is tested separately.
    for profile in ("passive", "passive_initial"):
        for route in config.recall_profiles[profile].providers:
            route.timeout = 10.0
    if mutate is not None:
        mutate(config)
    save_config(config, path)
    return path


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_config(tmp_path / "cfg")


def run_client(
    config: Path, target: str, event: str, payload: bytes, *extra: str, timeout: float = 20.0, env: Any = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the real hook client exactly as an integration installs it."""
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--config", str(config), "--target", target, "--event", event]
    return subprocess.run(argv + list(extra), input=payload, capture_output=True, timeout=timeout, env=env)


def control(config: Path, action: str) -> dict[str, Any] | None:
    from paxm_core.passive.control import send_control

    return send_control(config, action)


def wait_for(predicate: Any, timeout: float = 60.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def daemon_pid(config: Path) -> int:
    lock = config.parent / "hooks" / "paxm-hook.lock"
    try:
        return int(lock.read_text().strip() or 0)
    except (OSError, ValueError):
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_daemon(config: Path) -> None:
    """Shut the daemon down politely, or kill it; also catches one still starting up."""
    started = time.monotonic()
    while True:
        try:
            if control(config, "shutdown") is not None:
                return
        except Exception:
            pass
        pid = daemon_pid(config)
        waited = time.monotonic() - started
        if pid and _alive(pid):
            if waited > 3.0:
                if is_daemon_process(pid):
                    os.kill(pid, 9)
                return
        elif pid or waited > 0.5:  # dead daemon, or none appeared in a short grace period
            return
        time.sleep(0.1)


STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def reap_daemons() -> Iterator[None]:
    """Daemons a test started with :func:`start_daemon` are stopped after it."""
    yield
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


def _is_socket(path: Path) -> bool:
    try:
        return path.is_socket()
    except OSError:
        return False


def start_daemon(config: Path, *args: str) -> subprocess.Popen[bytes]:
    """A daemon for ``config``, returned once it listens (or has exited)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paxm_core.passive.daemon", "--config", str(config), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    STARTED.append(proc)
    sock = config.parent / "hooks" / "paxm-hook.sock"
    wait_for(lambda: _is_socket(sock) or proc.poll() is not None)
    return proc


@pytest.fixture
def daemon_cleanup() -> Iterator[list[Path]]:
    """Configs registered here get their daemon stopped after the test."""
    configs: list[Path] = []
    yield configs
    for config in configs:
        stop_daemon(config)


def queue_rows(config: Path, sql: str) -> list[tuple[Any, ...]]:
    import sqlite3

    conn = sqlite3.connect(config.parent / "hooks" / "capture.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def memories(config: Path) -> list[dict[str, Any]]:
    import sqlite3

    conn = sqlite3.connect(config.parent / "memory.sqlite")
    try:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM memories")]
    finally:
        conn.close()


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()
