"""The shell hook client (``client.sh``): the loopback fast path and every way it falls back.

Real subprocesses throughout: the installed command line run by ``/bin/sh -c`` as a harness
runs it, a real daemon (``python -m paxm_core.passive.daemon``), and for the cases a real
daemon cannot be made to produce on cue (a wrong greeting, a death right after reading the
request) a stand-in built from the daemon's own ``TcpListener`` and frame reader.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.passive.client_command import (
    FAIL_OPEN_GUARD,
    SHELL_GUARD,
    find_bash,
    hook_command,
    hook_command_line,
    is_paxm_hook,
    parse_hook_command,
    shell_client_path,
)
from paxm_core.passive.daemon import LOG_NAME, TcpListener, _read_shell_request, framed_reply

from .conftest import daemon_pid, stop_daemon, wait_for, write_config

PROMPT = {"session_id": "sh1", "cwd": "/tmp", "prompt": "hello from the shell", "hook_event_name": "UserPromptSubmit"}


@pytest.fixture(scope="module")
def bash() -> str:
    """A bash >= 5.1 with /dev/tcp: the shell client's tests fail in CI without one."""
    found = find_bash()
    if not found:
        if os.environ.get("CI"):
            pytest.fail("CI needs bash >= 5.1 with /dev/tcp for the shell hook client")
        pytest.skip("no bash >= 5.1 with /dev/tcp on this machine")
    return found


def shell_line(config: Path, event: str = "UserPromptSubmit", **kwargs: Any) -> str:
    line = hook_command_line(config, "claude", event, client="shell", **kwargs)
    assert shlex.split(line)[4] == str(shell_client_path()), "the shell form was not chosen"
    return line


def run_line(line: str, payload: bytes, timeout: float = 30.0, env: Any = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["/bin/sh", "-c", line], input=payload, capture_output=True, timeout=timeout, env=env)


def recording_python(tmp_path: Path, output: str = "FALLBACK") -> tuple[Path, Path]:
    """A stand-in interpreter that records its argv and stdin: proves a fallback ran, and with what."""
    log = tmp_path / "fallback.jsonl"
    script = tmp_path / "python"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "data = sys.stdin.buffer.read()\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        "    f.write(json.dumps({'argv': sys.argv[1:], 'stdin': data.decode('utf-8', 'surrogateescape')}) + '\\n')\n"
        f"sys.stdout.write({output!r})\n"
    )
    script.chmod(0o700)
    return script, log


def fallbacks(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


class FakeDaemon:
    """The daemon's real ``TcpListener`` and frame reader, with a scripted behaviour per connection."""

    def __init__(self, config: Path, behave: Callable[[socket.socket, TcpListener], None]) -> None:
        self.tcp = TcpListener(config.parent / "hooks" / "paxm-hook.tcp")
        self.behave = behave
        self.received: list[Any] = []
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._stop = False
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.tcp.sock.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.settimeout(10)
                try:
                    self.behave(conn, self.tcp)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self.tcp.close()
        self._thread.join(5)


@pytest.fixture
def fake_daemons() -> Iterator[list[FakeDaemon]]:
    made: list[FakeDaemon] = []
    yield made
    for fake in made:
        fake.close()


@pytest.fixture
def daemon_cleanup() -> Iterator[list[tuple[Path, subprocess.Popen[bytes]]]]:
    """Real daemons started here are shut down (and reaped) after the test."""
    started: list[tuple[Path, subprocess.Popen[bytes]]] = []
    yield started
    for config, proc in started:
        stop_daemon(config)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_real_daemon(config: Path, cleanup: list[tuple[Path, subprocess.Popen[bytes]]]) -> int:
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "paxm_core.passive.daemon", "--config", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    cleanup.append((config, proc))
    wait_for(lambda: (config.parent / "hooks" / "paxm-hook.tcp").exists(), timeout=60)
    return int(wait_for(lambda: daemon_pid(config), timeout=10))


def rows(config: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    path = config.parent / "hooks" / "capture.sqlite"
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def stored_prompts(config: Path, needle: str) -> int:
    """How many queued events or inbox rows carry ``needle`` (each counted once)."""
    events = rows(config, "SELECT count(*) FROM capture_events WHERE payload_json LIKE ?", f"%{needle}%")
    inbox = rows(
        config, "SELECT count(*) FROM capture_inbox WHERE CAST(raw AS TEXT) LIKE ? AND state != 'done'", f"%{needle}%"
    )
    return int(events[0][0] if events else 0) + int(inbox[0][0] if inbox else 0)


# -- the command forms ------------------------------------------------------------------------


def test_both_forms_are_recognised(tmp_path: Path, bash: str) -> None:
    config = tmp_path / "c.yaml"
    shell = hook_command(config, "claude", "Stop", client="shell")
    python = hook_command(config, "claude", "Stop", client="python")
    assert shell[:5] == [bash, "-c", SHELL_GUARD, "paxm-hook", str(shell_client_path())]
    assert python[:4] == ["/bin/sh", "-c", FAIL_OPEN_GUARD, "paxm-hook"]
    assert shell[5:] == python[4:]  # the same Python argv: the fallback runs exactly the old command
    for argv in (shell, python, shlex.join(shell), shlex.join(python)):
        hook = parse_hook_command(argv)
        assert hook is not None and hook.config == str(config) and hook.target == "claude"
        assert is_paxm_hook(argv, config, "claude") and not is_paxm_hook(argv, tmp_path / "other.yaml", "claude")
    parsed = parse_hook_command(shell)
    assert parsed is not None and parsed.shell == bash and parsed.shell_client == str(shell_client_path())
    assert parsed.files == (bash, str(shell_client_path()), parsed.interpreter, parsed.client)  # what doctor checks
    assert parse_hook_command(python).files == (parsed.interpreter, parsed.client)  # type: ignore[union-attr]


def test_no_usable_bash_or_a_switch_gives_the_python_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "bash-4.4"
    old.write_text("#!/bin/sh\n# a bash that fails the version probe\nexit 3\n")
    old.chmod(0o700)
    assert find_bash(str(old)) == ""
    monkeypatch.setenv("PAXM_HOOK_BASH", str(old))
    assert hook_command(tmp_path / "c.yaml", "claude", "Stop")[0] == "/bin/sh"
    monkeypatch.setenv("PAXM_HOOK_BASH", str(tmp_path / "missing-bash"))
    assert hook_command(tmp_path / "c.yaml", "claude", "Stop")[0] == "/bin/sh"
    monkeypatch.delenv("PAXM_HOOK_BASH")
    monkeypatch.setenv("PAXM_HOOK_CLIENT", "python")
    assert hook_command(tmp_path / "c.yaml", "claude", "Stop")[0] == "/bin/sh"


def test_a_removed_shell_client_exits_0_silently(tmp_path: Path, bash: str) -> None:
    argv = hook_command(tmp_path / "c.yaml", "claude", "UserPromptSubmit", client="shell")
    argv[4] = str(tmp_path / "gone" / "client.sh")  # pip uninstall paxm
    out = run_line(shlex.join(argv), json.dumps(PROMPT).encode())
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


# -- the fast path against a real daemon -------------------------------------------------------


def test_round_trip_through_a_real_daemon_starts_no_python(
    tmp_path: Path, bash: str, daemon_cleanup: list[tuple[Path, subprocess.Popen[bytes]]]
) -> None:
    config = write_config(tmp_path / "cfg")
    start_real_daemon(config, daemon_cleanup)
    tcp = config.parent / "hooks" / "paxm-hook.tcp"
    assert tcp.stat().st_mode & 0o777 == 0o600
    fake_python, log = recording_python(tmp_path)
    line = shell_line(config, python=str(fake_python))
    payload = json.dumps({**PROMPT, "prompt": "shell round trip marker-7f3a"}).encode()
    out = run_line(line, payload)
    assert (out.returncode, out.stderr) == (0, b"")
    assert fallbacks(log) == []  # answered by the daemon: no Python started
    # acknowledged only after COMMIT: the event is in the queue when the hook returns
    assert stored_prompts(config, "marker-7f3a") == 1
    port, client_token, daemon_token = tcp.read_text().split()
    # a client without the token gets no answer, and the tokens never reach the log
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as conn:
        conn.settimeout(5)
        assert conn.recv(200).split() == [b"PAXM-DAEMON", daemon_token.encode()]
        conn.sendall(b"PAXM-SH1 " + b"0" * 32 + b" evt_" + b"a" * 32 + b" 2 0 claude Stop text -\n{}")
        assert conn.recv(200) == b""
    stop_daemon(config)
    assert not tcp.exists()  # removed on a clean exit
    log_file = config.parent / "hooks" / LOG_NAME
    text = log_file.read_text() if log_file.exists() else ""
    assert client_token not in text and daemon_token not in text


def test_paxm_ignore_is_honoured_on_the_fast_path(
    tmp_path: Path, bash: str, daemon_cleanup: list[tuple[Path, subprocess.Popen[bytes]]]
) -> None:
    config = write_config(tmp_path / "cfg")
    start_real_daemon(config, daemon_cleanup)
    project = tmp_path / "project" / "sub"
    project.mkdir(parents=True)
    (tmp_path / "project" / ".paxm-ignore").write_text("")
    fake_python, log = recording_python(tmp_path)
    payload = json.dumps({**PROMPT, "cwd": str(project), "prompt": "keep out marker-91bc"}).encode()
    out = run_line(shell_line(config, python=str(fake_python)), payload)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert fallbacks(log) == [] and stored_prompts(config, "marker-91bc") == 0
    payload = json.dumps({**PROMPT, "cwd": str(tmp_path), "prompt": "let in marker-91bd"}).encode()
    assert run_line(shell_line(config, python=str(fake_python)), payload).returncode == 0
    assert stored_prompts(config, "marker-91bd") == 1


def test_large_payload_goes_to_python_intact(
    tmp_path: Path, bash: str, daemon_cleanup: list[tuple[Path, subprocess.Popen[bytes]]]
) -> None:
    config = write_config(tmp_path / "cfg")
    fake = FakeDaemon(config, lambda conn, tcp: conn.sendall(tcp.greeting))
    try:
        fake_python, log = recording_python(tmp_path)
        payload = json.dumps({**PROMPT, "prompt": "é" * 40_000 + "\n\n"}).encode()
        out = run_line(shell_line(config, python=str(fake_python)), payload)
        assert (out.returncode, out.stdout) == (0, b"FALLBACK")
        (call,) = fallbacks(log)
        assert call["stdin"].encode("utf-8", "surrogateescape") == payload
        assert "--no-daemon" not in call["argv"]  # nothing was sent: the daemon may still answer
    finally:
        fake.close()


def test_sigstopped_daemon_the_hook_returns_in_time_and_the_event_is_kept_once(
    tmp_path: Path, bash: str, daemon_cleanup: list[tuple[Path, subprocess.Popen[bytes]]]
) -> None:
    config = write_config(tmp_path / "cfg")
    pid = start_real_daemon(config, daemon_cleanup)
    os.kill(pid, signal.SIGSTOP)
    try:
        payload = json.dumps({**PROMPT, "prompt": "stopped daemon marker-5d2e"}).encode()
        started = time.monotonic()
        out = run_line(shell_line(config, timeout=3), payload)
        elapsed = time.monotonic() - started
        assert out.returncode == 0
        assert elapsed < 3.0, elapsed
        assert stored_prompts(config, "marker-5d2e") == 1  # in the inbox, by the Python fallback
    finally:
        os.kill(pid, signal.SIGCONT)
    # the resumed daemon drains the inbox: still stored once
    wait_for(lambda: rows(config, "SELECT count(*) FROM capture_inbox WHERE state = 'pending'") == [(0,)], timeout=30)
    assert stored_prompts(config, "marker-5d2e") == 1


# -- fallbacks against stand-in daemons --------------------------------------------------------


def test_no_tcp_file_falls_back_with_stdin_untouched(tmp_path: Path, bash: str) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    fake_python, log = recording_python(tmp_path)
    payload = json.dumps(PROMPT).encode()
    out = run_line(shell_line(config, python=str(fake_python)), payload)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"FALLBACK", b"")
    (call,) = fallbacks(log)
    assert call["stdin"].encode() == payload and "--no-daemon" not in call["argv"]


@pytest.mark.parametrize("greeting", [b"PAXM-DAEMON " + b"f" * 32 + b"\n", b"SSH-2.0-OpenSSH_9.2\r\n", b"", None])
def test_a_wrong_or_missing_greeting_sends_nothing(
    tmp_path: Path, bash: str, fake_daemons: list[FakeDaemon], greeting: bytes | None
) -> None:
    """A stranger's greeting, a wrong token, silence (a stopped daemon), a connection closed at once."""
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()

    def impostor(conn: socket.socket, tcp: TcpListener) -> None:
        if greeting is None:
            fake.received.append(b"")
            return  # closed at once
        if greeting:
            conn.sendall(greeting)
        conn.settimeout(3)
        data = b""
        try:
            while chunk := conn.recv(65536):
                data += chunk
        except TimeoutError:
            pass
        fake.received.append(data)

    fake = FakeDaemon(config, impostor)
    fake_daemons.append(fake)
    fake_python, log = recording_python(tmp_path)
    payload = json.dumps({**PROMPT, "prompt": "secret prompt"}).encode()
    started = time.monotonic()
    out = run_line(shell_line(config, python=str(fake_python), timeout=2), payload)
    assert (out.returncode, out.stdout) == (0, b"FALLBACK")
    assert time.monotonic() - started < 2.5
    wait_for(lambda: fake.received, timeout=10)
    assert fake.received == [b""]  # not one byte of the prompt went to the impostor
    (call,) = fallbacks(log)
    assert call["stdin"].encode() == payload
    # silence (a stopped daemon) skips the daemon in the fallback; a wrong token does not
    assert ("--no-daemon" in call["argv"]) == (greeting == b"")


def test_daemon_killed_mid_request_keeps_the_event_exactly_once(tmp_path: Path, bash: str) -> None:
    """A daemon that read the whole request and was SIGKILLed before answering."""
    config = write_config(tmp_path / "cfg")
    hooks = config.parent / "hooks"
    seen = tmp_path / "seen-event-id"
    script = tmp_path / "dying_daemon.py"
    script.write_text(
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from paxm_core.passive.daemon import TcpListener, _read_shell_request\n"
        f"tcp = TcpListener(Path({str(hooks / 'paxm-hook.tcp')!r}))\n"
        "print('ready', flush=True)\n"
        "conn, _ = tcp.sock.accept()\n"
        "conn.sendall(tcp.greeting)\n"
        "request = _read_shell_request(conn, tcp.client_token)\n"
        f"Path({str(seen)!r}).write_text(request['event_id'])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        payload = json.dumps({**PROMPT, "prompt": "killed mid-request marker-0c44"}).encode()
        out = run_line(shell_line(config), payload)
        assert out.returncode == 0
        assert proc.wait(10) == -signal.SIGKILL
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    event_id = seen.read_text()
    assert rows(config, "SELECT count(*) FROM capture_inbox WHERE event_id = ?", event_id) == [(1,)]
    ((raw,),) = rows(config, "SELECT raw FROM capture_inbox WHERE event_id = ?", event_id)
    assert json.loads(raw)["prompt"] == "killed mid-request marker-0c44"
    assert stored_prompts(config, "marker-0c44") == 1


def echo_daemon(reply: Callable[[dict[str, Any]], bytes], received: list[dict[str, Any]]) -> Any:
    def behave(conn: socket.socket, tcp: TcpListener) -> None:
        conn.sendall(tcp.greeting)
        request = _read_shell_request(conn, tcp.client_token)
        assert request is not None
        received.append(request)
        conn.sendall(reply(request))

    return behave


def test_output_with_newlines_and_utf8_is_byte_exact(tmp_path: Path, bash: str, fake_daemons: list[FakeDaemon]) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    outputs = iter(["<ctx>\n  zürich — 東京 🐝\n\n</ctx>\n\n", "no newline at the end", "  \\n %s %d $HOME `x`"])
    received: list[dict[str, Any]] = []
    fake = FakeDaemon(config, echo_daemon(lambda r: framed_reply({"ok": True, "output": next(outputs)}), received))
    fake_daemons.append(fake)
    fake_python, log = recording_python(tmp_path)
    line = shell_line(config, python=str(fake_python))
    expected = ["<ctx>\n  zürich — 東京 🐝\n\n</ctx>\n\n", "no newline at the end\n", "  \\n %s %d $HOME `x`\n"]
    for want in expected:
        out = run_line(line, json.dumps(PROMPT).encode())
        assert (out.returncode, out.stdout.decode("utf-8"), out.stderr) == (0, want, b"")
    assert fallbacks(log) == []
    assert [r["event_id"][:4] for r in received] == ["evt_"] * 3
    assert len({r["event_id"] for r in received}) == 3
    assert all(len(r["event_id"]) == 36 and int(r["event_id"][4:], 16) >= 0 for r in received)
    assert all(abs(r["captured_at"] - time.time()) < 60 for r in received)
    assert {(r["target"], r["event"], r["mode"], r["owner"]) for r in received} == {
        ("claude", "UserPromptSubmit", "text", "")
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=600))
def test_any_payload_without_nul_arrives_byte_exact(
    tmp_path: Path, bash: str, fake_daemons: list[FakeDaemon], text: str
) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir(exist_ok=True)
    if not fake_daemons:
        received: list[dict[str, Any]] = []
        fake_daemons.append(
            FakeDaemon(config, echo_daemon(lambda r: framed_reply({"ok": True, "output": r["raw"]}), received))
        )
        fake_daemons[0].received = received
    received = fake_daemons[0].received
    received.clear()
    out = run_line(shell_line(config), text.encode("utf-8"))
    assert out.returncode == 0
    (request,) = received
    assert request["raw"] == text
    assert out.stdout.decode("utf-8") == ("" if not text else text if text.endswith("\n") else text + "\n")


def test_a_stale_tcp_file_with_a_refused_port_falls_back(tmp_path: Path, bash: str) -> None:
    """What a SIGKILLed daemon leaves behind: its file, naming a port nobody listens on."""
    config = tmp_path / "cfg" / "config.yaml"
    (config.parent / "hooks").mkdir(parents=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (config.parent / "hooks" / "paxm-hook.tcp").write_text(f"{port} {'1' * 32} {'2' * 32}\n")
    fake_python, log = recording_python(tmp_path)
    payload = json.dumps(PROMPT).encode()
    out = run_line(shell_line(config, python=str(fake_python)), payload)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"FALLBACK", b"")
    (call,) = fallbacks(log)
    assert call["stdin"].encode() == payload and "--no-daemon" not in call["argv"]


def _sent_whole() -> int:
    """``SHELL_SENT_WHOLE`` of client.sh: the largest output read without a timeout."""
    for line in shell_client_path().read_text().splitlines():
        if line.startswith("SHELL_SENT_WHOLE="):
            return int(line.split("=", 1)[1].split()[0])
    raise AssertionError("SHELL_SENT_WHOLE not found in client.sh")


def test_outputs_around_the_no_timeout_bound_are_byte_exact(
    tmp_path: Path, bash: str, fake_daemons: list[FakeDaemon]
) -> None:
    """Both ways of reading the output (up to the bound without -t, beyond it with -t) give every byte."""
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    bound = _sent_whole()
    # byte lengths around the bound, multi-byte characters included (the client counts bytes)
    sizes = [bound - 1, bound, bound + 1, 3 * bound]
    outputs = ["ü" * ((n - 1) // 2) + "x" * ((n - 1) % 2) + "\n" for n in sizes]
    assert [len(o.encode()) for o in outputs] == sizes
    pending = iter(outputs)
    received: list[dict[str, Any]] = []
    fake = FakeDaemon(config, echo_daemon(lambda r: framed_reply({"ok": True, "output": next(pending)}), received))
    fake_daemons.append(fake)
    fake_python, log = recording_python(tmp_path)
    line = shell_line(config, python=str(fake_python))
    for want in outputs:
        out = run_line(line, json.dumps(PROMPT).encode())
        assert (out.returncode, out.stdout.decode("utf-8"), out.stderr) == (0, want, b"")
    assert fallbacks(log) == []
    assert len(received) == len(outputs)


def test_a_daemon_stalling_inside_a_large_output_cannot_hold_the_hook(
    tmp_path: Path, bash: str, fake_daemons: list[FakeDaemon]
) -> None:
    """Beyond the bound the output is read under the deadline: a stall mid-output falls back in time."""
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    size = 2 * _sent_whole()
    received: list[dict[str, Any]] = []

    def stall(conn: socket.socket, tcp: TcpListener) -> None:
        conn.sendall(tcp.greeting)
        request = _read_shell_request(conn, tcp.client_token)
        assert request is not None
        received.append(request)
        reply = framed_reply({"ok": True, "output": "y" * size})
        conn.sendall(reply[: len(reply) // 2])  # the header and half of the output, then nothing
        time.sleep(6)

    fake = FakeDaemon(config, stall)
    fake_daemons.append(fake)
    fake_python, log = recording_python(tmp_path)
    payload = json.dumps({**PROMPT, "prompt": "stall marker"}).encode()
    started = time.monotonic()
    out = run_line(shell_line(config, python=str(fake_python), timeout=1.5), payload)
    assert time.monotonic() - started < 3.0
    assert (out.returncode, out.stdout) == (0, b"FALLBACK")
    (call,) = fallbacks(log)
    # the request was sent: the fallback stores the same event id without asking the daemon
    assert call["stdin"].encode() == payload
    assert "--no-daemon" in call["argv"] and received[0]["event_id"] in call["argv"]
