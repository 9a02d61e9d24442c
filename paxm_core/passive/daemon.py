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
``idle_timeout`` seconds without requests the daemon flushes and exits.
"""

from __future__ import annotations

import _socket
import errno
import fcntl
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paxm_core.errors import PaxmError, QueueError
from paxm_core.passive.client_core import (
    LOCK_NAME,
    LOCKED,
    MAX_SOCKET_PATH,
    READY,
    REPLY_MAGIC,
    SOCKET_NAME,
    TCP_NAME,
)
from paxm_core.private_files import private_dir

if TYPE_CHECKING:
    import socket

    # imported by HookDaemon._open: the daemon process pauses the garbage collector (main)
    # before the bulk of its start-up imports happen
    from paxm_core.passive.processor import HookProcessor
    from paxm_core.passive.workers import WorkerPool

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "BackgroundRecorder",
    "DaemonLock",
    "HookDaemon",
    "HookProcessor",
    "main",
    "pause_gc",
    "resume_gc",
]

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


def __getattr__(name: str) -> Any:
    if name == "HookProcessor":  # re-exported, imported on first use (see the imports above)
        from paxm_core.passive.processor import HookProcessor

        return HookProcessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_gc_paused = False


def pause_gc() -> None:
    """Hold the cyclic garbage collector while the daemon starts (:func:`main` calls it first).

    Start-up builds the objects of some 250 modules and almost none of them become garbage,
    yet the collector ran about 45 times over them: about 5% of the CPU time between the
    daemon's spawn and its first answer (``benchmarks/hook_bench.py``'s start-up probe).
    """
    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def resume_gc() -> None:
    """End :func:`pause_gc` once the daemon can answer (idempotent).

    What start-up built is moved to the permanent generation (``gc.freeze``): it lives as long
    as the daemon, and later collections need not walk it again.
    """
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.freeze()
        gc.enable()


class DaemonLock:
    """An exclusive ``flock`` on ``<hooks>/paxm-hook.lock`` holding the owner's pid.

    ``flock`` dies with its process, so a SIGKILLed daemon never leaves a lock that blocks the
    next one; the inode check after locking closes the race with a concurrent release.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, wait_while: Callable[[], bool] | None = None, timeout: float = 0.0) -> None:
        """Take the lock or raise :class:`PaxmError` naming the running daemon's pid.

        :param wait_while: while the lock is held and this returns true, keep trying (for at
            most ``timeout`` seconds) instead of giving up at once.
        """
        private_dir(self.path.parent)
        give_up = time.monotonic() + timeout
        attempts = 0
        while attempts < 5:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
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
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the previous owner unlinked it between our open and flock
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._fd = fd
            return
        raise PaxmError("hook daemon lock kept changing; try again")

    def read_pid(self) -> int:
        """The pid written in the lock file (0 if none)."""
        try:
            return int(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def release(self) -> None:
        """Unlink and unlock (unlink first, so a waiter never locks a file about to vanish)."""
        if self._fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self._fd)
        self._fd = None


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
        # the unix listener is a bare ``_socket.socket``: the ``socket`` module (its enums,
        # ``selectors``; about 3 ms) is imported only by the loopback listener, after the
        # first answer
        self._listener: _socket.socket | None = None
        self._socket_inode = 0
        self.tcp_path = self.hooks_dir / TCP_NAME
        self._tcp: TcpListener | None = None
        self._deferred_lock = threading.Lock()
        self._deferred_started = False
        self._pool: WorkerPool | None = None
        self.processor: HookProcessor | None = None
        self.runtime: Any = None
        self.queue: Any = None
        self.worker: Any = None
        self.recorder: BackgroundRecorder | None = None
        self._ready_fd = ready_fd
        self._path_cached = False

    # -- setup ---------------------------------------------------------------------------

    def _open(self) -> None:
        from paxm_core.capture import CaptureQueue, DeliveryWorker, default_queue_path, routes_from_write_profiles
        from paxm_core.config import load_config
        from paxm_core.passive.processor import HookProcessor
        from paxm_core.plugins import installed_provider_catalog, shared_plugin_manager
        from paxm_core.runtime import Runtime

        # The first prompt after the daemon was down waits for this: the parsed YAML is cached
        # in the hooks dir, harness integrations are imported when their first hook arrives,
        # the runtime shares the plugin manager config validation built, and telemetry is
        # built by the recorder's thread once that hook is answered.
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
        # its loop starts after the first answer (_start_deferred): its first pass (seal, claim,
        # deliver a backlog) would compete with that answer for the interpreter
        self.worker = DeliveryWorker(
            self.queue, self.runtime.router, cq, config.write_profiles, telemetry=_QueuedSink(record)
        )
        self.processor = HookProcessor(
            self.runtime,
            self.queue,
            worker=self.worker,
            session_state_path=self.hooks_dir / "session_state.json",
            session_write_behind=1.0,
            defer_notify=True,
            record=record,
            on_recall=on_recall,
        )

    def _listen(self) -> _socket.socket:
        private_dir(self.socket_path.parent)
        try:
            self.socket_path.unlink()  # safe: we hold the lock, so no live daemon owns it
        except FileNotFoundError:
            pass
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            if len(str(self.socket_path).encode()) <= MAX_SOCKET_PATH:
                listener.bind(str(self.socket_path))
            else:  # too long for AF_UNIX: bind by name from inside the directory
                cwd = os.getcwd()
                os.chdir(self.socket_path.parent)
                try:
                    listener.bind(self.socket_path.name)
                finally:
                    os.chdir(cwd)
        finally:
            os.umask(old)
        listener.listen(64)
        listener.settimeout(1.0)
        self._socket_inode = os.stat(self.socket_path).st_ino
        return listener

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
            # A holder without a socket is shutting down (it closes its listener first, then
            # flushes) or still starting: wait for it rather than leave no daemon behind, so a
            # hook that arrived during a shutdown still gets a daemon once the old one exits.
            self.lock.acquire(wait_while=lambda: not self.socket_path.exists(), timeout=LOCK_HANDOVER)
        except PaxmError:
            self._tell_client(LOCKED)  # another daemon is starting or running: wait for that one
            raise
        except BaseException:
            self._tell_client(b"")
            raise
        try:
            config_stamp = self._config_stamp()  # before loading: an edit during start-up counts
            try:
                self._open()
            except Exception as exc:
                self._log(f"startup failed: {exc}")
                raise
            assert self.processor is not None
            self._drain()
            self._listener = self._listen()
            self._tell_client(READY)
            resume_gc()  # started: from here on the collector runs as usual
            if self._last_start_failed():
                # doctor reports the last start-up error until a start succeeds
                self._log("started")
            from paxm_core.passive.workers import WorkerPool  # not at module import: main() pauses the GC after it

            pool = self._pool = WorkerPool(8, "paxm-hook-conn")
            # The delivery loop and the loopback listener (the shell client's way in) start
            # once the first answer has left (see _after_answer), or after a second without a
            # connection: the client that started this daemon asks over the unix socket.
            last_drain = time.monotonic()
            try:
                while not self._stop.is_set():
                    try:
                        conn = _accept(self._listener)
                    except TimeoutError:
                        conn = None
                    except OSError:
                        if self._stop.is_set():
                            break
                        raise
                    now = time.monotonic()
                    if conn is not None:
                        with self._state:
                            self._inflight += 1
                            self._last_activity = now
                        pool.submit(self._serve, conn)
                        continue
                    self._start_deferred()
                    if self._config_stamp() != config_stamp:
                        # a new config (paxm setup, an edit) takes effect with the next daemon
                        self._log("config changed: flushing and exiting")
                        break
                    if now - last_drain >= INBOX_DRAIN_INTERVAL:
                        last_drain = now
                        if not self._socket_is_ours():
                            # hooks dir deleted or socket replaced: no client can reach us
                            self._log("socket removed: exiting")
                            break
                        self._drain()
                    with self._state:
                        idle = self._inflight == 0 and now - self._last_activity >= self.idle_timeout
                    if idle:
                        self._log("idle timeout: flushing and exiting")
                        break
            finally:
                self._stop.set()
                self._close_listener()
                # Requests still running are past their write (it commits before recall); give
                # them a moment to answer, but a recall stuck in a provider that ignores its
                # deadline must not hold the daemon's exit (the process ends with os._exit).
                pool.shutdown(cancel_pending=True)
                self._wait_inflight(SHUTDOWN_GRACE)
                self._shutdown()
        finally:
            self._tell_client(b"")  # a start-up that failed: the waiting client stops at once
            resume_gc()  # a start-up that failed leaves no paused collector behind
            self.lock.release()
        return 0

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

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.socket_path).st_ino == self._socket_inode
        except OSError:
            return False

    def _drain(self) -> None:
        assert self.processor is not None
        try:
            self.processor.drain_inbox()
        except Exception as exc:
            self._log(f"inbox drain failed: {exc}")

    def _serve(self, conn: _socket.socket) -> None:
        counted = False
        try:
            conn.settimeout(CONNECTION_TIMEOUT)
            request = _read_request(conn)
            response = self._dispatch(request)
            with self._state:
                # counted before the answer leaves, so a status asked right after sees it
                self.requests += 1
                counted = True
            if request.get("reply") == "framed":
                conn.sendall(framed_reply(response))
            else:
                conn.sendall(json.dumps(response, ensure_ascii=False).encode("utf-8") + b"\n")
            conn.close()  # the client is answered: now let delivery run
            self._after_answer()
        except Exception as exc:
            try:
                conn.sendall(json.dumps({"ok": False, "error": str(exc)}).encode() + b"\n")
            except OSError:
                pass
        finally:
            conn.close()
            self._request_done(counted)

    def _after_answer(self) -> None:
        """Once a client has its answer: let delivery and telemetry run (never before it)."""
        if self.processor is not None:
            self.processor.wake_worker()
        if self.recorder is not None:
            self.recorder.start_sink()
        self._start_deferred()
        if not self._path_cached:
            # for the next daemon's start without ``site`` (see daemon_path); off the first answer
            self._path_cached = True
            from paxm_core.passive.daemon_path import write_path_cache

            write_path_cache(self.hooks_dir)

    def _request_done(self, counted: bool) -> None:
        """Account for a finished request (socket or TCP); ``counted`` if it was counted already."""
        with self._state:
            self._inflight -= 1
            self._last_activity = time.monotonic()
            if not counted:
                self.requests += 1

    def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
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
            return {"ok": True, "delivered_all": bool(getattr(report, "ok", True)), **_flush_json(report)}
        return {"ok": False, "error": f"unknown action {action!r}"}

    def status(self) -> dict[str, Any]:
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

    def _flush(self, timeout: float | None = None, *, seal_open: bool = False) -> Any:
        self._drain()
        # the daemon's own loop delivers (a flush that started one itself would stop it after)
        self._start_deferred()
        if self.worker is None:
            return None
        if timeout is None:
            return self.worker.flush(seal_open=seal_open)
        return self.worker.flush(timeout, seal_open=seal_open)

    # -- the loopback TCP listener (the shell client's way in) ----------------------------

    def _start_deferred(self) -> None:
        """Start, once, what the first answer does not need: the delivery loop and the loopback listener.

        Called after an answer, from the serving loop when a second passes without a
        connection, and before a flush; never once the daemon is stopping.
        """
        if self._deferred_started:
            return
        with self._deferred_lock:
            if self._deferred_started or self._stop.is_set():
                return
            self._deferred_started = True
            if self.worker is not None:
                self.worker.start()
            if self._pool is not None:
                self._start_tcp(self._pool)

    def _start_tcp(self, pool: WorkerPool) -> None:
        """Listen on ``127.0.0.1:<random port>`` too and publish it in ``paxm-hook.tcp``.

        Best effort: a machine without IPv4 loopback simply keeps the unix socket only (the
        shell client then finds no file and runs the Python client).  Called with
        ``_deferred_lock`` held, so :meth:`_close_listener` never misses a listener being built.
        """
        try:
            self._tcp = TcpListener(self.tcp_path)
        except OSError as exc:
            self._log(f"loopback listener not started: {exc}")
            return

        def accept_loop(tcp: TcpListener) -> None:
            while not self._stop.is_set():
                try:
                    conn, _ = tcp.sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return  # closed by _close_listener
                with self._state:
                    self._inflight += 1
                    self._last_activity = time.monotonic()
                try:
                    pool.submit(self._serve_tcp, conn, tcp)
                except RuntimeError:  # the pool is shutting down
                    conn.close()
                    with self._state:
                        self._inflight -= 1

        threading.Thread(target=accept_loop, args=(self._tcp,), name="paxm-hook-tcp", daemon=True).start()

    def _serve_tcp(self, conn: socket.socket, tcp: TcpListener) -> None:
        """One shell-client request: greet with the daemon token, check the client token, answer framed."""
        counted = False
        try:
            conn.settimeout(CONNECTION_TIMEOUT)
            conn.sendall(tcp.greeting)
            request = _read_shell_request(conn, tcp.client_token)
            if request is None:
                return  # not our client: no answer, nothing logged (tokens never are)
            from paxm_core.passive.client_core import opted_out, payload_directory

            if opted_out(payload_directory(request["raw"].encode("utf-8"))):
                response: dict[str, Any] = {"ok": True, "output": ""}  # the project keeps paxm out
            else:
                response = self._dispatch(request)
            with self._state:
                self.requests += 1
                counted = True
            conn.sendall(framed_reply(response))
            conn.close()
            self._after_answer()
        except Exception as exc:
            try:
                conn.sendall(framed_reply({"ok": False, "error": str(exc)}))
            except OSError:
                pass
        finally:
            conn.close()
            self._request_done(counted)

    def _close_listener(self) -> None:
        with self._deferred_lock:
            self._deferred_started = True  # a listener not started yet never starts now
            tcp, self._tcp = self._tcp, None
        if tcp is not None:
            tcp.close()
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.close()
            finally:
                try:
                    self.socket_path.unlink()
                except FileNotFoundError:
                    pass

    def _shutdown(self) -> None:
        try:
            if not getattr(self, "_flushed_for_shutdown", False):
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
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(f"{datetime.now(UTC).isoformat()} pid={os.getpid()} {message}\n")
        except OSError:
            pass


def framed_reply(response: dict[str, Any]) -> bytes:
    """The hook client's reply format: ``PAXM-HOOK <ok> <n>\\n`` + n bytes of output + error lines.

    Framed rather than JSON so the client needs no JSON parser on the per-prompt path.
    """
    output = str(response.get("output") or "").encode("utf-8", "replace")
    errors = [str(e) for e in response.get("errors") or ()]
    if response.get("error"):
        errors.append(f"failed: {response['error']}")
    tail = "".join(f"paxm hook {message}\n" for message in errors).encode("utf-8", "replace")
    ok = 1 if response.get("ok") else 0
    return REPLY_MAGIC + f" {ok} {len(output)}\n".encode() + output + tail


#: first word of the shell client's request header line
SHELL_MAGIC = b"PAXM-SH1"
#: first word of the daemon's greeting on the loopback port
GREETING_MAGIC = b"PAXM-DAEMON"
MAX_HEADER = 4096


class TcpListener:
    """The loopback listener and its ``paxm-hook.tcp`` file (``<port> <client token> <daemon token>``).

    Both tokens are 128 random bits, new for every daemon start.  The daemon speaks first with
    its token, so a client that read a stale file never sends a prompt to whatever process now
    owns the port; a request without the client token is dropped unanswered.  The file is 0600
    in the 0700 hooks directory (written to a temporary name, then renamed) and removed on a
    clean exit if it is still this daemon's.
    """

    def __init__(self, path: Path) -> None:
        # os.urandom is what secrets.token_hex reads; secrets itself would import hmac and
        # random on the daemon's start path (about 3 ms before the first answer)
        self.path = path
        self.client_token = os.urandom(16).hex().encode()
        daemon_token = os.urandom(16).hex().encode()
        self.greeting = GREETING_MAGIC + b" " + daemon_token + b"\n"
        import socket  # the full module: callers (and tests) use ``accept`` and ``with``

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.bind(("127.0.0.1", 0))  # loopback only, never another address
            self.sock.listen(64)
            self.sock.settimeout(1.0)
            port = self.sock.getsockname()[1]
            self._content = f"{port} {self.client_token.decode()} {daemon_token.decode()}\n".encode()
            private_dir(path.parent)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(fd, 0o600)  # whatever the umask
                os.write(fd, self._content)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError:
            self.sock.close()
            raise

    def close(self) -> None:
        """Stop listening and remove the file (only if a newer daemon has not replaced it)."""
        self.sock.close()
        try:
            with open(self.path, "rb") as handle:
                ours = handle.read(256) == self._content
            if ours:
                self.path.unlink()
        except OSError:
            pass


def _read_shell_request(conn: socket.socket, client_token: bytes) -> dict[str, Any] | None:
    """The shell client's frame: one header line, then exactly ``<length>`` raw payload bytes.

    ``PAXM-SH1 <client token> <event id> <length> <captured_at> <target> <event> <mode> <owner>``
    (``-`` for an empty owner).  ``None`` when the token is wrong or the frame is malformed.
    """
    import hmac

    buffer = b""
    while b"\n" not in buffer:
        chunk = conn.recv(MAX_HEADER)
        if not chunk:
            return None
        buffer += chunk
        if len(buffer) > MAX_HEADER and b"\n" not in buffer[:MAX_HEADER]:
            return None
    header, _, rest = buffer.partition(b"\n")
    fields = header.split(b" ")
    if len(fields) != 9 or fields[0] != SHELL_MAGIC or not hmac.compare_digest(fields[1], client_token):
        return None
    try:
        size = int(fields[3])
        captured_at = float(fields[4])
    except ValueError:
        return None
    if size < 0 or size > MAX_REQUEST:
        return None
    chunks = [rest[:size]]
    have = len(chunks[0])
    while have < size:
        chunk = conn.recv(min(1 << 16, size - have))
        if not chunk:
            return None  # the client went away mid-frame: it stores the event itself
        chunks.append(chunk)
        have += len(chunk)
    text = [f.decode("utf-8", "replace") for f in fields]
    return {
        "v": 2,
        "event_id": text[2],
        "target": text[5],
        "event": text[6],
        "mode": text[7],
        "owner": "" if text[8] == "-" else text[8],
        "captured_at": captured_at if captured_at > 0 else time.time(),
        "reply": "framed",
        "raw": b"".join(chunks).decode("utf-8", "replace"),
    }


def _accept(listener: _socket.socket) -> _socket.socket:
    """``socket.accept`` for a bare ``_socket.socket``: the new connection, blocking.

    ``TimeoutError`` when the listener's timeout passes with no connection.
    """
    fd, _ = listener._accept()  # type: ignore[attr-defined]
    # accept4 hands over a blocking descriptor, and a new socket object without a timeout is
    # blocking too (socket.accept does the same when no default timeout is set)
    return _socket.socket(listener.family, listener.type, listener.proto, fileno=fd)


def _read_request(conn: _socket.socket) -> dict[str, Any]:
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


def _flush_json(report: Any) -> dict[str, Any]:
    if report is None:
        return {}
    to_json = getattr(report, "to_json", None)
    data = to_json() if callable(to_json) else {}
    return {"flush": data, "flushed": int(data.get("delivered", 0) or 0) if isinstance(data, dict) else 0}


def _build_telemetry(runtime: Any) -> Any:
    """The runtime's telemetry sink (``None`` when not installed or it cannot start)."""
    from paxm_core.runtime import _load_telemetry

    telemetry = _load_telemetry(runtime.config)
    if telemetry is not None and getattr(runtime, "tools", None) is not None:
        runtime.tools.telemetry = telemetry  # what a runtime built with telemetry would hold
    return telemetry


class _QueuedSink:
    """A ``telemetry`` object whose ``record`` queues on the :class:`BackgroundRecorder`."""

    def __init__(self, record: Callable[..., None]) -> None:
        self.record = record


#: how long the recorder waits for the first answered hook before building the sink anyway
SINK_START_DELAY = 3.0


#: most events :class:`BackgroundRecorder` hands its sink's ``record_many`` in one call
RECORD_BATCH = 1000
#: while outcomes stream in, how long (seconds) a batch waits for more before it is written
RECORD_LINGER = 0.05


def _plain_record(call: tuple[Any, tuple[Any, ...], dict[str, Any]]) -> bool:
    return call[0] == "record" and len(call[1]) == 1 and not call[2]


class BackgroundRecorder:
    """Runs telemetry calls on one background thread, off the hook's request path.

    Telemetry writes files (events, metrics) and costs milliseconds; a hook answer should not
    wait for them.  Building the sink (importing ``paxm_core.telemetry``, opening its files)
    costs milliseconds too, and a daemon that was just started has a prompt waiting for it:
    the thread builds the sink once :meth:`start_sink` is called (after the first answer) or
    :data:`SINK_START_DELAY` seconds have passed, whichever comes first.  Calls made before
    then wait in the queue.  :meth:`wrap` turns a sink method name into a queueing stand-in;
    :meth:`close` builds the sink if needed and runs whatever is still queued.

    :param factory: builds the sink (``None``: no telemetry; queued calls are dropped).  A
        ready-made sink object may be passed as ``sink`` instead.
    """

    def __init__(self, factory: Callable[[], Any] | None = None, *, sink: Any = None) -> None:
        import queue

        self._factory = factory
        self._sink = sink
        self._go = threading.Event()
        if factory is None:
            self._go.set()
        self._queue: queue.SimpleQueue[tuple[str | Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None]
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="paxm-hook-telemetry", daemon=True)
        self._thread.start()

    def wrap(self, fn: str | Callable[..., Any]) -> Callable[..., None]:
        """A function with the arguments of ``fn`` (a sink method name, or a callable) that queues the call."""

        def queued(*args: Any, **kwargs: Any) -> None:
            self._queue.put((fn, args, kwargs))

        return queued

    def start_sink(self) -> None:
        """Let the thread build the sink now (the daemon calls this after answering a hook)."""
        self._go.set()

    def _run(self) -> None:
        self._go.wait(SINK_START_DELAY)
        if self._factory is not None:
            try:
                self._sink = self._factory()
            except Exception:  # telemetry never breaks the daemon
                self._sink = None
        import queue

        many = getattr(self._sink, "record_many", None)
        taken: list[Any] = []  # calls taken from the queue, not yet run
        backlog = False  # the last batch had company: records are arriving in a stream
        while True:
            call = taken.pop(0) if taken else self._queue.get()
            if call is None:
                return
            fn, args, kwargs = call
            try:
                if fn == "record" and callable(many) and _plain_record(call):
                    # a drained backlog queues an outcome per episode: the ones waiting go to
                    # the sink as one batch (one lock, one metrics rewrite).  While a stream
                    # lasts, the batch also waits up to RECORD_LINGER for more; a lone event
                    # (a hook's) is written at once
                    events = [args[0]]
                    until = time.monotonic() + RECORD_LINGER if backlog else 0.0
                    while len(events) < RECORD_BATCH:
                        try:
                            left = until - time.monotonic()
                            following = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if following is None or not _plain_record(following):
                            taken.append(following)  # runs next, in order
                            break
                        events.append(following[1][0])
                    backlog = len(events) > 1
                    many(events)
                    continue
                target = getattr(self._sink, fn, None) if isinstance(fn, str) else fn
                if callable(target):
                    target(*args, **kwargs)
            except Exception:  # telemetry never breaks the daemon
                pass

    def close(self, timeout: float = 5.0) -> None:
        """Finish queued calls and stop the thread."""
        self._go.set()
        self._queue.put(None)
        self._thread.join(timeout)


def main(argv: list[str] | None = None) -> int:
    """``python -m paxm_core.passive.daemon --config C [--idle-timeout S] [--socket P]``."""
    pause_gc()  # until HookDaemon.run is ready to answer
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
    """Leave the process once the daemon has flushed and released its lock and socket.

    A recall thread stuck in a provider that ignores its deadline cannot be interrupted, and
    Python would wait for it at exit; everything durable is already committed, so don't.
    """
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
