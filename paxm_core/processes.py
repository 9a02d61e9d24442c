"""Is the process that recorded a pid still running?  For lease owners and run records.

``os.kill(pid, 0)`` alone answers "a process table entry exists", which is wrong in two cases
that matter for crash recovery:

* a killed process that nobody has reaped yet is a zombie: in a container whose PID 1 does not
  reap orphans (no ``--init``), a SIGKILLed hook daemon stays one for ever, and its leases would
  never be recovered;
* a pid the kernel has handed to a new process after the owner died.

Where ``/proc`` exists (Linux) the process's state and start time settle both: a zombie (``Z``)
or dead (``X``) process is gone, and an owner that recorded its start time
(:func:`start_time`) is gone when the pid now belongs to a process that started at another
time.  Elsewhere the ``kill`` answer stands (macOS's launchd reaps orphans).  Only :mod:`os` is
imported: the capture queue loads this module.
"""

from __future__ import annotations

import os

__all__ = ["pid_alive", "start_time"]

_PROC = os.path.isdir("/proc/self")


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/<pid>/stat`` from field 3 (the state) on, or ``None`` when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces or ")": split after the last
    return data[data.rfind(b")") + 2 :].split()


def start_time(pid: int | None = None) -> str:
    """When ``pid`` (default: this process) started, in clock ticks since boot; ``""`` if unknown."""
    fields = _stat_fields(os.getpid() if pid is None else pid) if _PROC else None
    return fields[19].decode("ascii", "replace") if fields is not None and len(fields) > 19 else ""


def pid_alive(pid: int, started: str = "") -> bool:
    """Whether ``pid`` is a running process (not a zombie), and the one that started at ``started``.

    :param started: the owner's :func:`start_time` as it recorded it; ``""`` skips that check.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    if not _PROC:
        return True
    fields = _stat_fields(pid)
    if fields is None:
        return os.path.exists(f"/proc/{pid}")  # gone between the two looks, or unreadable: trust /proc
    if fields and fields[0] in (b"Z", b"X"):
        return False
    if started and len(fields) > 19 and fields[19].decode("ascii", "replace") != started:
        return False  # the pid was reused
    return True
