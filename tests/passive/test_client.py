"""The real hook client process: allowed imports, fail-open paths, inbox fallback, exit code."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.servers import recv_line
from paxm_core.passive.client_command import hook_command, hook_command_line

from .conftest import CLIENT, control, daemon_pid, queue_rows, run_client, wait_for, write_config

#: the per-prompt path with a running daemon: C-level modules only
FAST_PATH_IMPORTS = "import _json, _socket, posix, sys, time"
#: the daemon-down path also loads ``capture/_inbox.py`` by path, with the C modules standing in
#: for its ``sqlite3``/``hashlib`` imports; that file uses ``from __future__ import annotations``
INBOX_PATH_IMPORTS = FAST_PATH_IMPORTS + ", os, _sha256, _sqlite3, __future__"


def imported_modules(stderr: bytes) -> set[str]:
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":
                names.add(name)
    return names


def baseline(code: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", "-c", code], capture_output=True, check=True)
    return imported_modules(proc.stderr)


@pytest.fixture(scope="module")
def fast_path_modules() -> set[str]:
    return baseline(FAST_PATH_IMPORTS) | {"client_core"}


@pytest.fixture(scope="module")
def inbox_path_modules() -> set[str]:
    return baseline(INBOX_PATH_IMPORTS) | {"client_core", "paxm_capture_inbox", "paxm_redact"}


class FakeDaemon:
    """A unix-socket server that answers like the daemon, hangs, or talks garbage.

    ``close`` wakes the serving thread and waits for it before the listener's descriptor is
    closed: a thread still blocked in ``accept`` on a closed descriptor can have that call
    restarted by the kernel (``ERESTARTSYS`` after a signal such as ``SIGCHLD``) on the same
    descriptor number, which by then names the next test's socket, whose connection the stale
    thread then steals.
    """

    def __init__(self, path: Path, behaviour: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.requests: list[dict[str, object]] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.behaviour = behaviour
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:  # shut down by close()
                return
            if self.stop.is_set():  # close()'s wake-up connection
                conn.close()
                return
            with conn:
                self.requests.append(json.loads(recv_line(conn)))
                if self.behaviour == "answer":
                    conn.sendall(b"PAXM-HOOK 1 19\nCONTEXT-FROM-DAEMONpaxm hook x\n")
                elif self.behaviour == "garbage":
                    conn.sendall(b"\x00\xffnot json")
                elif self.behaviour == "hang":
                    self.stop.wait(5)

    def close(self) -> None:
        self.stop.set()
        # shutdown makes a blocked accept fail at once (EINVAL); close only after the thread is
        # gone, so no call of it can ever run on a reused descriptor number
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # a platform that refuses to shut a listener down: wake it by connecting
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                wake.connect(self.sock.getsockname())
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "fake daemon thread did not stop"
        self.sock.close()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    # the client never reads the config file; these tests only need its directory
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir()
    path.write_text("version: 1\n")
    return path


@pytest.fixture
def fake(config: Path, request: pytest.FixtureRequest) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(config.parent / "hooks" / "paxm-hook.sock", request.param)
    yield daemon
    daemon.close()


@pytest.mark.parametrize("fake", ["answer"], indirect=True)
def test_daemon_up_path_prints_answer_with_allowed_imports_only(
    config: Path, fake: FakeDaemon, fast_path_modules: set[str]
) -> None:
    argv = [sys.executable, "-I", "-S", "-X", "importtime", str(CLIENT), "--config", str(config), "--target", "claude"]
    proc = subprocess.run(argv + ["--event", "user_input"], input=b'{"prompt": "hi"}', capture_output=True, timeout=20)
    assert proc.returncode == 0
    assert proc.stdout == b"CONTEXT-FROM-DAEMON\n"
    assert b"paxm hook x" in proc.stderr
    extra = imported_modules(proc.stderr) - fast_path_modules
    assert not extra, f"hook client imported modules beyond its allowed set: {sorted(extra)}"
    request = fake.requests[-1]
    assert request["target"] == "claude" and request["event"] == "user_input" and request["raw"] == '{"prompt": "hi"}'
    assert str(request["event_id"]).startswith("evt_") and len(str(request["event_id"])) == 36


def test_daemon_down_path_stores_in_inbox_with_allowed_imports_only(
    tmp_path: Path, inbox_path_modules: set[str], daemon_cleanup: list[Path]
) -> None:
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    argv = [sys.executable, "-I", "-S", "-X", "importtime", str(CLIENT), "--config", str(config)]
    payload = json.dumps({"session_id": "d1", "prompt": "down-path-marker-5512"}).encode()
    proc = subprocess.run(
        argv + ["--target", "claude", "--event", "user_input"], input=payload, capture_output=True, timeout=20
    )
    assert proc.returncode == 0 and proc.stdout == b""
    extra = imported_modules(proc.stderr) - inbox_path_modules
    assert not extra, f"hook client imported modules beyond its allowed set: {sorted(extra)}"
    rows = queue_rows(config, "SELECT target, event, raw FROM capture_inbox")
    assert rows == [("claude", "user_input", payload)] or rows[0][:2] == ("claude", "user_input")
    # the client started the daemon, which drains the inbox into a capture event
    wait_for(lambda: daemon_pid(config) and (config.parent / "hooks" / "paxm-hook.sock").exists())
    wait_for(lambda: queue_rows(config, "SELECT count(*) FROM capture_events")[0][0] == 1)
    assert queue_rows(config, "SELECT state FROM capture_inbox") == [("done",)]


def test_daemon_wait_zero_leaves_a_first_prompt_to_the_next_one(tmp_path: Path, daemon_cleanup: list[Path]) -> None:
    """``--daemon-wait 0``: the prompt is stored and the daemon started, but the hook does not wait."""
    config = write_config(tmp_path / "cfg")
    daemon_cleanup.append(config)
    payload = json.dumps({"session_id": "w0", "prompt": "no-wait-marker-3301"}).encode()
    proc = run_client(config, "claude", "user_input", payload, "--daemon-wait", "0")
    assert proc.returncode == 0 and proc.stdout == b""
    assert [r[:2] for r in queue_rows(config, "SELECT target, event FROM capture_inbox")] == [("claude", "user_input")]
    wait_for(lambda: daemon_pid(config) and (config.parent / "hooks" / "paxm-hook.sock").exists())
    # a value that is not a number keeps the default wait, and the hook still runs
    again = json.dumps({"session_id": "w0", "prompt": "no-wait-marker-3302"}).encode()
    assert run_client(config, "claude", "user_input", again, "--daemon-wait", "soon").returncode == 0


@pytest.mark.parametrize("fake", ["hang"], indirect=True)
def test_hung_daemon_never_holds_the_harness(config: Path, fake: FakeDaemon) -> None:
    started = time.monotonic()
    proc = run_client(config, "claude", "turn_end", b'{"last_assistant_message": "x"}', "--timeout", "0.5")
    assert time.monotonic() - started < 3.0
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"did not answer" in proc.stderr
    # the event is kept for the daemon to drain later, under the same event id
    (event_id,) = queue_rows(config, "SELECT event_id FROM capture_inbox")[0]
    assert event_id == fake.requests[0]["event_id"]


@pytest.mark.parametrize("fake", ["garbage"], indirect=True)
def test_garbage_answer_prints_nothing(config: Path, fake: FakeDaemon) -> None:
    proc = run_client(config, "claude", "user_input", b'{"prompt": "x"}')
    assert proc.returncode == 0 and proc.stdout == b""
    assert len(queue_rows(config, "SELECT event_id FROM capture_inbox")) == 1


def test_unwritable_hooks_dir_still_exits_zero(tmp_path: Path) -> None:
    blocked = tmp_path / "cfg"
    blocked.mkdir()
    (blocked / "hooks").write_text("a file where the hooks dir should be")
    proc = run_client(blocked / "config.yaml", "claude", "user_input", b"{}", env={**os.environ, "PATH": ""})
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"not captured" in proc.stderr


def test_hook_command_is_absolute_and_isolated(tmp_path: Path) -> None:
    argv = hook_command(tmp_path / "c.yaml", "claude", "UserPromptSubmit", mode="json", queue_path="~/q.sqlite")
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "paxm-hook"  # the fail-open guard
    argv = argv[4:]
    assert argv[0] == os.path.abspath(sys.executable) and os.path.isabs(argv[0])
    assert argv[1:3] == ["-I", "-S"] and argv[3] == str(CLIENT.resolve())
    assert argv[argv.index("--config") + 1] == str(tmp_path / "c.yaml")
    assert "--json" in argv and os.path.isabs(argv[argv.index("--queue") + 1])
    line = hook_command_line(tmp_path / "my dir" / "c.yaml", "claude", "Stop")
    assert "'" in line  # the space is quoted for the shell


def test_client_path_helpers_match_os_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from paxm_core.passive import client_core as client

    monkeypatch.chdir(tmp_path)
    for path in ("~/x/../y/c.yaml", "rel/./c.yaml", "/a//b/../c.yaml", "/c.yaml", "~"):
        assert client._abspath(path) == os.path.abspath(os.path.expanduser(path))
    monkeypatch.setenv("PAXM_CONFIG", "~/cfg/paxm.yaml")
    assert client.default_config_path() == os.path.expanduser("~/cfg/paxm.yaml")
    monkeypatch.delenv("PAXM_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert client.default_config_path() == str(tmp_path / "xdg" / "paxm" / "config.yaml")
    assert client.hooks_dir("/etc/paxm/config.yaml") == "/etc/paxm/hooks"


@pytest.mark.parametrize("fake", ["garbage"], indirect=True)
def test_plugin_owner_is_kept_with_an_inbox_event(config: Path, fake: FakeDaemon) -> None:
    env = {**os.environ, "PAXM_INTEGRATION_OWNER": "claude-plugin"}
    assert run_client(config, "claude", "Stop", b"{}", env=env).returncode == 0
    assert fake.requests[0]["owner"] == "claude-plugin"
    assert queue_rows(config, "SELECT target, event FROM capture_inbox") == [("claude", "Stop@claude-plugin")]


@pytest.mark.parametrize("fake", ["garbage"], indirect=True)
def test_stdin_that_never_closes_does_not_hang_the_hook(config: Path, fake: FakeDaemon) -> None:
    argv = [sys.executable, "-I", "-S", str(CLIENT), "--config", str(config), "--target", "claude", "--event", "Stop"]
    payload = b'{"last_assistant_message": "complete json, open pipe"}'
    started = time.monotonic()
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(payload)
        proc.stdin.flush()  # ...and never close stdin, like a misbehaving harness
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - started < 10
        assert proc.stdout.read() == b""
    # what arrived was sent and kept
    assert fake.requests[0]["raw"] == payload.decode()
    assert queue_rows(config, "SELECT raw FROM capture_inbox") == [(payload,)]


def test_hook_commands_installed_before_the_rename_still_run(config_path: Path) -> None:
    """``paxm_core/hooks/client.py`` (the pre-``passive`` path in old settings) runs the current client."""
    old = CLIENT.parent.parent / "hooks" / "client.py"
    argv = [sys.executable, "-I", "-S", str(old), "--config", str(config_path), "--target", "claude"]
    done = subprocess.run(
        [*argv, "--event", "turn_end"], input=b'{"session_id": "old"}', capture_output=True, timeout=30
    )
    try:
        assert done.returncode == 0 and b"can't open" not in done.stderr, done.stderr
        # it reached the real client, which started the daemon for this config
        wait_for(lambda: daemon_pid(config_path) and (config_path.parent / "hooks" / "paxm-hook.sock").exists())
    finally:
        from paxm_core.api.errors import PaxmError

        def stopped() -> bool:
            try:
                return control(config_path, "shutdown") is not None or not daemon_pid(config_path)
            except PaxmError:  # still starting: try again
                return False

        wait_for(stopped)
