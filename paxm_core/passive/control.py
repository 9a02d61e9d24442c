"""Talking to a running hook daemon: flush, shutdown, status (``paxm __hook-control``, setup, queue status)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from paxm_core.api.errors import PaxmError
from paxm_core.passive.client_core import LOCK_NAME, SOCKET_NAME, DaemonDown, exchange

__all__ = ["STATUS_TIMEOUT", "daemon_status", "request_json", "send_control"]

FLUSH_TIMEOUT = 35.0
STOP_WAIT = 5.0
#: a flush asked without its own timeout must end this long before the client stops listening
ANSWER_MARGIN = 5.0
#: shutdown's default delivery budget: what is still owed after it stays durable in the queue
SHUTDOWN_FLUSH = 10.0


def request_json(path: str, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One JSON request/response exchange with the daemon (control clients, not the hook path)."""
    import json

    response = json.loads(exchange(path, json.dumps(request).encode() + b"\n", timeout) or b"null")
    if not isinstance(response, dict):
        raise ValueError("hook daemon sent no answer")
    return response


def _hooks_dir(config_path: str | os.PathLike[str]) -> Path:
    return Path(config_path).expanduser().absolute().parent / "hooks"


def _lock_held(lock: Path) -> bool:
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


#: how long a control request waits for a daemon that holds its lock but is still starting
STARTING_WAIT = 5.0


def send_control(
    config_path: str | os.PathLike[str],
    action: str,
    *,
    timeout: float = FLUSH_TIMEOUT,
    params: dict[str, Any] | None = None,
    starting_wait: float = STARTING_WAIT,
) -> dict[str, Any] | None:
    """Send ``action`` (``flush``/``shutdown``/``status``/``ping``); ``None`` if no daemon runs.

    A daemon that holds the lock but has no socket yet is starting: wait for it up to
    ``starting_wait`` seconds (within ``timeout``); on a loaded machine start-up takes
    longer than on a quiet one.  ``shutdown`` waits up to 5 s for the socket and lock to disappear.

    :raises PaxmError: the daemon answered with an error or did not stop in time.
    """
    hooks = _hooks_dir(config_path)
    sock, lock = hooks / SOCKET_NAME, hooks / LOCK_NAME
    if not sock.exists():
        if not _lock_held(lock):
            return None
        deadline = time.monotonic() + min(starting_wait, timeout)
        while not sock.exists():
            if not _lock_held(lock):
                return None
            if time.monotonic() > deadline:
                raise PaxmError("hook daemon lock is held but its socket did not become ready")
            time.sleep(0.025)
    request = {**(params or {}), "action": action}
    if action in ("flush", "shutdown") and "timeout" not in request:
        # the daemon's own flush default equals our socket timeout: without a shorter budget a slow
        # or failing provider makes it answer just after we gave up, and shutdown reports a timeout
        budget = max(1.0, timeout - ANSWER_MARGIN)
        request["timeout"] = min(budget, SHUTDOWN_FLUSH) if action == "shutdown" else budget
    try:
        response = request_json(str(sock), request, timeout)
    except DaemonDown:
        return None  # a stale socket of a killed daemon: nothing is running
    except (OSError, ValueError) as exc:
        raise PaxmError(f"hook daemon {action} failed: {exc}") from exc
    if not response.get("ok"):
        raise PaxmError(f"hook daemon {action} failed: {response.get('error') or 'unknown error'}")
    if action == "shutdown":
        deadline = time.monotonic() + STOP_WAIT
        while sock.exists() or _lock_held(lock):
            if time.monotonic() > deadline:
                raise PaxmError("hook daemon did not stop before timeout")
            time.sleep(0.025)
    return response


#: how long ``paxm queue status`` waits for a running daemon's own answer
STATUS_TIMEOUT = 2.0


def daemon_status(config_path: str | os.PathLike[str], *, timeout: float = STATUS_TIMEOUT) -> dict[str, Any] | None:
    """The running daemon's status (pid, uptime, requests, idle ...) or ``None`` if none runs.

    Whether a daemon runs is decided by its lock (``flock`` dies with its process), not by how
    fast it answers: a daemon that holds the lock but does not answer within ``timeout`` (busy
    on a loaded machine, still starting, or stopping) is running, reported as
    ``{"pid": <from the lock file>, "responding": False, "error": ...}``.  A daemon that answered
    has ``"responding": True``.
    """
    lock = _hooks_dir(config_path) / LOCK_NAME
    try:
        response = send_control(config_path, "status", timeout=timeout)
    except PaxmError as exc:
        error = str(exc)
    else:
        if response is not None:
            response.pop("ok", None)
            return {**response, "responding": True}
        error = "hook daemon holds its lock but takes no requests (starting or stopping)"
    if not _lock_held(lock):
        return None  # it exited while we asked (or never ran: a stale socket)
    from paxm_core.passive.daemon import DaemonLock

    return {"pid": DaemonLock(lock).read_pid(), "responding": False, "error": error}
