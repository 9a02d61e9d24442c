"""Fork server for the pipelined-delivery SIGKILL test (see ``test_pipelined_crash.py``).

Each ``run`` forks a child that opens the queue, appends the fixed set of episodes (already
stored ones are idempotent duplicates) and delivers them with small batches, so batch N+1 is
always being claimed while batch N is written, until the test kills it.  ``flush`` runs a
last child that delivers what is left and exits 0 only if nothing is owed.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location("_capture_helpers", Path(__file__).with_name("_helpers.py"))
assert _spec is not None and _spec.loader is not None
helpers = importlib.util.module_from_spec(_spec)
sys.modules["_capture_helpers"] = helpers
_spec.loader.exec_module(helpers)

from paxm_core import Deadline, MemoryItem, MemoryRef  # noqa: E402
from paxm_core.capture import CaptureQueue, DeliveryWorker  # noqa: E402
from paxm_core.router import Router  # noqa: E402

SESSIONS = 5
EPISODES = 600
BATCH = 16
#: a remote provider's write time: the whole set takes many runs, so kills land mid-delivery.
#: The sleeps alone (EPISODES / BATCH writes, ~3 s) must outlast a dozen kill windows
#: (0.05-0.4 s each), however fast the queue itself gets: at 0.02 s a faster queue delivered
#: everything within the first few kills and the test no longer killed mid-delivery (main's
#: 0.06 s leaves ~2.3 s of sleeps, which a faster queue brings close to that limit).
WRITE_TIME = 0.08


class BatchFileProvider(helpers.SqliteFileProvider):  # type: ignore[misc, name-defined]
    """Upserts a batch in one transaction and logs every write in order (survives SIGKILL)."""

    def __init__(self, name: str, path: str) -> None:
        super().__init__(name, path)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS writes (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, text TEXT)")
        conn.close()

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        time.sleep(WRITE_TIME)
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        for item in items:
            conn.execute(
                "INSERT INTO items(id, text, puts) VALUES (?, ?, 1)"
                " ON CONFLICT(id) DO UPDATE SET text = excluded.text, puts = puts + 1",
                (item.id, item.text),
            )
            conn.execute("INSERT INTO writes(id, text) VALUES (?, ?)", (item.id, item.text))
        conn.execute("COMMIT")
        return [MemoryRef(self.name, item.id) for item in items]


def events() -> list[Any]:
    out = []
    for ep in range(EPISODES):
        session = f"session-{ep % SESSIONS}"
        position = ep // SESSIONS
        out.append(helpers.event(f"u{ep}", session, f"{session} {position:04d} prompt"))
        out.append(helpers.event(f"e{ep}", session, f"{session} {position:04d} answer", terminal=True))
    return out


def child(queue_path: str, provider_path: str, final: bool) -> int:
    router = Router({"idstore": BatchFileProvider("idstore", provider_path)})
    queue = CaptureQueue(queue_path, routes={"default": ["idstore"]}, retry_min=0.01)
    worker = DeliveryWorker(queue, router, tick=0.01, batch_size=BATCH).start()
    stream = events()
    for start in range(0, len(stream), 100):
        queue.append_many(stream[start : start + 100])
        worker.notify()
    return int(helpers.deliver_until_killed(worker, final))


if __name__ == "__main__":
    helpers.serve_forks(child)
