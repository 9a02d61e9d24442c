"""The real hook daemon process: lock, stale socket, idle exit, control, inbox drain, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from paxm_core.passive.control import send_control

from .conftest import (
    CLIENT,
    STARTED,
    daemon_pid,
    fixture_bytes,
    memories,
    queue_rows,
    run_client,
    wait_for,
    write_config,
)
from .conftest import start_daemon as start

SOCK = ("hooks", "paxm-hook.sock")


def test_end_to_end_through_client_and_daemon(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    start(config)
    session = fixture_bytes("claude_session_start.json")
    out = run_client(config, "claude", "session_start", session)
    assert out.returncode == 0 and b"<paxm-session-identity" in out.stdout
    prompt = json.dumps(
        {"session_id": "e2e", "cwd": "/w", "prompt": "Decision: cache TTL is seven minutes, id kiwi-3301"}
    )
    assert run_client(config, "claude", "user_input", prompt.encode()).returncode == 0
    stop = json.dumps({"session_id": "e2e", "cwd": "/w", "last_assistant_message": "Saved kiwi-3301."})
    assert run_client(config, "claude", "turn_end", stop.encode()).returncode == 0
    report = send_control(config, "flush")
    assert report is not None and report["ok"]
    texts = [m["text"] for m in memories(config)]
    assert any("kiwi-3301" in t and "Claude Code assistant response" in t for t in texts)
    ask = json.dumps({"session_id": "e2e-next", "cwd": "/w", "prompt": "what is the cache TTL kiwi-3301"}).encode()
    answer = run_client(config, "claude", "user_input", ask)
    assert b'<paxm-recall version="1" mode="passive">' in answer.stdout and b"kiwi-3301" in answer.stdout
    status = send_control(config, "status")
    assert status is not None and status["pid"] == daemon_pid(config) and status["requests"] >= 5
    assert send_control(config, "shutdown") is not None  # also writes queued telemetry
    logs = subprocess.run(
        [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config), "logs", "--json"],
        capture_output=True,
        timeout=60,
    )
    events = [json.loads(line) for line in logs.stdout.splitlines() if line.strip()]
    kinds = [e["kind"] for e in events]
    assert kinds.count("hook_recall") == 2 and "recall" not in kinds  # one record per hook recall
    assert kinds.count("hook_write") == 4  # session_start, user_input, turn_end, user_input
    injected = [e for e in events if e["kind"] == "hook_recall" and e.get("inserted_count")]
    assert len(injected) == 1 and injected[0]["target"] == "claude"


def test_second_daemon_refuses_with_pid(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    first = start(config)
    second = subprocess.run(
        [sys.executable, "-m", "paxm_core.passive.daemon", "--config", str(config)], capture_output=True, timeout=30
    )
    assert second.returncode == 1
    assert f"already running with pid {first.pid}".encode() in second.stderr


_HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, b"%d\\n" % os.getpid())
print("held", flush=True)
time.sleep(float(sys.argv[2]))
os.unlink(sys.argv[1])  # as a daemon's release does: unlink, then unlock
os.close(fd)
"""


def test_a_daemon_started_during_another_ones_shutdown_takes_over(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    # A shutting-down daemon has closed its socket but still holds the lock while it flushes.
    # A daemon a hook starts meanwhile waits for the lock instead of exiting, so the hook's
    # event (already in the inbox) is not left without a daemon.
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    hooks = config.parent / "hooks"
    hooks.mkdir(mode=0o700, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(hooks / "paxm-hook.lock"), "1.5"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        daemon = start(config)  # returns once the socket exists
        assert holder.poll() == 0  # it came up only after the holder let go
        assert daemon_pid(config) == daemon.pid
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its stdout pipe


def test_sigkilled_daemon_is_replaced_by_the_next_hook(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    old = start(config)
    os.kill(old.pid, signal.SIGKILL)
    old.wait()
    assert config.parent.joinpath(*SOCK).exists()  # stale socket and lock file left behind
    payload = json.dumps({"session_id": "k1", "prompt": "after the crash, mango-2290"}).encode()
    assert run_client(config, "claude", "user_input", payload).returncode == 0
    wait_for(lambda: daemon_pid(config) not in (0, old.pid))
    wait_for(lambda: queue_rows(config, "SELECT count(*) FROM capture_events")[0][0] == 1)
    # the turn is still in progress: a plain flush leaves it whole, seal_open delivers it now
    assert send_control(config, "flush", params={"seal_open": True}) is not None
    assert any("mango-2290" in m["text"] for m in memories(config))


def test_idle_daemon_flushes_and_exits(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    proc = start(config, "--idle-timeout", "1s")
    payload = json.dumps({"session_id": "i1", "last_assistant_message": "idle-flush-7781"}).encode()
    assert run_client(config, "claude", "turn_end", payload).returncode == 0
    assert proc.wait(timeout=20) == 0
    assert not config.parent.joinpath(*SOCK).exists()
    assert not (config.parent / "hooks" / "paxm-hook.lock").exists()
    assert any("idle-flush-7781" in m["text"] for m in memories(config))


def test_inbox_is_drained_on_start(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    from paxm_core.capture import _inbox

    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    queue = config.parent / "hooks" / "capture.sqlite"
    raw = json.dumps({"session_id": "q1", "last_assistant_message": "drained-4410"}).encode()
    assert _inbox.append_raw(queue, "evt_" + "a" * 32, "claude", "turn_end", raw, time.time())
    assert _inbox.append_raw(queue, "evt_" + "b" * 32, "claude", "turn_end", b"\xff not json", time.time())
    start(config)
    assert send_control(config, "flush") is not None
    assert any("drained-4410" in m["text"] for m in memories(config))
    # an unusable payload renders nothing; it is consumed, not retried forever
    assert queue_rows(config, "SELECT state FROM capture_inbox ORDER BY event_id") == [("done",), ("done",)]


def test_cli_commands(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    paxm = [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config)]
    out = subprocess.run(
        paxm + ["__hook", "--target", "claude", "--event", "session_start"],
        input=fixture_bytes("claude_session_start.json"),
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0 and b"<paxm-session-identity" in out.stdout
    # the in-process hook queued the write and started a daemon to deliver it
    wait_for(lambda: config.parent.joinpath(*SOCK).exists())
    status = subprocess.run(paxm + ["__hook-control", "--status", "--json"], capture_output=True, timeout=60)
    assert json.loads(status.stdout)["pid"] == daemon_pid(config)
    down = subprocess.run(paxm + ["__hook-control", "--shutdown"], capture_output=True, timeout=60)
    assert down.returncode == 0
    assert not config.parent.joinpath(*SOCK).exists()
    assert any("Claude Code session started." in m["text"] for m in memories(config))
    again = subprocess.run(paxm + ["__hook-control", "--flush"], capture_output=True, timeout=60)
    assert again.returncode == 0 and b"not running" in again.stdout


def test_daemon_exits_when_its_socket_is_removed(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    proc = start(config)
    config.parent.joinpath(*SOCK).unlink()  # e.g. the config directory was deleted
    assert proc.wait(timeout=20) == 0
    assert not (config.parent / "hooks" / "paxm-hook.lock").exists()


def test_inbox_replay_applies_the_ownership_gate(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    def owned(config: Any) -> None:
        config.agents["claude"].integration.owner = "claude-plugin"

    config = write_config(tmp_path / "cfg", mutate=owned)
    daemon_cleanup.append(config)
    queue = config.parent / "hooks" / "capture.sqlite"
    from paxm_core.capture import _inbox
    from paxm_core.passive.client_core import append_inbox  # what the client calls when no daemon runs

    stop = {"session_id": "own", "last_assistant_message": "from-the-settings-hook-3391"}
    _inbox.append_raw(queue, "evt_" + "c" * 32, "claude", "turn_end", json.dumps(stop).encode(), time.time())
    stop = {"session_id": "own", "last_assistant_message": "from-the-plugin-hook-3392"}
    append_inbox(
        str(queue), "evt_" + "d" * 32, "claude", "turn_end@claude-plugin", json.dumps(stop).encode(), time.time()
    )
    start(config)
    assert send_control(config, "flush") is not None
    texts = " ".join(m["text"] for m in memories(config))
    assert "from-the-plugin-hook-3392" in texts and "from-the-settings-hook-3391" not in texts


def test_broken_config_keeps_events_and_prints_nothing(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\nproviders: [this is not a mapping\n")
    proc = run_client(config, "claude", "user_input", b'{"session_id": "b", "prompt": "kept while broken"}')
    assert proc.returncode == 0 and proc.stdout == b""
    log = config.parent / "hooks" / "paxm-hook-daemon.log"
    wait_for(lambda: log.exists() and "startup failed" in log.read_text())
    wait_for(lambda: not (config.parent / "hooks" / "paxm-hook.lock").exists() or daemon_pid(config) == 0)
    assert queue_rows(config, "SELECT event, state FROM capture_inbox") == [("user_input", "pending")]


def test_socket_path_too_long_for_af_unix(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    config = write_config(deep / "cfg")
    daemon_cleanup.append(config)
    assert len(str(config.parent.joinpath(*SOCK))) > 108
    start(config)
    out = run_client(config, "claude", "session_start", b'{"session_id": "long"}')
    assert out.returncode == 0 and b"<paxm-session-identity" in out.stdout
    assert send_control(config, "status") is not None


def test_config_change_restarts_the_daemon_with_the_new_config(tmp_path: Path) -> None:
    from paxm_core.config import load_config, save_config

    config = write_config(tmp_path / "cfg")
    proc = start(config)
    loaded = load_config(config)
    loaded.identity.user_id = "bob"
    save_config(loaded, config)
    assert proc.wait(timeout=20) == 0  # flushed and exited
    out = run_client(config, "claude", "session_start", b'{"session_id": "cfg"}')  # starts a new daemon
    assert out.returncode == 0
    try:
        wait_for(lambda: config.parent.joinpath(*SOCK).exists())
        again = run_client(config, "claude", "session_start", b'{"session_id": "cfg"}')
        assert b'"user_id":"bob"' in again.stdout
    finally:
        send_control(config, "shutdown")


def test_first_prompt_after_the_daemon_died_still_gets_its_memories(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    start(config)
    prompt = json.dumps({"session_id": "s1", "cwd": "/w", "prompt": "Decision: the staging cluster is plum-7781"})
    assert run_client(config, "claude", "user_input", prompt.encode()).returncode == 0
    stop = json.dumps({"session_id": "s1", "cwd": "/w", "last_assistant_message": "Noted plum-7781."})
    assert run_client(config, "claude", "turn_end", stop.encode()).returncode == 0
    assert send_control(config, "shutdown") is not None  # flushes, then the daemon is gone
    wait_for(lambda: not (config.parent / "hooks" / "paxm-hook.sock").exists(), timeout=10)

    ask = json.dumps({"session_id": "s2", "cwd": "/w", "prompt": "which staging cluster plum-7781"}).encode()
    # starts the daemon and waits for it: 1.5 s by default, longer here so a loaded CI machine's
    # slow daemon start-up does not turn "gets its memories" into a timing test
    answer = run_client(config, "claude", "user_input", ask, "--daemon-wait", "20", "--timeout", "25", timeout=40)
    assert answer.returncode == 0
    assert b'<paxm-recall version="1" mode="passive">' in answer.stdout and b"plum-7781" in answer.stdout
    # stored once: the inbox copy and the re-asked live request share one event id
    rows = queue_rows(config, "SELECT count(*) FROM capture_events WHERE session_key LIKE '%/session/s2'")
    assert rows == [(1,)]


def test_a_recall_stuck_in_a_provider_does_not_keep_the_daemon_alive(tmp_path: Path) -> None:
    stuck = tmp_path / "stuck-provider.sh"
    stuck.write_text("#!/bin/sh\nexec sleep 60\n")
    stuck.chmod(0o755)

    def add_stuck(config: Any) -> None:
        from paxm_core.api.provider_config import ProviderConfig
        from paxm_core.config.model import RouteConfig

        config.providers["stuck"] = ProviderConfig(type="jsonrpc", enabled=True, command=str(stuck), timeout=60.0)
        for name in ("passive", "passive_initial"):
            config.recall_profiles[name].providers.append(RouteConfig(name="stuck", required=False, timeout=60.0))

    config = write_config(tmp_path / "cfg", mutate=add_stuck)
    proc = start(config)
    prompt = json.dumps({"session_id": "x1", "cwd": "/w", "prompt": "anything at all"}).encode()
    assert run_client(config, "claude", "user_input", prompt, "--timeout", "1").returncode == 0
    started = time.monotonic()
    assert send_control(config, "shutdown") is not None
    proc.wait(timeout=15)  # the 60 s provider call is abandoned, not waited for
    assert time.monotonic() - started < 15


def test_the_started_daemon_imports_nothing_from_the_harness_working_directory(
    tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    """A cloned repository with a ``yaml.py`` (or ``paxm_core.py``) must not run inside the daemon."""
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "imported-from-project"
    for name in ("yaml", "json", "paxm_core", "httpx"):
        (project / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\nraise SystemExit(3)\n")
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--config", str(config), "--target", "claude", "--event"]
    ask = json.dumps({"session_id": "s1", "cwd": str(project), "prompt": "anything"}).encode()
    out = subprocess.run(argv + ["user_input"], input=ask, capture_output=True, timeout=30, cwd=project)
    assert out.returncode == 0
    wait_for(lambda: config.parent.joinpath(*SOCK).exists(), timeout=30)
    assert send_control(config, "ping") is not None
    assert not marker.exists(), marker.read_text()


def _daemon_with_ready_channel(config: Path) -> tuple[subprocess.Popen[bytes], Any]:
    import socket

    mine, theirs = socket.socketpair()
    proc = subprocess.Popen(
        [sys.executable, "-m", "paxm_core.passive.daemon", "--config", str(config), "--ready-fd", str(theirs.fileno())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(theirs.fileno(),),
    )
    theirs.close()
    STARTED.append(proc)
    mine.settimeout(60)
    return proc, mine


def test_the_ready_channel_says_listening_then_locked_to_a_second_daemon(
    tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    first, ready = _daemon_with_ready_channel(config)
    second, also = None, None
    try:
        assert ready.recv(1) == b"R"  # sent once the socket listens
        assert config.parent.joinpath(*SOCK).exists()
        assert ready.recv(1) == b""  # and the channel is closed: nothing more comes
        second, also = _daemon_with_ready_channel(config)
        assert also.recv(1) == b"L"  # another daemon holds the lock: the client waits for that one
        assert second.wait(timeout=60) != 0 and first.poll() is None
    finally:
        ready.close()
        if also is not None:
            also.close()


def test_a_daemon_that_cannot_start_ends_the_first_prompts_wait_at_once(
    tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    config.write_text("providers: [this is not a mapping\n")  # the daemon's start-up fails on it
    prompt = json.dumps({"session_id": "bad", "cwd": "/w", "prompt": "anything"}).encode()
    started = time.monotonic()
    answer = run_client(config, "claude", "user_input", prompt, "--daemon-wait", "30", "--timeout", "40", timeout=60)
    waited = time.monotonic() - started
    assert answer.returncode == 0 and answer.stdout == b""
    assert waited < 20, f"the hook waited {waited:.1f} s for a daemon that had already exited"
    # the prompt is not lost: it waits in the inbox for a daemon that can start
    assert [r[:2] for r in queue_rows(config, "SELECT target, event FROM capture_inbox")] == [("claude", "user_input")]


def test_session_state_reaches_the_disk_after_the_answer_without_another_request(
    tmp_path: Path, daemon_cleanup: list[Path]
) -> None:
    """The daemon writes session state behind (off the answer), and on its own once it is due."""
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    start(config)
    prompt = json.dumps({"session_id": "behind", "cwd": "/w", "prompt": "what is the cache TTL?"}).encode()
    assert run_client(config, "claude", "user_input", prompt).returncode == 0
    state = config.parent / "hooks" / "session_state.json"
    assert wait_for(lambda: state.exists() and "behind" in state.read_text(), timeout=15)
