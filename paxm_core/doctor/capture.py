"""Doctor check ``capture``: what breaks passive capture (queue, failed inbox entries, spool, daemon start-up).

A corrupt queue, failed inbox entries and a daemon that could not start are errors (turns are
lost or held back); a queue paxm moved aside and upstream paxm's queue are warnings.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from paxm_core.doctor import DoctorFinding

if TYPE_CHECKING:
    from paxm_core.config.model import Config

__all__ = ["check_capture"]


def _last_daemon_start(config: Config) -> tuple[str, str]:
    """``(log path, last start line)`` of the hook daemon's log ("" when it never logged a start)."""
    log = config.hooks_dir / "paxm-hook-daemon.log"
    last = ""
    try:
        with open(log, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if "startup failed" in line or line.rstrip().endswith(" started"):
                    last = line.strip()
    except OSError:
        pass
    return str(log), last


def _read_only(path: Path, sql: str, params: tuple[str, ...] = ()) -> list[tuple[object, ...]]:
    """Rows of ``sql`` on the queue file opened read-only: doctor looks, it never repairs.

    Opening it the normal way would move a corrupt file aside and start a fresh queue, turning
    the problem into a warning before anyone saw it.
    """
    import sqlite3

    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _corruption(path: Path) -> str:
    """Why the queue file is unusable (``""`` when it is sound)."""
    import sqlite3

    try:
        rows = _read_only(path, "PRAGMA quick_check")
    except sqlite3.Error as exc:
        text = str(exc).lower()
        return str(exc) if "not a database" in text or "malformed" in text or "corrupt" in text else ""
    return "; ".join([str(r[0]) for r in rows if str(r[0]) != "ok"][:3])


def _fix(path: Path, problem: str) -> str:
    if "not a database" in problem:
        # the next open sees it at once: it is moved aside (kept, timestamped) and a fresh queue starts
        return "paxm queue status"
    stamp = "$(date -u +%Y%m%dT%H%M%SZ)"
    quoted = shlex.quote(str(path))
    return " && ".join(
        f"{{ [ ! -e {quoted}{s} ] || mv {quoted}{s} {quoted}.corrupt-{stamp}{s}; }}" for s in ("", "-wal", "-shm")
    )


def _spool_findings(path: Path) -> Iterator[DoctorFinding]:
    """A warning while events wait in the spool (kept there while the queue file was locked)."""
    from paxm_core.capture import _spool

    for name in _spool.spool_files(path):
        try:
            _spool.read_records(name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            yield DoctorFinding(
                "capture", "spool", "error",
                f"the capture spool {name} cannot be read ({exc}); the hook events in it are not imported",
                f"inspect {name}, then remove it",
            )  # fmt: skip
    spooled = _spool.pending_count(path)
    if spooled:
        yield DoctorFinding(
            "capture", "spool", "warn",
            f"{spooled} hook event(s) wait in {_spool.spool_path(path)}: another process held the"
            " capture queue's write lock when they arrived; the hook daemon imports them on its next drain",
            "paxm queue flush (and find the process that holds the queue open in a long transaction)",
        )  # fmt: skip


#: how long doctor keeps warning about the last truncated capture
TRUNCATION_WARN_DAYS = 7


def _truncation_findings(row: tuple[int, str] | None) -> Iterator[DoctorFinding]:
    """A warning while an oversized turn was stored cut to the size limit in the last week."""
    from paxm_core.capture._inbox import utc_stamp

    if not row or not row[0]:
        return
    count, last = row
    if last < utc_stamp(time.time() - TRUNCATION_WARN_DAYS * 86400):
        return
    yield DoctorFinding(
        "capture", "truncated", "warn",
        f"{count} captured event(s) were over limits.max_text_bytes and were stored cut, with a"
        f" '[paxm: truncated N bytes]' marker (last at {last})",
        "raise limits.max_text_bytes if whole turns of that size should be kept",
    )  # fmt: skip


def _is_upstream(path: Path) -> bool:
    from paxm_core.capture.upstream_queue import is_upstream_queue

    return path.is_file() and is_upstream_queue(path)


def _upstream_counts(path: Path) -> tuple[int, int]:
    """``(events imported, events unreadable)`` from upstream queues (0s when unknown)."""
    import sqlite3

    from paxm_core.capture.upstream_queue import COUNTER, UNREADABLE_COUNTER

    sql = "SELECT name, value FROM capture_counters WHERE name IN (?, ?)"
    try:
        rows = {str(name): int(str(value)) for name, value in _read_only(path, sql, (COUNTER, UNREADABLE_COUNTER))}
    except sqlite3.Error:
        return 0, 0
    return rows.get(COUNTER, 0), rows.get(UNREADABLE_COUNTER, 0)


def _upstream_findings(path: Path) -> Iterator[DoctorFinding]:
    """Upstream paxm's capture queue at paxm's path: waiting to be set aside, waiting to be imported, imported.

    Warnings, not errors: capture goes on in paxm's own queue either way; the fix is the one
    command that imports (and delivers) what upstream left undelivered.
    """
    from paxm_core.capture.upstream_queue import IMPORTED_SUFFIX, upstream_copies

    if _is_upstream(path):
        yield DoctorFinding(
            "capture", "upstream-queue", "warn",
            f"the capture queue {path} is upstream paxm's queue; when paxm next opens it, it keeps it as"
            f" {path.name}.upstream-<time> (0600) and imports the turns upstream did not deliver",
            "paxm queue flush",
        )  # fmt: skip
    copies = upstream_copies(path)
    imported = [c for c in copies if c.name.endswith(IMPORTED_SUFFIX)]
    for copy in (c for c in copies if c not in imported):
        yield DoctorFinding(
            "capture", "upstream-queue", "warn",
            f"upstream paxm's capture queue was found at {path} and kept as {copy}; the turns it did not"
            " deliver are imported when the hook daemon next starts (if this stays, the file cannot be read:"
            " its turns remain in it)",
            "paxm queue flush",
        )  # fmt: skip
    if imported:
        events, unreadable = _upstream_counts(path) if path.exists() else (0, 0)
        skipped = f"; {unreadable} unreadable event(s) stay only in the copy" if unreadable else ""
        shown = ", ".join(str(c) for c in imported)
        yield DoctorFinding(
            "capture", "upstream-queue", "warn",
            f"upstream paxm's capture queue was found at {path}: paxm imported {events} undelivered event(s)"
            f" into its own queue{skipped}; turns upstream had delivered or given up on stay only in the"
            f" kept copy {shown}",
            f"rm {' '.join(shlex.quote(str(c)) for c in imported)}  (once you no longer need upstream's queue)",
        )  # fmt: skip


def _daemon_fix(line: str) -> str:
    """The step that fixes a failed daemon start: the cause's own fix, then how capture resumes.

    Never "run doctor": this is doctor.  Hooks keep their events in the inbox meanwhile.
    """
    from paxm_core.capture import _inbox

    cause = line.partition("startup failed:")[2].strip()
    if "capture queue" in cause or "sqlite" in cause.lower():
        first = _inbox.sqlite_hint(cause)
    elif "config" in cause.lower() or ".yaml" in cause or ".json" in cause:
        first = "fix the config setting the error names"
    else:
        first = "fix the cause the error names"
    return (
        f"{first}; then `paxm queue flush` delivers what the hooks kept meanwhile (the next hook restarts the daemon)"
    )


def check_capture(config: Config) -> Iterator[DoctorFinding]:
    """Findings about the capture queue at ``config.capture_queue_path`` and the daemon's last start."""
    from paxm_core.capture import _inbox

    path = config.capture_queue_path
    yield from _upstream_findings(path)
    for copy in _inbox.copies_beside(path, "corrupt"):
        yield DoctorFinding(
            "capture", "queue", "warn",
            f"a corrupt queue was moved aside to {copy}; its undelivered events are in that file",
            f"inspect or delete {copy}",
        )  # fmt: skip
    if path.exists() and not _is_upstream(path):
        problem = _corruption(path)
        if problem:
            yield DoctorFinding(
                "capture", "queue", "error", f"the capture queue {path} is corrupt: {problem}", _fix(path, problem)
            )
            return
        try:
            conn = _inbox.connect(path)
        except Exception as exc:
            yield DoctorFinding("capture", "queue", "error", f"{path}: {exc}", _inbox.sqlite_hint(str(exc)))
        else:
            try:
                (failed,) = conn.execute("SELECT count(*) FROM capture_inbox WHERE state = 'failed'").fetchone()
                truncated = conn.execute(
                    "SELECT value, updated_at FROM capture_counters WHERE name = 'truncated_events'"
                ).fetchone()
            finally:
                conn.close()
            if failed:
                yield DoctorFinding(
                    "capture", "inbox", "error", f"{failed} raw hook event(s) failed to process", "paxm queue status"
                )
            yield from _truncation_findings(truncated)
    yield from _spool_findings(path)
    log, last = _last_daemon_start(config)
    if "startup failed" in last:
        yield DoctorFinding(
            "capture", "daemon", "error", f"the hook daemon's last start failed ({log}): {last}", _daemon_fix(last)
        )
