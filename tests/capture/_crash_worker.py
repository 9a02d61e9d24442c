"""Fork server for the SIGKILL crash test.

It imports paxm once, then for every ``run`` line on stdin forks a real worker process that
opens the queue, resumes an endless stream of capture events (idempotently) and delivers
them through the real Router to an ID-honouring SQLite-file provider.  It prints the child's
pid, waits for it (the test SIGKILLs it at a random moment) and prints how it ended.  The
``flush`` command runs a final child that completes the interrupted episode, flushes and exits
0 only if nothing is owed.  Forking keeps 200+ kill cycles fast without skipping any real work.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from tests._kit import load_module  # the checkout is on the path: the root distribution is editable

helpers = load_module("_capture_helpers", Path(__file__).with_name("_helpers.py"), register=True)

from paxm_core.capture import CaptureQueue, DeliveryWorker  # noqa: E402
from paxm_core.config.model import CaptureQueueConfig  # noqa: E402
from paxm_core.router import Router  # noqa: E402

EVENTS_PER_EPISODE = 3
SESSIONS = 7
#: pause between episodes of the stream (hook events arrive over time, not all at once)
STREAM_GAP = 0.004
MAX_EPISODES = 1_000_000


def stream(queue: CaptureQueue, worker: DeliveryWorker, *, final: bool) -> None:
    """Append the stream where the last (killed) process left it.

    Events are appended episode by episode, so a partial episode is re-sent from its start
    (identical replays are idempotent duplicates).  A normal run streams until it is killed;
    the final run only completes the episode a kill interrupted, so every logical episode is
    whole.
    """
    conn = sqlite3.connect(queue.path, timeout=30)
    (done,) = conn.execute("SELECT COUNT(*) FROM capture_events").fetchone()
    conn.close()
    start = done // EVENTS_PER_EPISODE
    stop = -(-done // EVENTS_PER_EPISODE) if final else MAX_EPISODES
    for ep in range(start, stop):
        for j in range(EVENTS_PER_EPISODE):
            queue.append(
                helpers.event(
                    f"evt_{ep}_{j}",
                    f"session-{ep % SESSIONS}",
                    f"episode {ep} part {j}",
                    terminal=j == EVENTS_PER_EPISODE - 1,
                    metadata={"logical_episode": str(ep)},
                )
            )
        worker.notify()
        if not final:
            time.sleep(STREAM_GAP)


def child(queue_path: str, provider_path: str, final: bool) -> int:
    provider = helpers.SqliteFileProvider("idstore", provider_path)
    router = Router({"idstore": provider})
    queue = CaptureQueue(queue_path, routes={"default": ["idstore"]}, retry_min=0.01)
    config = CaptureQueueConfig(provider_concurrency={"idstore": 4}, max_episode_age=3600.0)
    worker = DeliveryWorker(queue, router, config, tick=0.01).start()
    stream(queue, worker, final=final)
    return int(helpers.deliver_until_killed(worker, final))


if __name__ == "__main__":
    helpers.serve_forks(child)
