"""Capture-queue test helpers (loaded by conftest as ``_capture_helpers``; also by the crash worker)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from paxm_contracttest.fakes import IdStoreProvider
from paxm_core import Deadline, MemoryItem, MemoryRef, ProviderError
from paxm_core.capture import CaptureEvent


class FakeProvider(IdStoreProvider):
    """An ID-honouring in-memory provider with fault injection.

    ``fail_times`` fails the first N puts, ``always_fail`` every put, ``hang`` blocks each put
    until the event is set.
    """

    def __init__(
        self, name: str, *, fail_times: int = 0, always_fail: bool = False, hang: threading.Event | None = None
    ) -> None:
        super().__init__(name)
        self.fail_times = fail_times
        self.always_fail = always_fail
        self.hang = hang
        self.lock = threading.Lock()
        self.calls = 0
        self.puts: list[MemoryItem] = []
        self.active = 0
        self.max_active = 0

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        with self.lock:
            self.calls += 1
            call = self.calls
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if self.hang is not None:
                self.hang.wait(30)
            if self.always_fail or call <= self.fail_times:
                raise ProviderError(self._name, "put", f"injected failure {call}")
            with self.lock:
                self.puts.append(item)
                return super().put(item, deadline)
        finally:
            with self.lock:
                self.active -= 1


class SqliteFileProvider:
    """A provider backed by a SQLite file: upserts by id and counts puts (survives SIGKILL)."""

    def __init__(self, name: str, path: str | Path) -> None:
        self._name = name
        self.path = str(path)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, text TEXT NOT NULL, puts INTEGER)")
        conn.close()
        self._local = threading.local()

    @property
    def name(self) -> str:
        return self._name

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._local.conn = conn
        return conn

    def search(self, query: Any, deadline: Deadline) -> list[Any]:
        return []

    def health(self, deadline: Deadline) -> None:
        return None

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self._conn().execute(
            "INSERT INTO items(id, text, puts) VALUES (?, ?, 1)"
            " ON CONFLICT(id) DO UPDATE SET text = excluded.text, puts = puts + 1",
            (item.id, item.text),
        )
        return MemoryRef(self._name, item.id)


def route_profiles(**profiles: list[tuple[str, float | None]]) -> dict[str, Any]:
    """Minimal ``Config.write_profiles`` stand-in: profile -> [(provider, timeout)]."""
    return {
        name: SimpleNamespace(providers=[SimpleNamespace(name=p, timeout=t) for p, t in routes])
        for name, routes in profiles.items()
    }


def event(
    event_id: str,
    session: str = "s1",
    text: str | None = None,
    *,
    profile: str = "default",
    terminal: bool = False,
    source_sequence: int | None = None,
    final_sequence: int | None = None,
    created: float = 1_700_000_000.0,
    **item_fields: Any,
) -> CaptureEvent:
    item = MemoryItem(
        text=text if text is not None else f"text of {event_id}",
        created_at=datetime.fromtimestamp(created, UTC),
        **item_fields,
    )
    return CaptureEvent(
        event_id,
        session,
        item,
        profile=profile,
        terminal=terminal,
        source_sequence=source_sequence,
        final_sequence=final_sequence,
    )


def turns(session: str, count: int, *, poison_at: int | None = None, width: int = 0) -> list[CaptureEvent]:
    """``count`` whole turns of ``session`` (a prompt, then its terminal answer).

    ``poison_at``: that turn's prompt says ``POISON``; ``width``: turn numbers zero-padded to it.
    """
    out = []
    for n in range(count):
        number, word = f"{n:0{width}d}", "POISON" if n == poison_at else "fine"
        out.append(event(f"{session}-u{n}", session, f"prompt {session} {number} {word}"))
        out.append(event(f"{session}-e{n}", session, f"answer {session} {number}", terminal=True))
    return out


class Recorder:
    """Keeps every telemetry event it is given (a ``record`` hook for the delivery worker)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def record(self, event: dict[str, Any]) -> None:
        self.events.append(event)


class Clock:
    """A settable epoch clock."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())


def deliver_until_killed(worker: Any, final: bool) -> int:
    """A SIGKILL-test child's last step: deliver until killed, or (``final``) flush what is
    left and exit 0 only if nothing is owed."""
    if not final:
        time.sleep(600)  # keep delivering until the test kills us
        return 0
    report = worker.flush(timeout=60)
    worker.stop()
    print(f"flush {report.to_json()}", file=sys.stderr, flush=True)
    return 0 if report.ok else 3


def serve_forks(child: Callable[..., int]) -> None:
    """The SIGKILL tests' fork server: each ``run [ARG...]`` (or a last ``flush``) line on stdin
    forks ``child(queue_path, provider_path, final, *ARGS)`` and reports ``pid N`` then
    ``exit STATUS``.  A child may print lines of its own (``os.write`` to fd 1); they can come
    before or after ``pid N``, never after ``exit``.

    Forking from one warm interpreter keeps each cycle to milliseconds, so a test can kill
    dozens of workers mid-delivery within its time."""
    queue_path, provider_path = sys.argv[1], sys.argv[2]
    print("ready", flush=True)
    for line in sys.stdin:
        command, *args = line.split() or [""]
        if command not in ("run", "flush"):
            break
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(queue_path, provider_path, command == "flush", *args)
            finally:
                os._exit(code)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)


def start_fork_server(worker: Path, queue_path: Path, provider_path: Path) -> subprocess.Popen[str]:
    """The crash tests' fork server ``worker`` for a queue and a provider file, talking over pipes."""
    return subprocess.Popen(
        [sys.executable, str(worker), str(queue_path), str(provider_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def dump_queue(path: Path, events_sql: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every queue row (events as ``events_sql`` selects them), with the random episode ids replaced
    by their order of appearance, so two queues fed the same events compare equal."""
    ids: dict[str, str] = {}

    def norm(value: Any) -> Any:
        if isinstance(value, str):
            return re.sub(r"ep_[0-9a-f]{32}", lambda m: ids.setdefault(m.group(0), f"EP{len(ids)}"), value)
        return value

    with sqlite3.connect(path) as conn:
        events = conn.execute(events_sql).fetchall()
        episodes = conn.execute(
            "SELECT episode_id, session_key, first_sequence, last_sequence, complete, payload_json, state, error"
            " FROM capture_episodes ORDER BY rowid"
        ).fetchall()
        deliveries = conn.execute(
            "SELECT episode_id, provider, profiles_json, state, last_error, session_key, first_sequence"
            " FROM capture_deliveries ORDER BY rowid"
        ).fetchall()
    return {
        name: [tuple(norm(v) for v in row) for row in rows]
        for name, rows in (("events", events), ("episodes", episodes), ("deliveries", deliveries))
    }
