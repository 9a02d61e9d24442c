"""Item 10 of issue 13: the same flush report with or without the daemon; control says what happened."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .conftest import run_client, stop_daemon, wait_for, write_config

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]
SCRIPTED = Path(__file__).parents[2] / "providers" / "paxm-provider-jsonrpc" / "tests" / "plugins" / "scripted.py"


def _scripted(**env: str) -> Any:
    """A JSON-RPC provider running the scripted test plugin with ``env``."""
    from paxm_core.config import ProviderConfig

    return ProviderConfig(
        type="jsonrpc", enabled=True, command=sys.executable, args=[str(SCRIPTED)], env=env, timeout=60.0
    )


def _failing_config(tmp_path: Path, mode: str = "stderr_exit") -> Path:
    def mutate(config: Any) -> None:
        from paxm_core.config import RouteConfig

        config.providers["broken"] = _scripted(SCRIPTED_MODE=mode, SCRIPTED_STORE=str(tmp_path / "s.json"))
        for profile in config.write_profiles.values():  # whichever profile the hooks write through
            profile.providers.append(RouteConfig(name="broken", required=True))
        config.capture_queue.max_attempts = 50  # stays "failed"/retry, not dead, during the test

    return write_config(tmp_path / "cfg", mutate=mutate)


def _capture_turn(config: Path) -> None:
    prompt = json.dumps({"session_id": "d1", "cwd": "/w", "prompt": "Decision: flush report marker egret-2"})
    stop = json.dumps({"session_id": "d1", "cwd": "/w", "last_assistant_message": "ok egret-2"})
    assert run_client(config, "claude", "user_input", prompt.encode()).returncode == 0
    assert run_client(config, "claude", "turn_end", stop.encode()).returncode == 0


def _paxm(config: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    out = subprocess.run([*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=120)
    return out, time.monotonic() - started


def test_failed_delivery_reports_the_same_json_with_and_without_the_daemon(tmp_path: Path) -> None:
    config = _failing_config(tmp_path)
    try:
        _capture_turn(config)
        wait_for(lambda: (config.parent / "hooks" / "paxm-hook.sock").exists())
        with_daemon, _ = _paxm(config, "queue", "flush", "--json", "--timeout", "3s")
        assert with_daemon.returncode == 1, with_daemon.stdout + with_daemon.stderr
        assert "unknown error" not in with_daemon.stderr
        via = json.loads(with_daemon.stdout)
        assert via["via_daemon"] is True and via["ok"] is False and via["remaining"] >= 1
        down, _ = _paxm(config, "__hook-control", "--shutdown")
        assert down.returncode == 0, down.stdout + down.stderr
        assert not (config.parent / "hooks" / "paxm-hook.sock").exists()
        without, _ = _paxm(config, "queue", "flush", "--json", "--timeout", "3s")
        assert without.returncode == 1
        direct = json.loads(without.stdout)
        assert direct["via_daemon"] is False
        assert set(via) == set(direct)
        assert {k: via[k] for k in ("ok", "remaining", "dead_total")} == {
            k: direct[k] for k in ("ok", "remaining", "dead_total")
        }
        text, _ = _paxm(config, "queue", "flush", "--timeout", "3s")
        assert text.returncode == 1 and text.stdout.startswith("Flushed capture queue")
    finally:
        stop_daemon(config)


def test_flush_timeout_is_honoured_through_the_daemon(tmp_path: Path) -> None:
    config = _failing_config(tmp_path, mode="hang")
    try:
        _capture_turn(config)
        wait_for(lambda: (config.parent / "hooks" / "paxm-hook.sock").exists())
        out, took = _paxm(config, "queue", "flush", "--json", "--timeout", "2s")
        assert out.returncode == 1
        report = json.loads(out.stdout)
        assert report["via_daemon"] is True and report["ok"] is False
        assert took < 9  # was 10 s for a 5 s timeout
    finally:
        stop_daemon(config)


def test_shutdown_kills_a_plugin_a_recall_is_still_waiting_for(tmp_path: Path) -> None:
    """A hung JSON-RPC plugin must not outlive the daemon that started it.

    The recall's route allows a minute, so when the client has given up (and the daemon is
    asked to shut down) the plugin is still inside its request.  The daemon closes its router
    on the way out, and the provider's close kills the plugin's process group; without it the
    plugin (and its child) would run on after the daemon's exit.
    """
    pidfile = tmp_path / "pids"

    def mutate(config: Any) -> None:
        from paxm_core.config import RouteConfig

        config.providers["stuck"] = _scripted(SCRIPTED_MODE="hang", SCRIPTED_CHILD_PIDFILE=str(pidfile))
        for profile in ("passive", "passive_initial"):
            config.recall_profiles[profile].providers.append(RouteConfig(name="stuck", required=False, timeout=60.0))
        recall = config.agents["claude"].hooks["user_input"].recall
        recall.timeout = None
        if recall.initial is not None:
            recall.initial.timeout = None

    config = write_config(tmp_path / "cfg", mutate=mutate)
    try:
        prompt = json.dumps({"session_id": "h1", "cwd": "/w", "prompt": "When is the deploy window?"})
        started = time.monotonic()
        assert run_client(config, "claude", "user_input", prompt.encode()).returncode == 0
        assert time.monotonic() - started < 15  # the client gave up on the recall; the turn goes on
        pids = wait_for(lambda: _both_pids(pidfile))
        identities = {pid: _started(pid) for pid in pids}
        down, _ = _paxm(config, "__hook-control", "--shutdown")
        assert down.returncode == 0, down.stdout + down.stderr
    finally:
        stop_daemon(config)
    for pid in pids:
        _wait_gone(pid, identities[pid])


def _both_pids(pidfile: Path) -> list[int] | None:
    # the plugin writes its own pid and its child's once both run
    words = pidfile.read_text().split() if pidfile.exists() else []
    return [int(word) for word in words] if len(words) == 2 else None


def _started(pid: int) -> str | None:
    """The process's start time (``/proc/<pid>/stat`` field 22), ``None`` when gone or a zombie.

    A pid alone may name another process by the time it is checked (pids wrap on a busy box).
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _wait_gone(pid: int, started: str | None, timeout: float = 10.0) -> None:
    import os

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _started(pid)
        if now is None or now != started:
            return  # gone, killed and not yet reaped, or the pid now names another process
        time.sleep(0.05)
    os.kill(pid, 9)  # the same process: don't leave it behind for the rest of the suite
    raise AssertionError(f"plugin process {pid} outlived the daemon")
