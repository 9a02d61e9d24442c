"""The hook daemon: one per config directory, serving hook clients over a unix socket.

It owns everything that is slow to build -- config, plugins, providers, router, capture
queue, delivery worker, passive runtime and session state -- so the per-prompt hook client
only pays for a socket round trip.

Protocol (one JSON object each way per connection, request ends at newline or EOF):

* hook: ``{v, event_id, target, event, raw, owner, mode, captured_at}`` ->
  ``{ok, output, buffered, event_id, errors?}``; ``raw`` is the native payload as a string (an
  upstream-style JSON object is accepted too);
* control: ``{action: "flush" | "shutdown" | "status" | "ping"}`` -> ``{ok, flushed?, ...}``.

Lifecycle: the lock ``hooks/paxm-hook.lock`` (``flock``, holding the pid) is taken before a
stale socket is removed, so two daemons never fight over the socket; raw events left in the
inbox by clients that found no daemon are drained on start (and every few seconds); after
``idle_timeout`` seconds without requests the daemon flushes and exits.  On exit it removes
its lock and socket only if the paths still name the files it created (see
:func:`unlink_if_same`): a newer daemon's never go.

Access: the unix socket is the only way in (no TCP or UDP socket is ever opened).  It is 0600
in the 0700 hooks directory, and every connection whose peer runs as another uid
(``SO_PEERCRED``) is closed before anything is read from it.
"""

from __future__ import annotations

import _socket
import errno
import fcntl
import functools
import json
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from paxm_core.api.errors import PaxmError, QueueError
from paxm_core.api.json import JSONObject
from paxm_core.passive.client_core import LOCK_NAME, LOCKED, READY, REPLY_MAGIC, SOCKET_NAME, connect_unix
from paxm_core.private_files import open_private, private_dir

if TYPE_CHECKING:
    # imported by HookDaemon._open: control clients import this module too
    from paxm_core.capture.model import FlushReport
    from paxm_core.capture.queue import CaptureQueue
    from paxm_core.capture.worker import DeliveryWorker
    from paxm_core.passive.processor import HookProcessor
    from paxm_core.passive.workers import Workers
    from paxm_core.runtime import Runtime
    from paxm_core.telemetry.recorder import Telemetry

__all__ = ["DEFAULT_IDLE_TIMEOUT", "BackgroundRecorder", "DaemonLock", "HookDaemon", "main"]

DEFAULT_IDLE_TIMEOUT = 30 * 60.0
#: how long shutdown waits for requests still being answered
SHUTDOWN_GRACE = 2.0
#: how long a new daemon waits for the lock of one that has closed its socket (shutting down)
LOCK_HANDOVER = 10.0
LOCK_POLL = 0.02
MAX_REQUEST = 24 * 1024 * 1024
INBOX_DRAIN_INTERVAL = 5.0
CONNECTION_TIMEOUT = 30.0
LOG_NAME = "paxm-hook-daemon.log"
MAX_LOG_BYTES = 256 * 1024


#: the loopback-port file earlier versions wrote beside the socket; removed at start
RETIRED_TCP_NAME = "paxm-hook.tcp"


def file_identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of ``path`` itself (a symlink is not followed), ``None`` if absent."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def unlink_if_same(path: Path, identity: tuple[int, int] | None) -> bool:
    """Unlink ``path`` only if it is still the file ``identity`` names (not a newer daemon's); whether it was."""
    if identity is None or file_identity(path) != identity:
        return False
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def unlink_stale_socket(path: Path, is_kind: Callable[[int], bool] = stat.S_ISSOCK) -> bool:
    """Clear ``path`` for a new socket: ``True`` if nothing is there (any more).

    Only a socket (``is_kind`` of its mode) owned by this user is removed (a killed daemon's); a
    symlink, any other kind of file, or another user's file is left alone and ``False`` returned.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    if not is_kind(st.st_mode) or st.st_uid != os.geteuid():
        return False
    return unlink_if_same(path, (st.st_dev, st.st_ino)) or file_identity(path) is None


def remove_retired_files(hooks_dir: Path) -> None:
    """Remove the ``paxm-hook.tcp`` an earlier version left: a regular file of this user's only."""
    try:
        unlink_stale_socket(hooks_dir / RETIRED_TCP_NAME, stat.S_ISREG)
    except OSError:
        pass


def check_private_dir(path: Path) -> None:
    """Create ``path`` 0700 if it is missing, then insist it is a real directory of this user's, 0700.

    The socket inside is the daemon's only way in.  An existing directory is never chmod-ed:
    anything else is refused, with the fix in the message.
    """
    try:
        if file_identity(path) is None:
            private_dir(path)  # missing: created 0700 with any missing parents
        try:
            st: os.stat_result | None = os.lstat(path)
        except FileNotFoundError:
            st = None
    except OSError as exc:
        raise PaxmError(f"cannot use {path}: {exc}") from None
    if st is not None and stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
        if not st.st_mode & 0o077:
            return
        raise PaxmError(f"{path} is open to other users; make it private: chmod 700 {path}")
    raise PaxmError(f"{path} must be a directory owned by this user with mode 0700")


#: ``struct ucred`` (Linux) and ``struct xucred`` (macOS, BSD): where the uid sits, the size to ask for
_UCRED = (4, 12)
_XUCRED = (4, 76)
#: ``SOL_LOCAL`` / ``LOCAL_PEERCRED`` on macOS and the BSDs (``_socket`` does not name them)
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 1


def peer_uid(conn: _socket.socket) -> int | None:
    """The effective uid of the process at the other end of a unix socket, as the kernel saw it.

    ``None`` when the platform offers no way to ask (the caller treats that as a stranger).
    """
    try:
        if hasattr(_socket, "SO_PEERCRED"):
            at, size = _UCRED
            creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, size)
        elif sys.platform == "darwin" or sys.platform.startswith("freebsd"):
            at, size = _XUCRED
            creds = conn.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, size)
        else:
            return None
    except OSError:
        return None
    if len(creds) < at + 4:
        return None
    return int.from_bytes(creds[at : at + 4], sys.byteorder)


class DaemonLock:
    """An exclusive ``flock`` on ``<hooks>/paxm-hook.lock`` holding the owner's pid (it dies with its process)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        #: (st_dev, st_ino) of the file this process locked: release unlinks only that file
        self._identity: tuple[int, int] | None = None

    def acquire(self, wait_while: Callable[[], bool] | None = None, timeout: float = 0.0) -> None:
        """Take the lock or raise :class:`PaxmError` naming the running daemon's pid.

        :param wait_while: while the lock is held and this returns true, keep trying (for at
            most ``timeout`` seconds) instead of giving up at once.
        """
        private_dir(self.path.parent)
        give_up = time.monotonic() + timeout
        attempts = 0
        while attempts < 5:
            fd = open_private(self.path, os.O_RDWR)  # 0600 when new, never through a link
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if wait_while is not None and time.monotonic() < give_up and wait_while():
                    time.sleep(LOCK_POLL)
                    continue
                raise PaxmError(f"hook daemon already running with pid {self.read_pid() or 'unknown'}") from None
            attempts += 1
            st = os.fstat(fd)
            if file_identity(self.path) != (st.st_dev, st.st_ino):
                os.close(fd)  # the previous owner unlinked it between our open and flock
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._fd = fd
            self._identity = (st.st_dev, st.st_ino)
            return
        raise PaxmError("hook daemon lock kept changing; try again")

    def read_pid(self) -> int:
        """The pid written in the lock file (0 if none)."""
        try:
            return int(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def release(self) -> None:
        """Unlink (only the file this process locked) and unlock, in that order."""
        if self._fd is None:
            return
        unlink_if_same(self.path, self._identity)
        os.close(self._fd)
        self._fd = None
        self._identity = None


class HookDaemon:
    """The daemon process: lock, socket, request threads, inbox drain, idle exit.

    :param config_path: the config file; its directory holds ``hooks/``.
    :param idle_timeout: seconds without requests before flush-and-exit.
    :param socket_path: override for the socket (default ``<configdir>/hooks/paxm-hook.sock``).
    :param ready_fd: the hook client's end of a ready channel (``--ready-fd``): told when the
        daemon listens, or that another daemon holds the lock; closed in every case.
    """

    def __init__(
        self,
        config_path: str | Path | None,
        *,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        socket_path: str | Path | None = None,
        ready_fd: int | None = None,
    ) -> None:
        from paxm_core.config import resolve_config_path

        self.config_path = Path(resolve_config_path(str(config_path) if config_path else None)).expanduser().absolute()
        self.hooks_dir = self.config_path.parent / "hooks"
        self.socket_path = Path(socket_path) if socket_path else self.hooks_dir / SOCKET_NAME
        self.lock = DaemonLock(self.hooks_dir / LOCK_NAME)
        self.idle_timeout = idle_timeout
        self.started_at = time.time()
        self.requests = 0
        self._last_activity = time.monotonic()
        self._inflight = 0
        self._state = threading.Lock()
        self._stop = threading.Event()
        # the listener is a bare ``_socket.socket``: the ``socket`` module (its enums,
        # ``selectors``; about 3 ms) is never needed on the way to the first answer
        self._listener: _socket.socket | None = None
        #: (st_dev, st_ino) of the socket file this daemon bound: the only one it may unlink
        self._socket_identity: tuple[int, int] | None = None
        self._uid = os.geteuid()
        self._dropped_logged = False
        self._deferred_lock = threading.Lock()
        self._deferred_started = False
        self._flushed_for_shutdown = False
        self.processor: HookProcessor | None = None
        self.runtime: Runtime | None = None
        self.queue: CaptureQueue | None = None
        self.worker: DeliveryWorker | None = None
        self.recorder: BackgroundRecorder | None = None
        self._ready_fd = ready_fd

    # -- setup ---------------------------------------------------------------------------

    def _open(self) -> None:
        from paxm_core.capture import CaptureQueue, DeliveryWorker, default_queue_path, routes_from_write_profiles
        from paxm_core.config import load_config
        from paxm_core.passive.processor import HookProcessor
        from paxm_core.plugins import installed_provider_catalog, shared_plugin_manager
        from paxm_core.runtime import Runtime

        # the first prompt waits for this: the parsed YAML is cached, telemetry is built later
        config = load_config(self.config_path, provider_types=installed_provider_catalog(), parse_cache=self.hooks_dir)
        self.runtime = Runtime.load(config=config, plugin_manager=shared_plugin_manager(), telemetry=None)
        config = self.runtime.config
        cq = config.capture_queue
        self.queue = CaptureQueue(
            default_queue_path(config),
            routes=routes_from_write_profiles(config.write_profiles),
            retry_min=cq.retry_min or 0,
            max_attempts=cq.max_attempts or 0,
        )
        runtime = self.runtime
        self.recorder = BackgroundRecorder(lambda: _build_telemetry(runtime))
        record = self.recorder.wrap("record")
        on_recall = self.recorder.wrap("on_recall")
        # its loop starts after the first answer (_start_deferred)
        self.worker = DeliveryWorker(
            self.queue, self.runtime.router, cq, config.write_profiles, telemetry=SimpleNamespace(record=record)
        )
        self.processor = HookProcessor(
            self.runtime,
            self.queue,
            worker=self.worker,
            session_state_path=self.hooks_dir / "session_state.json",
            session_write_behind=1.0,
            confirm_delivery=True,
            record=record,
            on_recall=on_recall,
        )

    def _listen(self) -> _socket.socket:
        check_private_dir(self.socket_path.parent)
        # we hold the lock, so no live daemon owns what is at the path: a socket of this user's
        # is a killed daemon's and goes; anything else is not ours to remove
        if not unlink_stale_socket(self.socket_path):
            raise PaxmError(f"{self.socket_path} is not a socket this user created; remove it and try again")
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            connect_unix(listener, str(self.socket_path), bind=True)
        finally:
            os.umask(old)
        listener.listen(64)
        listener.settimeout(1.0)
        self._socket_identity = file_identity(self.socket_path)
        return listener

    def _same_user(self, conn: _socket.socket) -> bool:
        """Whether the peer of ``conn`` runs as this daemon's user (kernel credentials); the first drop is logged."""
        uid = peer_uid(conn)
        if uid == self._uid:
            return True
        if not self._dropped_logged:
            self._dropped_logged = True
            self._log(f"dropped a connection from uid {uid if uid is not None else 'unknown'} (not this user)")
        return False

    # -- serving -------------------------------------------------------------------------

    def _tell_client(self, message: bytes) -> None:
        """Send the waiting hook client ``message`` on the ready channel, once, and close it."""
        fd, self._ready_fd = self._ready_fd, None
        if fd is None:
            return
        try:
            os.write(fd, message)
        except OSError:
            pass  # the client gave up waiting: it polls or moves on
        finally:
            os.close(fd)

    def run(self) -> int:
        """Serve until idle, shutdown or a signal; returns the exit code."""
        try:
            self._take_lock()
            config_stamp = self._start()
            from paxm_core.passive.workers import Workers

            try:
                self._serve_until_exit(Workers("paxm-hook-conn"), config_stamp)
            finally:
                self._stop.set()
                self._close_listener()
                # Requests still running are past their write (it commits before recall); give
                # them a moment to answer, but a recall stuck in a provider that ignores its
                # deadline must not hold the daemon's exit (the process ends with os._exit).
                self._wait_inflight(SHUTDOWN_GRACE)
                self._shutdown()
        finally:
            self._tell_client(b"")  # a start-up that failed: the waiting client stops at once
            self.lock.release()  # (a lock never taken is left alone)
        return 0

    def _take_lock(self) -> None:
        """Check the hooks directory and take the daemon lock; the waiting client hears why not."""
        # the lock, the log and the socket live here: refuse a directory that is not private
        check_private_dir(self.hooks_dir)
        try:
            # A holder without a socket is shutting down (it closes its listener first, then
            # flushes) or still starting: wait for it rather than leave no daemon behind, so a
            # hook that arrived during a shutdown still gets a daemon once the old one exits.
            self.lock.acquire(wait_while=lambda: not self.socket_path.exists(), timeout=LOCK_HANDOVER)
        except PaxmError:
            self._tell_client(LOCKED)  # another daemon is starting or running: wait for that one
            raise

    def _start(self) -> tuple[int, int, int] | None:
        """Open everything, drain the inbox, listen and tell the client; returns the config's stamp."""
        remove_retired_files(self.hooks_dir)
        config_stamp = self._config_stamp()  # before loading: an edit during start-up counts
        try:
            self._open()
            self._drain()
            self._listener = self._listen()
        except Exception as exc:
            self._log(f"startup failed: {exc}")
            raise
        self._tell_client(READY)
        if self._last_start_failed():
            # doctor reports the last start-up error until a start succeeds
            self._log("started")
        return config_stamp

    def _serve_until_exit(self, workers: Workers, config_stamp: tuple[int, int, int] | None) -> None:
        """Serve connections on ``workers`` until stopped, idle, the config changes or the socket goes."""
        # The delivery loop starts once the first answer has left (see _after_answer), or
        # after a second without a connection.
        last_drain = time.monotonic()
        while not self._stop.is_set():
            try:
                # set by _start; read every pass because a shutdown control clears it (after setting _stop)
                conn = _accept(self._listener)  # type: ignore[arg-type]
            except TimeoutError:
                conn = None
            except OSError:
                if self._stop.is_set():
                    break
                raise
            now = time.monotonic()
            if conn is not None:
                if not self._same_user(conn):
                    conn.close()  # another user: nothing read, nothing answered
                    continue
                with self._state:
                    self._inflight += 1
                    self._last_activity = now
                workers.run(functools.partial(self._serve, conn))
                continue
            self._start_deferred()
            if self.processor is not None:
                self.processor.flush_state_due()  # a second without a connection
            if self._config_stamp() != config_stamp:
                # a new config (paxm setup, an edit) takes effect with the next daemon
                self._log("config changed: flushing and exiting")
                break
            if now - last_drain >= INBOX_DRAIN_INTERVAL:
                last_drain = now
                if self._socket_identity is None or file_identity(self.socket_path) != self._socket_identity:
                    # hooks dir deleted or socket replaced: no client can reach us
                    self._log("socket removed: exiting")
                    break
                self._drain()
            with self._state:
                idle = self._inflight == 0 and now - self._last_activity >= self.idle_timeout
            if idle:
                self._log("idle timeout: flushing and exiting")
                break

    def _wait_inflight(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            with self._state:
                if self._inflight == 0:
                    return
            time.sleep(0.02)
        self._log(f"shutdown: {self._inflight} request(s) still running after {grace:g}s; not waiting")

    def _config_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.config_path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _drain(self) -> None:
        assert self.processor is not None
        try:
            self.processor.drain_inbox()
        except Exception as exc:
            self._log(f"inbox drain failed: {exc}")

    def _serve(self, conn: _socket.socket) -> None:
        counted = False
        held = None
        try:
            conn.settimeout(CONNECTION_TIMEOUT)
            request = _read_request(conn)
            if not request.get("action") and self.recorder is not None:
                held = self.recorder  # telemetry waits until this answer has left
                held.hold()
            response = self._dispatch(request)
            with self._state:
                # counted before the answer leaves, so a status asked right after sees it
                self.requests += 1
                counted = True
            self._answer(conn, request, response)
        except Exception as exc:
            try:
                conn.sendall(json.dumps({"ok": False, "error": str(exc)}).encode() + b"\n")
            except OSError:
                pass
        finally:
            conn.close()
            if held is not None:
                held.release()
            with self._state:
                self._inflight -= 1
                self._last_activity = time.monotonic()
                if not counted:
                    self.requests += 1

    def _answer(self, conn: _socket.socket, request: Mapping[str, object], response: Mapping[str, object]) -> None:
        """Send ``response``, close, then do what only records (the client reads to EOF: it waits for
        whatever runs before ``close``; only the ledger update goes first, for the next prompt)."""
        event_id = str(response.get("event_id") or "")
        processor = self.processor if event_id and not request.get("action") else None
        try:
            if request.get("reply") == "framed":
                conn.sendall(framed_reply(response))
            else:
                conn.sendall(json.dumps(response, ensure_ascii=False).encode("utf-8") + b"\n")
        except OSError:
            if processor is not None:
                processor.undelivered(event_id)  # the client gave up: what it did not get stays ungiven
            raise
        if processor is not None:
            processor.delivered(event_id)
        conn.close()  # the client is answered: now let signals, telemetry and delivery run
        if processor is not None:
            processor.count_signals(event_id)
        self._after_answer()

    def _after_answer(self) -> None:
        """Once a client has its answer: let delivery and telemetry run (never before it)."""
        if self.processor is not None:
            self.processor.wake_worker()
            self.processor.flush_state_due()
        if self.recorder is not None:
            self.recorder.start_sink()
        self._start_deferred()

    def _dispatch(self, request: JSONObject) -> JSONObject:
        assert self.processor is not None
        action = str(request.get("action") or "")
        if not action:
            return self.processor.handle_hook(request)
        if action == "ping":
            return {"ok": True, "pid": os.getpid()}
        if action == "status":
            return {"ok": True, **self.status()}
        if action in ("flush", "shutdown"):
            timeout = request.get("timeout")
            seconds = float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else None
            # a flush leaves live turns whole; shutdown seals them so nothing waits on a dead daemon
            seal_open = action == "shutdown" or request.get("seal_open") is True
            report = self._flush(seconds, seal_open=seal_open)
            if action == "shutdown":
                self._flushed_for_shutdown = True  # the exit path need not flush (and wait) again
                self._stop.set()
                self._close_listener()
            # "ok" says the action ran; whether everything was delivered is in the report, which
            # the CLI judges exactly as it judges its own flush when no daemon runs.
            if report is None:
                return {"ok": True, "delivered_all": True}
            return {"ok": True, "delivered_all": report.ok, "flush": report.to_json(), "flushed": report.delivered}
        return {"ok": False, "error": f"unknown action {action!r}"}

    def status(self) -> JSONObject:
        """The daemon's own status (shown by ``paxm queue status``)."""
        with self._state:
            inflight, last = self._inflight, self._last_activity
        return {
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "config": str(self.config_path),
            "started_at": datetime.fromtimestamp(self.started_at, UTC).isoformat().replace("+00:00", "Z"),
            "uptime_seconds": round(time.time() - self.started_at, 3),
            "requests": self.requests,
            "inflight": inflight,
            "idle_seconds": round(time.monotonic() - last, 3),
            "idle_timeout_seconds": self.idle_timeout,
        }

    def _flush(self, timeout: float | None = None, *, seal_open: bool = False) -> FlushReport | None:
        self._drain()
        # the daemon's own loop delivers (a flush that started one itself would stop it after)
        self._start_deferred()
        if self.worker is None:
            return None
        if timeout is None:
            return self.worker.flush(seal_open=seal_open)
        return self.worker.flush(timeout, seal_open=seal_open)

    def _start_deferred(self) -> None:
        """Start the delivery loop, once, after the first answer (never once the daemon is stopping)."""
        with self._deferred_lock:
            if self._deferred_started or self._stop.is_set():
                return
            self._deferred_started = True
            if self.worker is not None:
                self.worker.start()

    def _close_listener(self) -> None:
        with self._deferred_lock:
            self._deferred_started = True  # a delivery loop not started yet never starts now
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.close()
            finally:
                # only the socket this daemon bound: after the hooks directory was removed and
                # set up again, the path may name a newer daemon's socket
                unlink_if_same(self.socket_path, self._socket_identity)

    def _shutdown(self) -> None:
        try:
            if not self._flushed_for_shutdown:
                # idle timeout or a signal: seal live turns too, so none waits for a next daemon
                self._flush(seal_open=True)
        except Exception as exc:
            self._log(f"final flush failed: {exc}")
        for name in ("worker", "processor", "recorder", "queue", "runtime"):
            target = getattr(self, name)
            if target is None:
                continue
            try:
                target.stop() if name == "worker" else target.close()
            except Exception as exc:
                self._log(f"closing {name} failed: {exc}")

    def stop(self) -> None:
        """Ask the serving loop to finish (used by signal handlers and tests)."""
        self._stop.set()

    def _last_start_failed(self) -> bool:
        try:
            with open(self.hooks_dir / LOG_NAME, encoding="utf-8", errors="replace") as handle:
                lines = [line for line in handle if "startup failed" in line or line.rstrip().endswith(" started")]
        except OSError:
            return False
        return bool(lines) and "startup failed" in lines[-1]

    def _log(self, message: str) -> None:
        path = self.hooks_dir / LOG_NAME
        try:
            if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
                path.replace(path.with_suffix(".log.1"))
            fd = open_private(path, os.O_WRONLY | os.O_APPEND)  # 0600 when new, never through a link
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(f"{datetime.now(UTC).isoformat()} pid={os.getpid()} {message}\n")
        except OSError:
            pass


def framed_reply(response: Mapping[str, object]) -> bytes:
    """``PAXM-HOOK <ok> <n>\\n`` + n bytes of output + error lines: the client needs no JSON parser."""
    output = str(response.get("output") or "").encode("utf-8", "replace")
    tail = "".join(f"paxm hook {message}\n" for message in response_errors(response)).encode("utf-8", "replace")
    ok = 1 if response.get("ok") else 0
    return REPLY_MAGIC + f" {ok} {len(output)}\n".encode() + output + tail


def response_errors(response: Mapping[str, object]) -> list[str]:
    """A hook response's error lines: its ``errors``, then ``failed: <error>`` when it failed."""
    reported = response.get("errors")
    errors = [str(e) for e in reported] if isinstance(reported, list) else []
    if response.get("error"):
        errors.append(f"failed: {response['error']}")
    return errors


def _accept(listener: _socket.socket) -> _socket.socket:
    """``socket.accept`` for a bare ``_socket.socket``: the new, blocking connection (``TimeoutError`` if none)."""
    fd, _ = listener._accept()  # type: ignore[attr-defined]
    return _socket.socket(listener.family, listener.type, listener.proto, fileno=fd)


def _read_request(conn: _socket.socket) -> JSONObject:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_REQUEST:
            raise QueueError("hook request too large")
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    data = b"".join(chunks).strip()
    try:
        value = json.loads(data) if data else None
    except ValueError as exc:
        raise QueueError(f"invalid hook request: {exc}") from None
    if not isinstance(value, dict):
        raise QueueError("invalid hook request: expected a JSON object")
    return value


def _build_telemetry(runtime: Runtime) -> Telemetry | None:
    """The runtime's telemetry sink (``None`` when not installed or it cannot start)."""
    from paxm_core.runtime import _load_telemetry

    telemetry = _load_telemetry(runtime.config)
    if telemetry is not None:
        runtime.tools.telemetry = telemetry  # what a runtime built with telemetry would hold
    return telemetry


#: how long the recorder waits for the first answered hook before building the sink anyway
SINK_START_DELAY = 3.0
#: longest a queued call waits for hook answers in flight (:meth:`BackgroundRecorder.hold`)
HOLD_LIMIT = 2.0


#: one queued sink call: (method name, arguments, keyword arguments)
_Call = tuple[str, tuple[object, ...], dict[str, object]]

#: most events :class:`BackgroundRecorder` hands its sink's ``record_many`` in one call
RECORD_BATCH = 1000
#: while outcomes stream in, how long (seconds) a batch waits for more before it is written
RECORD_LINGER = 0.05


class BackgroundRecorder:
    """Runs telemetry calls on one background thread, off the hook's request path.

    The sink is built after the first answer (:meth:`start_sink`) or :data:`SINK_START_DELAY`;
    calls wait in the queue until then.  :meth:`wrap` turns a sink method name into a queueing
    stand-in.

    :param factory: builds the sink (``None``: no telemetry); or pass a ready-made ``sink``.
    """

    def __init__(self, factory: Callable[[], object] | None = None, *, sink: object = None) -> None:
        self._factory = factory
        self._sink = sink
        self._go = threading.Event()
        if factory is None:
            self._go.set()
        #: set while no hook answer is being prepared (see :meth:`hold`)
        self._idle = threading.Event()
        self._idle.set()
        self._holds = 0
        self._holds_lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="paxm-hook-telemetry", daemon=True)
        self._thread.start()

    def wrap(self, fn: str) -> Callable[..., None]:
        """A function with the arguments of the sink's method ``fn`` that queues the call."""

        def queued(*args: object, **kwargs: object) -> None:
            self._queue.put((fn, args, kwargs))

        return queued

    def start_sink(self) -> None:
        """Let the thread build the sink now (the daemon calls this after answering a hook)."""
        self._go.set()

    def hold(self) -> None:
        """A hook answer is being prepared: queued calls wait until :meth:`release` (at most :data:`HOLD_LIMIT`).

        Holds nest, one per request in flight.
        """
        with self._holds_lock:
            self._holds += 1
            self._idle.clear()

    def release(self) -> None:
        """End one :meth:`hold`; the thread runs again once none is left."""
        with self._holds_lock:
            self._holds -= 1
            if not self._holds:
                self._idle.set()

    def _run(self) -> None:
        self._go.wait(SINK_START_DELAY)
        if self._factory is not None:
            try:
                self._sink = self._factory()
            except Exception:  # telemetry never breaks the daemon
                self._sink = None
        many = getattr(self._sink, "record_many", None)
        taken: list[_Call | None] = []  # calls taken from the queue, not yet run
        backlog = False  # the last batch had company: records are arriving in a stream
        while True:
            call = taken.pop(0) if taken else self._queue.get()
            if call is None:
                return
            self._idle.wait(HOLD_LIMIT)
            fn, args, kwargs = call
            try:
                event = self._event(call)
                if event is not None and callable(many):
                    # the events waiting go as one batch; while a stream lasts, it waits up to
                    # RECORD_LINGER for more (a lone event is written at once)
                    events = [event]
                    until = time.monotonic() + RECORD_LINGER if backlog else 0.0
                    while len(events) < RECORD_BATCH:
                        try:
                            left = until - time.monotonic()
                            following = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
                        except queue.Empty:
                            break
                        more = self._event(following)
                        if more is None:
                            taken.append(following)  # runs next, in order
                            break
                        events.append(more)
                    backlog = len(events) > 1
                    self._idle.wait(HOLD_LIMIT)  # a hook answer started while the batch gathered
                    many(events)
                    continue
                target = getattr(self._sink, fn, None)
                if callable(target):
                    target(*args, **kwargs)
            except Exception:  # telemetry never breaks the daemon
                pass

    def _event(self, call: _Call | None) -> object:
        """The event ``call`` records (``record``, or ``on_recall`` via the sink's ``recall_event``) if it can
        join a ``record_many`` batch; else ``None``."""
        if call is None:
            return None
        fn, args, kwargs = call
        if fn == "record" and len(args) == 1 and not kwargs:
            return args[0]
        build = getattr(self._sink, "recall_event", None) if fn == "on_recall" and not args else None
        if not callable(build):
            return None
        try:
            return build(**kwargs)
        except Exception:
            return None

    def close(self, timeout: float = 5.0) -> None:
        """Finish queued calls and stop the thread."""
        self._go.set()
        self._idle.set()
        self._queue.put(None)
        self._thread.join(timeout)


def main(argv: list[str] | None = None) -> int:
    """``python -m paxm_core.passive.daemon --config C [--idle-timeout S] [--socket P]``."""
    import argparse
    import signal

    from paxm_core.duration import parse_duration

    parser = argparse.ArgumentParser(prog="paxm-hook-daemon")
    parser.add_argument("--config", "-c", default=None)
    parser.add_argument("--idle-timeout", default=None)
    parser.add_argument("--socket", default=None)
    parser.add_argument("--ready-fd", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ready_fd is not None:
        try:
            os.set_inheritable(args.ready_fd, False)  # for the client only, never a provider's child
        except OSError:
            args.ready_fd = None
    idle = parse_duration(args.idle_timeout) if args.idle_timeout else DEFAULT_IDLE_TIMEOUT
    daemon = HookDaemon(args.config, idle_timeout=idle, socket_path=args.socket, ready_fd=args.ready_fd)
    signal.signal(signal.SIGTERM, lambda *_: daemon.stop())
    signal.signal(signal.SIGINT, lambda *_: daemon.stop())
    try:
        return daemon.run()
    except PaxmError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def exit_now(code: int) -> None:
    """Leave the process without waiting for threads (a recall stuck in a provider): all is committed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
