"""Fork server for the batched-delivery SIGKILL test (see ``test_delivery_stream_crash.py``).

Each ``run STALL_AT PHASE`` forks a child that opens the queue, appends the fixed set of
episodes (already stored ones are idempotent duplicates) and delivers them in small
batches until the test kills it.  The
child tells the test what it does, on the fork server's stdout: ``put N SIZE`` when its N-th
batch write starts, ``stall`` when it stops for good at the chosen point (the STALL_AT-th write,
PHASE ``write``: before the provider commits; ``stored``: after the provider committed, before
the queue records it), ``idle`` when nothing is owed any more.  ``flush`` runs a last child that
delivers what is left and exits 0 only if nothing is owed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests._kit import load_module  # the checkout is on the path: the root distribution is editable

helpers = load_module("_capture_helpers", Path(__file__).with_name("_helpers.py"), register=True)

from paxm_core import Deadline, MemoryItem, MemoryRef  # noqa: E402
from paxm_core.capture import CaptureQueue, DeliveryWorker  # noqa: E402
from paxm_core.router import Router  # noqa: E402

SESSIONS = 5
EPISODES = 600
BATCH = 16
#: a remote provider's write time, so a kill the test times itself ("free") can land inside
#: a write; where the other kills land does not depend on it (the child stalls there)
WRITE_TIME = 0.08


def tell(line: str) -> None:
    os.write(1, line.encode() + b"\n")  # one short write: a whole line on the pipe


class BatchFileProvider(helpers.SqliteFileProvider):  # type: ignore[misc, name-defined]
    """Upserts a batch in one transaction and logs every write in order (survives SIGKILL)."""

    def __init__(self, name: str, path: str, stall_at: int = 0, phase: str = "") -> None:
        super().__init__(name, path)
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("CREATE TABLE IF NOT EXISTS writes (n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, text TEXT)")
        conn.close()
        self.stall_at = stall_at
        self.phase = phase
        self.puts = 0

    def _stall(self, phase: str) -> None:
        if self.puts == self.stall_at and self.phase == phase:
            tell("stall")
            time.sleep(600)  # until the test kills us

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        self.puts += 1
        tell(f"put {self.puts} {len(items)}")
        self._stall("write")
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
        self._stall("stored")
        return [MemoryRef(self.name, item.id) for item in items]


def events() -> list[Any]:
    out = []
    for ep in range(EPISODES):
        session = f"session-{ep % SESSIONS}"
        position = ep // SESSIONS
        out.append(helpers.event(f"u{ep}", session, f"{session} {position:04d} prompt"))
        out.append(helpers.event(f"e{ep}", session, f"{session} {position:04d} answer", terminal=True))
    return out


def child(queue_path: str, provider_path: str, final: bool, stall_at: str = "0", phase: str = "") -> int:
    provider = BatchFileProvider("idstore", provider_path, int(stall_at), phase)
    router = Router({"idstore": provider})
    queue = CaptureQueue(queue_path, routes={"default": ["idstore"]}, retry_min=0.01)
    worker = DeliveryWorker(queue, router, tick=0.01, batch_size=BATCH).start()
    stream = events()
    for start in range(0, len(stream), 100):
        queue.append_many(stream[start : start + 100])
        worker.notify()
    if final:
        return int(helpers.deliver_until_killed(worker, True))
    worker.flush(timeout=600)  # returns when nothing is owed: the test ends the runs
    tell("idle")
    time.sleep(600)  # keep delivering until the test kills us
    return 0


if __name__ == "__main__":
    helpers.serve_forks(child)
