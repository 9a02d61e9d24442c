"""Reading and rendering transcript files in worker processes (what keeps 100k turns under 60 s).

Reading and rendering is pure CPU work with no shared state: a file's turns become capture
events that depend only on the file, the config and the turn's stable id.  On a machine with
more than one core the run hands whole files to a small pool of worker processes, which
render with the same :class:`~paxm_core.backfill.render.TurnRenderer`, and keeps the durable
steps (``append_many``, the checkpoint, delivery) in its own process, in file order, as a
serial run does them; a kill -9 of the run leaves what a serial run would leave.  A worker
exits on its own when the run's process dies.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Collection, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from paxm_core.backfill.sources import in_range, turns_in

if TYPE_CHECKING:
    from paxm_core.api.integration import SupportsTranscripts
    from paxm_core.backfill.render import RenderRuntime, TurnRenderer
    from paxm_core.config.model import Config
    from paxm_core.plugins import PaxmPluginManager
    from paxm_core.tools import Tools

__all__ = [
    "FileTurns",
    "Rendered",
    "auto_workers",
    "render_file",
    "render_files_parallel",
    "worker_setup",
]

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
    """Workers for a run reading ``total_bytes``: one per core but one (at most 4), none for small runs.

    The run's own process keeps a core busy too (appending, delivering), so a 2-core machine
    gets one worker: a second would only compete with the run's process for the same cores.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores < 2 or total_bytes < PARALLEL_MIN_BYTES:
        return 0
    return min(cores - 1, 4)


def render_file(
    renderer: TurnRenderer,
    reader: SupportsTranscripts,
    path: Path,
    after: float | None,
    before: float | None,
    done: Collection[str],
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


# -- the worker processes ----------------------------------------------------------------------
#
# Plain child processes (``python -m paxm_core.backfill.workers``), not ``multiprocessing``: its
# spawn start method re-runs the parent's ``__main__`` in every child (a program embedding the
# backfill would run twice), and its pipes stay open in the children when the parent is killed.
# Here a worker holds only the read end of its stdin and the write end of its stdout: when the
# run dies (kill -9 included) its stdin ends, or its next answer fails, and it exits.
#
# Protocol, pickles both ways: the run sends one setup tuple, then one path per file; the
# worker answers each path, in order, with ``("ok", [Rendered, ...])`` or ``("error", exc)``;
# its Rendered turns carry :data:`~paxm_core.capture.queue.EncodedEvent` rows, not events.


class _LightRuntime(NamedTuple):
    """What a :class:`TurnRenderer` reads of a runtime: config, plugins, tools (no providers)."""

    config: Config
    plugin_manager: PaxmPluginManager
    tools: Tools


def _worker_main() -> None:
    from paxm_core.backfill.render import TurnRenderer
    from paxm_core.capture.queue import encode_event
    from paxm_core.plugins import get_plugin_manager
    from paxm_core.tools import Tools

    # the requests and answers streams are fds 0 and 1; fd 1 then points at stderr, so a stray
    # ``print`` in any imported code goes to the log and can never corrupt the pickled answers
    requests, answers = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        config, reader, session_id, agent_name, after, before, done = pickle.load(requests)
    except EOFError:
        return
    tools = Tools(config, None, session_id=session_id, agent_name=agent_name)  # type: ignore[arg-type]
    renderer = TurnRenderer(_LightRuntime(config, get_plugin_manager(), tools), None)
    while True:
        try:
            path = pickle.load(requests)
        except EOFError:  # the run finished, or died
            return
        answer: tuple[str, Any]
        try:
            # encoded here (payload JSON, digest): the run's process only writes the rows, and
            # plain tuples unpickle several times faster than the events' frozen dataclasses
            answer = (
                "ok",
                [
                    (t, kind, [encode_event(e) for e in events], fp)
                    for t, kind, events, fp in render_file(renderer, reader, path, after, before, done)
                ],
            )
        except Exception as exc:
            answer = ("error", exc)
        try:
            try:
                data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle
                data = pickle.dumps(("error", RuntimeError(str(answer[1]))))
            answers.write(data)
            answers.flush()
        except (BrokenPipeError, OSError):  # the run is gone
            return


class _Worker:
    """One worker process and its two pipes."""

    def __init__(self, setup: bytes) -> None:
        import subprocess
        import sys

        # -P: not the current directory first on sys.path (a paxm checkout there would be
        # imported instead of the installed paxm_core); the pipes are close-on-exec
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "paxm_core.backfill.workers"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._requests = self.process.stdin
        self._answers = self.process.stdout
        self._requests.write(setup)
        self._requests.flush()

    def send(self, path: Path) -> None:
        self._requests.write(pickle.dumps(path))
        self._requests.flush()

    def receive(self) -> list[Rendered]:
        try:
            state, value = pickle.load(self._answers)
        except EOFError:
            code = self.process.wait()
            raise RuntimeError(f"a backfill worker exited (status {code}) before answering") from None
        if state != "ok":
            raise value if isinstance(value, BaseException) else RuntimeError(str(value))
        return list(value)

    def close(self) -> None:
        """Stop the worker: its next answer fails (nobody reads them) and its stdin ends."""
        for stream in (self._answers, self._requests):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=30)  # at most the file it is rendering
        except Exception:
            self.process.kill()
            self.process.wait()


def worker_setup(
    runtime: RenderRuntime, reader: SupportsTranscripts, after: float | None, before: float | None, done: set[str]
) -> bytes | None:
    """What every worker is started with, pickled; ``None`` when it does not pickle.

    A reader or config that cannot cross a pipe (an object built in a test, a plugin holding
    a lock) renders in the run's own process instead.
    """
    tools = runtime.tools
    try:
        return pickle.dumps(
            (
                runtime.config,
                reader,
                str(getattr(tools, "session_id", "") or ""),
                str(getattr(tools, "agent_name", "") or ""),
                after,
                before,
                frozenset(done),
            ),
            protocol=pickle.HIGHEST_PROTOCOL,
        )
    except Exception:
        return None


def render_files_parallel(setup: bytes, files: list[tuple[Path, int, int]], workers: int) -> FileTurns:
    """Each file with its turns, rendered by ``workers`` processes, yielded in file order.

    File ``i`` goes to worker ``i % workers``; each worker answers in the order it was asked,
    so the answers are read back in file order.  At most ``AHEAD_PER_WORKER`` files per worker
    are rendered ahead of the consumer.  Closing the iterator (or an error) stops the workers.
    """
    pool: list[_Worker] = []
    try:
        pool.extend(_Worker(setup) for _ in range(min(workers, len(files))))
        sent = 0
        for index, (path, size, mtime_ns) in enumerate(files):
            while sent < len(files) and sent < index + AHEAD_PER_WORKER * len(pool):
                pool[sent % len(pool)].send(files[sent][0])
                sent += 1
            yield path, size, mtime_ns, iter(pool[index % len(pool)].receive())
    finally:
        for worker in pool:
            worker.close()


if __name__ == "__main__":
    _worker_main()
