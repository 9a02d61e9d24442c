"""The hook socket: the daemon's only way in, for its own user only, and never a successor's files.

Multi-user threats run as the real second user ``nobody`` (these tests run as root), with
``/usr/bin/python3`` (the test venv's interpreter may sit where ``nobody`` cannot read it).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paxm_contracttest.harness import require
from paxm_core.api.errors import PaxmError
from paxm_core.passive.control import daemon_status, send_control
from paxm_core.passive.daemon import (
    LOG_NAME,
    DaemonLock,
    check_private_dir,
    file_identity,
    remove_retired_files,
    unlink_stale_socket,
)

from .conftest import daemon_pid, dumps, queue_rows, run_client, write_config
from .conftest import start_daemon as start

NOBODY = 65534
NOBODY_PYTHON = "/usr/bin/python3"


def _needs_nobody() -> None:
    if os.geteuid() != 0 or not Path(NOBODY_PYTHON).exists():
        require("needs root and /usr/bin/python3 to act as the user nobody")


def as_nobody(script: str, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    """Run ``script`` with the system Python as the real user ``nobody``."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [NOBODY_PYTHON, "-I", "-c", script, *args],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )


@pytest.fixture
def shared_config() -> Iterator[Path]:
    """A config whose directories ``nobody`` may traverse (0755), so only the hooks dir guards the socket."""
    base = Path(tempfile.mkdtemp(prefix="paxm-sock-", dir="/tmp"))
    try:
        base.chmod(0o755)
        config = write_config(base / "cfg")
        config.parent.chmod(0o755)
        yield config
    finally:
        try:
            send_control(base / "cfg" / "config.yaml", "shutdown", timeout=20)
        except Exception:
            pass
        shutil.rmtree(base, ignore_errors=True)


_PROBE = r"""
import json, os, socket, sys
hooks = sys.argv[1]
sock_path = os.path.join(hooks, "paxm-hook.sock")
result = {}
def attempt(name, fn):
    try:
        result[name] = fn()
    except OSError as exc:
        result[name] = type(exc).__name__
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(sock_path)
        s.sendall(b'{"action": "status"}\n')
        s.shutdown(socket.SHUT_WR)
        return "answered" if s.recv(65536) else "closed"
    finally:
        s.close()
attempt("connect", connect)
attempt("list", lambda: str(len(os.listdir(hooks))))
attempt("stat", lambda: str(os.stat(sock_path).st_mode))
attempt("create", lambda: os.close(os.open(os.path.join(hooks, "x.sock"), os.O_CREAT | os.O_WRONLY, 0o666)) or "ok")
attempt("replace", lambda: os.rename(os.path.join(hooks, "x.sock"), sock_path) or "ok")
attempt("lock", lambda: os.close(os.open(os.path.join(hooks, "paxm-hook.lock"), os.O_RDONLY)) or "ok")
print(json.dumps(result))
"""


def _start_for_a_second_user(config: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """The daemon of ``config`` (whose folder ``nobody`` may enter) and its hooks folder; skips without root."""
    _needs_nobody()
    return start(config), config.parent / "hooks"


def test_another_user_can_neither_reach_nor_occupy_the_socket(shared_config: Path) -> None:
    config = shared_config
    proc, hooks = _start_for_a_second_user(config)
    sock = hooks / "paxm-hook.sock"
    assert proc.poll() is None
    assert hooks.stat().st_mode & 0o777 == 0o700 and sock.stat().st_mode & 0o777 == 0o600
    probe = as_nobody(_PROBE, str(hooks))
    out, err = probe.communicate(timeout=60)
    assert probe.returncode == 0, err
    # no prompt or answer can be read, no text injected, nothing placed at (or beside) the socket
    assert json.loads(out) == dict.fromkeys(("connect", "list", "stat", "create", "replace", "lock"), "PermissionError")
    assert send_control(config, "ping") is not None  # and the daemon serves its user as before
    assert daemon_status(config) is not None


_HOLD = r"""
import json, os, socket, sys
path, marker = sys.argv[1], sys.argv[2]
held = []
for _ in range(32):  # more connections than the daemon has request threads
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    held.append(s)
raw = json.dumps({"session_id": "x", "cwd": "/w", "prompt": marker})
hook = {"v": 2, "event_id": "evt_" + "0" * 32, "target": "claude", "event": "user_input", "raw": raw}
for s, request in ((held[0], {"action": "status"}), (held[1], hook)):
    try:
        s.sendall(json.dumps(request).encode() + b"\n")
    except OSError:
        pass  # already closed by the daemon
print("ready", flush=True)
sys.stdin.read()  # hold every connection until the test is done with the daemon
answers = []
for s in held:
    try:
        answers.append(len(s.recv(65536)))
    except OSError:
        answers.append(0)  # reset: closed unread
print(sum(answers))
"""


def test_the_daemon_drops_another_users_connection_unread_even_if_modes_were_loosened(shared_config: Path) -> None:
    config = shared_config
    proc, hooks = _start_for_a_second_user(config)
    sock = hooks / "paxm-hook.sock"
    # someone loosened the modes (a chmod by hand, a backup restore): the uid check still holds
    hooks.chmod(0o711)
    sock.chmod(0o666)
    marker = "injected-by-nobody-" + os.urandom(4).hex()
    holder = as_nobody(_HOLD, str(sock), marker, stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready", holder.stderr
        started = time.monotonic()
        status = send_control(config, "status", timeout=10)  # no denial of service
        assert status is not None and status["pid"] == proc.pid
        assert time.monotonic() - started < 5
    finally:
        out, err = holder.communicate("", timeout=60)
    assert holder.returncode == 0, err
    assert out.split() == ["ready", "0"] or out.strip() == "0"  # not one byte answered
    assert marker not in json.dumps(queue_rows(config, "SELECT * FROM capture_inbox"))
    assert "dropped a connection from uid 65534" in (hooks / LOG_NAME).read_text()


def _listening_inet_inodes(pid: int) -> set[str]:
    """Inodes of the TCP/UDP sockets (any state) in ``pid``'s network namespace."""
    inodes: set[str] = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{name}").read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        inodes.update(line.split()[9] for line in lines if len(line.split()) > 9)
    return inodes


def _socket_inodes(pid: int) -> set[str]:
    found: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found


def test_the_daemon_has_no_tcp_or_udp_socket(tmp_path: Path) -> None:
    if not Path("/proc/self/net/tcp").exists():
        pytest.skip("needs Linux /proc")
    config = write_config(tmp_path / "cfg")
    proc = start(config)
    payload = dumps({"session_id": "t1", "cwd": "/w", "prompt": "hello"})
    assert run_client(config, "claude", "user_input", payload).returncode == 0
    time.sleep(2.0)  # past the first answer and the idle second: whatever starts late has started
    assert proc.poll() is None
    mine = _socket_inodes(proc.pid)
    assert mine  # the unix listener at least
    assert not mine & _listening_inet_inodes(proc.pid)
    assert not (config.parent / "hooks" / "paxm-hook.tcp").exists()


def test_a_daemon_exiting_late_leaves_its_successors_lock_and_socket(tmp_path: Path) -> None:
    """The hooks directory is removed and set up again while daemon A runs; B starts; A stops."""
    config = write_config(tmp_path / "cfg")
    hooks = config.parent / "hooks"
    lock, sock = hooks / "paxm-hook.lock", hooks / "paxm-hook.sock"
    first = start(config)
    assert daemon_pid(config) == first.pid
    shutil.rmtree(hooks)
    second = start(config)
    assert second.poll() is None and daemon_pid(config) == second.pid
    identities = (file_identity(lock), file_identity(sock))
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=60) == 0
    assert (file_identity(lock), file_identity(sock)) == identities  # B's files, untouched
    status = send_control(config, "status", timeout=10)
    assert status is not None and status["pid"] == second.pid
    paxm = [sys.executable, "-c", "from paxm_core.cli import main; main()", "--config", str(config)]
    out = subprocess.run(paxm + ["queue", "status", "--json"], capture_output=True, text=True, timeout=60)
    daemon = json.loads(out.stdout)["daemon"]
    assert daemon["running"] is True and daemon["pid"] == second.pid


def test_a_lock_released_after_its_path_was_reused_leaves_the_new_lock(tmp_path: Path) -> None:
    path = tmp_path / "hooks" / "paxm-hook.lock"
    old = DaemonLock(path)
    old.acquire()
    path.unlink()  # the hooks directory was cleared while the old daemon ran
    new = DaemonLock(path)
    new.acquire()  # a new file: not locked by anyone
    taken = file_identity(path)
    old.release()
    assert file_identity(path) == taken
    new.release()
    assert not path.exists()  # its own file goes


def test_only_a_stale_socket_of_this_user_is_cleared_from_the_socket_path(tmp_path: Path) -> None:
    path = tmp_path / "paxm-hook.sock"
    assert unlink_stale_socket(path)  # nothing there
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # a killed daemon's socket
    assert unlink_stale_socket(path) and not path.exists()
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    path.symlink_to(target)
    assert not unlink_stale_socket(path)  # a symlink: never followed, never removed
    assert path.is_symlink() and target.read_text() == "keep"
    path.unlink()
    path.write_text("a file")
    assert not unlink_stale_socket(path) and path.read_text() == "a file"
    path.unlink()
    if os.geteuid() == 0:
        foreign = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        foreign.bind(str(path))
        foreign.close()
        os.lchown(path, NOBODY, NOBODY)
        assert not unlink_stale_socket(path) and path.is_socket()  # another user's


def test_the_daemon_refuses_a_socket_path_it_did_not_create(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    hooks = config.parent / "hooks"
    hooks.mkdir(mode=0o700)
    target = tmp_path / "victim"
    target.write_text("keep")
    (hooks / "paxm-hook.sock").symlink_to(target)
    proc = start(config)
    assert proc.wait(timeout=60) == 1
    assert (hooks / "paxm-hook.sock").is_symlink() and target.read_text() == "keep"
    assert "is not a socket this user created" in (hooks / LOG_NAME).read_text()
    assert not (hooks / "paxm-hook.lock").exists()  # released on the way out


def test_the_hooks_directory_must_be_a_private_directory_of_this_user(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    own.chmod(0o755)
    with pytest.raises(PaxmError, match="chmod 700"):
        check_private_dir(own)  # ours but open: refused as found, never chmod-ed
    assert own.stat().st_mode & 0o777 == 0o755
    own.chmod(0o700)
    check_private_dir(own)
    check_private_dir(tmp_path / "new" / "hooks")  # created 0700
    assert (tmp_path / "new" / "hooks").stat().st_mode & 0o777 == 0o700
    link = tmp_path / "link"
    link.symlink_to(own)
    with pytest.raises(PaxmError):
        check_private_dir(link)
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        foreign.chmod(0o755)
        os.chown(foreign, NOBODY, NOBODY)
        with pytest.raises(PaxmError):
            check_private_dir(foreign)
        assert foreign.stat().st_mode & 0o777 == 0o755  # refused as found, not chmod-ed


def test_a_hooks_directory_another_user_owns_is_refused(tmp_path: Path) -> None:
    _needs_nobody()
    config = write_config(tmp_path / "cfg")
    hooks = config.parent / "hooks"
    hooks.mkdir(mode=0o700)
    os.chown(hooks, NOBODY, NOBODY)  # e.g. created first by that user in a shared directory
    proc = start(config)
    assert proc.wait(timeout=60) == 1
    assert os.listdir(hooks) == []  # no lock, no log, no socket written into it


def test_a_retired_port_file_is_removed_only_if_it_is_this_users_regular_file(tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir(mode=0o700)
    retired = hooks / "paxm-hook.tcp"
    target = tmp_path / "target"
    target.write_text("keep")
    retired.symlink_to(target)
    remove_retired_files(hooks)
    assert retired.is_symlink() and target.read_text() == "keep"  # never followed, never removed
    retired.unlink()
    if os.geteuid() == 0:
        retired.write_text("12345 a b\n")
        os.chown(retired, NOBODY, NOBODY)
        remove_retired_files(hooks)
        assert retired.exists()  # not this user's
        retired.unlink()
    retired.write_text("12345 a b\n")
    remove_retired_files(hooks)
    assert not retired.exists()


def test_the_daemon_removes_a_port_file_an_earlier_version_left(tmp_path: Path) -> None:
    config = write_config(tmp_path / "cfg")
    hooks = config.parent / "hooks"
    hooks.mkdir(mode=0o700)
    (hooks / "paxm-hook.tcp").write_text("40000 " + "1" * 32 + " " + "2" * 32 + "\n")
    proc = start(config)
    assert proc.poll() is None
    assert not (hooks / "paxm-hook.tcp").exists()
