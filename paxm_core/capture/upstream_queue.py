"""Upstream paxm's capture queue found at paxm's queue path: set aside, then imported.

Upstream keeps its queue in the same file (``<config dir>/hooks/capture.sqlite``) with its own
schema.  When paxm opens such a file (:func:`paxm_core.capture._inbox.connect`, the hook client
included) it copies it to a private ``capture.sqlite.upstream-<UTC time>`` (0600), removes the
original and starts a fresh queue, so capture never stops on it.  The first queue opened with
delivery routes (the hook daemon, ``paxm queue flush``) then imports from that copy what it can
still deliver:

* events upstream had not sealed into an episode yet: appended as they were (same event ids,
  sessions and source sequences), left open to be sealed by a later ``turn_end`` or by age;
* episodes none of whose deliveries reached a provider (``pending``, ``retry``,
  ``delivering``): their events appended and sealed again as one episode, complete or not as
  upstream sealed it, so paxm's worker delivers them.

Episodes that upstream delivered to some provider, or gave up on (``dead``), stay only in the
copy (importing them could store a memory twice).  After the import the copy is renamed
``….imported`` (kept for the user); ``paxm config doctor`` reports what happened.  Importing is
idempotent: event ids are the queue's idempotency keys.
"""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from paxm_core.capture._inbox import _is_upstream_queue, add_counter, copies_beside, utc_stamp
from paxm_core.capture.episode import decode_event_payload
from paxm_core.capture.model import CaptureEvent

__all__ = [
    "COUNTER",
    "IMPORTED_SUFFIX",
    "UNREADABLE_COUNTER",
    "import_waiting_copies",
    "is_upstream_queue",
    "upstream_copies",
]

#: the copy's name after its import
IMPORTED_SUFFIX = ".imported"
#: capture counter: events imported from upstream queues (shown by doctor)
COUNTER = "upstream_imported_events"
#: capture counter: upstream events whose payload could not be read (left in the copy)
UNREADABLE_COUNTER = "upstream_unreadable_events"


def upstream_copies(queue_path: str | os.PathLike[str]) -> list[Path]:
    """Every copy of an upstream queue set aside next to ``queue_path`` (imported or not), oldest first."""
    return [Path(p) for p in copies_beside(queue_path, "upstream")]


def is_upstream_queue(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is upstream's queue not set aside yet (read-only look)."""
    try:
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        return _is_upstream_queue(conn)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def import_waiting_copies(queue: Any) -> None:
    """Import every waiting copy into ``queue``, a ``CaptureQueue`` with delivery routes; never raises.

    (Typed ``Any``: the queue module calls this one, which must not import it back.)  A copy
    that cannot be read keeps its name (doctor names it); one imported is renamed ``….imported``.
    """
    for copy in upstream_copies(queue.path):
        if copy.name.endswith(IMPORTED_SUFFIX):
            continue
        try:
            _import(queue, copy)
            os.rename(copy, f"{copy}{IMPORTED_SUFFIX}")
        except Exception:  # unreadable copy, queue error: the queue opens all the same
            continue


def _read(copy: Path) -> tuple[list[tuple[Any, ...]], dict[str, bool]]:
    """``(events to import, {episode id: complete})`` from the copy."""
    conn = sqlite3.connect(f"{copy.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        states: dict[str, set[str]] = {}
        for episode_id, state in conn.execute("SELECT episode_id, state FROM capture_deliveries"):
            states.setdefault(str(episode_id), set()).add(str(state))
        complete = {str(e): bool(c) for e, c in conn.execute("SELECT episode_id, complete FROM capture_episodes")}
        importable = {e for e, s in states.items() if e in complete and s and s <= {"pending", "retry", "delivering"}}
        rows = [
            row
            for row in conn.execute(
                "SELECT event_id, session_key, sequence, source_sequence, final_sequence, terminal, payload_json,"
                " episode_id, created_at FROM capture_events ORDER BY session_key, sequence"
            )
            if row[7] == "" or row[7] in importable
        ]
    finally:
        conn.close()
    return rows, {e: complete[e] for e in importable}


def _captured_at(text: str) -> datetime | None:
    """Upstream's RFC 3339 stamp (nanoseconds, ``Z``) as a UTC datetime; ``None`` if unreadable."""
    stamp = text.strip().replace("Z", "+00:00")
    head, dot, rest = stamp.partition(".")
    if dot:  # Python reads at most 6 fractional digits
        digits = len(rest) - len(rest.lstrip("0123456789"))
        stamp = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        parsed = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _event(row: tuple[Any, ...], sealed: bool) -> CaptureEvent:
    event_id, session_key, _, source, final, terminal, payload_json, _, created_at = row
    payload = json.loads(payload_json)
    if not isinstance(payload, dict) or not isinstance(payload.get("item"), dict):
        raise ValueError(f"upstream event {event_id} has no item")
    # upstream keeps the write profile inside the item; paxm's stored event beside it
    profile = payload["item"].get("profile")
    item, profile = decode_event_payload(
        {
            "item": payload["item"],
            "admission_text": payload.get("admission_text") or "",
            "profile": profile if isinstance(profile, str) and profile.strip() else "default",
        }
    )
    return CaptureEvent(
        event_id=str(event_id),
        session_key=str(session_key),
        item=item,
        profile=profile,
        # a sealed episode is sealed again below, as upstream sealed it
        terminal=bool(terminal) and not sealed,
        source_sequence=source,
        final_sequence=final,
        captured_at=_captured_at(str(created_at or "")),
    )


def _import(queue: Any, copy: Path) -> None:
    rows, episodes = _read(copy)
    # one run of events per (session, episode) in the queue's order; an episode's run is
    # appended and sealed before the session's later events
    runs: list[tuple[str, str, list[tuple[Any, ...]]]] = []
    for row in rows:
        session_key, episode_id = str(row[1]), str(row[7])
        if runs and runs[-1][0] == session_key and runs[-1][1] == episode_id:
            runs[-1][2].append(row)
        else:
            runs.append((session_key, episode_id, [row]))
    imported = unreadable = 0
    for session_key, episode_id, run in sorted(runs, key=lambda r: (r[0], r[1] == "", r[2][0][2])):
        events = []
        for row in run:
            try:
                events.append(_event(row, sealed=bool(episode_id)))
            except (ValueError, TypeError):  # one unreadable event costs itself, not the import
                unreadable += 1
        if not events:
            continue
        imported += sum(1 for r in queue.append_many(events) if not r.duplicate)
        if episode_id:
            queue.seal_session(session_key, complete=episodes[episode_id])
    with queue._tx() as conn:
        add_counter(conn, COUNTER, imported, utc_stamp())
        add_counter(conn, UNREADABLE_COUNTER, unreadable, utc_stamp())
