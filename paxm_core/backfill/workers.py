"""Reading and rendering transcript files in worker processes.

Reading a transcript and rendering its turns is pure CPU work with no shared state: a file's
turns become capture events that depend only on the file, the config and the turn's stable
id.  On a machine with more than one core the run hands whole files to a small pool of
worker processes and keeps the durable steps (``append_many``, the checkpoint, delivery) in
its own process, in file order, exactly as a serial run does them.  So a kill -9 of the run
leaves what a serial run would leave, and the resume is the same.

The workers render with the same :class:`~paxm_core.backfill.render.TurnRenderer` as a
serial run (same config, same plugins, same transcript reader), so their events are the
events a serial run would queue.  A worker exits on its own when the run's process dies
(it watches its parent), so a killed run leaves no process behind.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from paxm_core.backfill.sources import in_range, turns_in

__all__ = ["FileTurns", "Rendered", "auto_workers", "render_file", "render_files_parallel", "render_files_serial"]

#: ``(turn id, "range" | "done" | "rendered", capture events, fingerprint)``
Rendered = tuple[str, str, list[Any], str]
#: ``(path, size, mtime_ns, its turns)``, file by file in the order given
FileTurns = Generator[tuple[Path, int, int, Iterator[Rendered]], None, None]

#: below this many bytes to read, starting worker processes (about half a second each:
#: interpreter, imports, plugins) costs more than it saves
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
#: files rendered ahead of the run's durable steps, per worker (bounds the memory held)
AHEAD_PER_WORKER = 2


def auto_workers(total_bytes: int) -> int:
    """Workers for a run reading ``total_bytes``: one per core (at most 4), none for small runs."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2 or total_bytes < PARALLEL_MIN_BYTES:
        return 0
    return min(cores, 4)


def render_file(
    renderer: Any, reader: Any, path: Path, after: float | None, before: float | None, done: Any
) -> Iterator[Rendered]:
    """Read ``path`` and render each in-range turn not in ``done`` (lazily, one turn at a time)."""
    for turn in turns_in(reader, path):
        if not in_range(turn, after, before):
            yield turn.turn_id, "range", [], ""
        elif turn.turn_id in done:
            yield turn.turn_id, "done", [], ""
        else:
            events, fingerprint = renderer.render(turn)
            yield turn.turn_id, "rendered", events, fingerprint


def render_files_serial(
    renderer: Any, reader: Any, files: list[tuple[Path, int, int]], after: float | None, before: float | None, done: Any
) -> FileTurns:
    """Each file with its turns, read and rendered in this process as they are consumed."""
    for path, size, mtime_ns in files:
        yield path, size, mtime_ns, render_file(renderer, reader, path, after, before, done)


# -- the worker processes ----------------------------------------------------------------------

_WORKER: dict[str, Any] = {}


class _LightRuntime:
    """What a :class:`TurnRenderer` reads of a runtime: config, plugins, tools (no providers)."""

    def __init__(self, config: Any, plugin_manager: Any, tools: Any) -> None:
        self.config = config
        self.plugin_manager = plugin_manager
        self.tools = tools


def _watch_parent(parent: int) -> None:
    # the run was killed (kill -9 leaves its pool's pipes open in the workers): stop at once
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(0)


def _init_worker(
    config: Any,
    reader: Any,
    session_id: str,
    agent_name: str,
    after: float | None,
    before: float | None,
    done: frozenset[str],
    parent: int,
) -> None:
    threading.Thread(target=_watch_parent, args=(parent,), name="paxm-backfill-parent", daemon=True).start()
    from paxm_core.backfill.render import TurnRenderer
    from paxm_core.plugins import get_plugin_manager
    from paxm_core.tools import Tools

    tools = Tools(config, None, session_id=session_id, agent_name=agent_name)  # type: ignore[arg-type]
    runtime = _LightRuntime(config, get_plugin_manager(), tools)
    _WORKER.update(renderer=TurnRenderer(runtime, None), reader=reader, after=after, before=before, done=done)


def _render_in_worker(path: Path) -> list[Rendered]:
    w = _WORKER
    return list(render_file(w["renderer"], w["reader"], path, w["after"], w["before"], w["done"]))


def render_files_parallel(
    runtime: Any,
    reader: Any,
    files: list[tuple[Path, int, int]],
    after: float | None,
    before: float | None,
    done: set[str],
    workers: int,
) -> FileTurns:
    """Each file with its turns, rendered by ``workers`` processes, yielded in file order.

    At most ``AHEAD_PER_WORKER * workers`` files are rendered ahead of the consumer.  Closing
    the iterator (or an error) cancels what was not started and waits for the workers.
    """
    import multiprocessing

    tools = runtime.tools
    pool = ProcessPoolExecutor(
        max_workers=workers,
        # not fork: the run has threads (delivery) and open SQLite connections
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(
            runtime.config,
            reader,
            str(getattr(tools, "session_id", "") or ""),
            str(getattr(tools, "agent_name", "") or ""),
            after,
            before,
            frozenset(done),
            os.getpid(),
        ),
    )
    pending: list[tuple[Path, int, int, Future[list[Rendered]]]] = []
    upcoming = iter(files)
    try:
        while True:
            while len(pending) < AHEAD_PER_WORKER * workers:
                nxt = next(upcoming, None)
                if nxt is None:
                    break
                pending.append((*nxt, pool.submit(_render_in_worker, nxt[0])))
            if not pending:
                return
            path, size, mtime_ns, future = pending.pop(0)
            yield path, size, mtime_ns, iter(future.result())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
