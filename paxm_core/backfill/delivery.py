"""Delivering the backfill queue: on a thread of the run, or in a delivery process of its own.

Delivery is :func:`paxm_core.capture.batch.deliver_stream` per provider (claims in batches,
one provider ``put_batch`` per batch, ``complete_many``), at ``--rate`` for remote providers.
A large run does it in a child process (``python -m paxm_core.backfill.delivery``) so that
the run's own process only appends and checkpoints: on one process the two shared one GIL,
and delivery was the larger half.  The child drains the same durable backfill queue under
its own leases (``<pid>:<start time>.<nonce>``), so a kill -9 of either process at any point
leaves leases that the next opener of the queue returns to ``retry``: nothing is lost, and a
re-sent episode is an upsert of the same id.

The child never outlives its run: it holds only the read end of its stdin and the write end
of its stdout.  When the run dies (kill -9 included) its stdin ends and it stops after the
batch in hand (at most :data:`GRACE` seconds), its next report fails, and on Linux the
kernel kills it too (``PR_SET_PDEATHSIG``).

Protocol, pickles both ways.  The run sends one setup tuple, then ``"kick"`` after each
append (deliver what is owed) and ``"finish"`` after the last (deliver what is left, then
exit).  The child answers ``("delivered", count, errors)`` after each batch,
``("idle", kicks)`` when a pass found nothing more to claim (``kicks``: the kicks it had
read when the pass began), ``("error", text)`` when delivery failed, and ``("done", cpu seconds)``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

from paxm_core.api.errors import PaxmError

__all__ = [
    "DELIVERY_TIMEOUT",
    "GRACE",
    "DeliveryProcessError",
    "ProcessDeliverer",
    "ThreadDeliverer",
    "deliver_all",
    "with_sequences",
]

DELIVERY_TIMEOUT = 120.0
#: seconds a delivery child may take to stop once its run is gone (a batch in hand, a rate wait)
GRACE = 5.0


class DeliveryProcessError(PaxmError):
    """The delivery process failed or died; what it had not delivered stays queued."""


#: ``record(delivered, errors)``: what a delivered batch reports
Record = Callable[[int, list[str]], None]


def with_sequences(items: list[Any]) -> list[Any]:
    """Give past items their session sequence from the time they happened.

    A live write gets the next sequence of its session from the shared sequence store (one
    fsynced transaction each); a past turn's place in its session is known: its start time
    in nanoseconds, the same scale the store uses, so past and live turns interleave in the
    order they happened.  The router keeps an explicit ``sequence`` as given.
    """
    from paxm_core.attribution import META_SEQUENCE

    out = []
    last: dict[str, int] = {}
    for item in items:
        if (item.metadata.get(META_SEQUENCE) or "").strip() or item.created_at is None:
            out.append(item)
            continue
        session = item.origin.session_id.strip() or item.metadata.get("session_id", "")
        sequence = max(int(item.created_at.timestamp() * 1_000_000) * 1000, last.get(session, 0) + 1)
        last[session] = sequence
        out.append(item.replace(metadata={**item.metadata, META_SEQUENCE: str(sequence)}))
    return out


def deliver_all(
    queue: Any,
    router: Any,
    providers: Sequence[str],
    limiters: dict[str, Any],
    batch: int,
    record: Record,
    stopping: Callable[[], bool] = lambda: False,
) -> None:
    """One delivery pass: each provider's claimable episodes, in batches, until none is claimable."""
    from paxm_core.capture.batch import deliver_stream

    def report(outcomes: list[Any], _claims: list[Any]) -> None:
        delivered = 0
        errors: list[str] = []
        for outcome in outcomes:
            if outcome.state == "delivered":
                delivered += 1
            elif outcome.error:
                errors.append(f"{outcome.episode_id}: {outcome.error}"[:300])
        record(delivered, errors[-20:])

    for provider in providers:
        if stopping():
            return

        def put(items: list[Any], provider: str = provider) -> list[Any]:
            return list(router.put_to_provider(provider, with_sequences(items), DELIVERY_TIMEOUT))

        # the next batch is claimed (and the rate limiter waited for) while one is written;
        # dead deliveries are counted from the queue status at the end
        deliver_stream(
            queue,
            provider,
            lambda _claims, put=put: put,  # type: ignore[misc]
            report,
            limit=batch,
            allowance=limiters[provider].allowance,
            stopping=stopping,
        )


class ThreadDeliverer:
    """Runs ``deliver()`` on one background thread whenever kicked; errors surface in the caller."""

    def __init__(self, deliver: Callable[[], None], owed: Callable[[], int]) -> None:
        self._deliver = deliver
        self._owed = owed
        self._cond = threading.Condition()
        self._wanted = False
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread and deliver what a killed run left (the first pass)."""
        self._deliver()
        self._thread = threading.Thread(target=self._loop, name="paxm-backfill-delivery", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._wanted and not self._closed:
                    self._cond.wait()
                if not self._wanted:
                    return
                self._wanted, self._busy = False, True
            try:
                self._deliver()
            except BaseException as exc:  # handed to the run's thread
                with self._cond:
                    self._error = exc
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                if self._error is not None:
                    return

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def kick(self) -> None:
        """Ask for a delivery pass (after an append)."""
        with self._cond:
            self._raise()
            self._wanted = True
            self._cond.notify_all()

    def wait_below(self, backlog: int) -> None:
        """Wait while a delivery pass runs and more than ``backlog`` sealed episodes are owed.

        A pass ends when nothing is claimable, so what is owed after it waits for a retry
        (a failing provider): the run goes on, as a synchronous delivery would.
        """
        while True:
            with self._cond:
                self._raise()
                if not self._busy and not self._wanted:
                    return
            if self._owed() <= backlog:
                return
            with self._cond:
                if self._busy or self._wanted:
                    self._cond.wait(0.05)

    def finish(self) -> None:
        """Stop the thread, then deliver what is left on the caller's thread."""
        self.abandon()
        with self._cond:
            self._raise()
        self._deliver()

    def abandon(self) -> None:
        """Stop the thread after the pass in hand (what is left stays queued)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


class ProcessDeliverer:
    """Delivery in a child process; the same calls as :class:`ThreadDeliverer`.

    :param setup: :func:`delivery_setup`'s pickle.
    :param record: called (on a reader thread) with each batch's delivered count and errors.
    """

    def __init__(self, setup: bytes, owed: Callable[[], int], record: Record) -> None:
        self._setup = setup
        self._owed = owed
        self._record = record
        self._cond = threading.Condition()
        self._kicks = 0
        self._idle = -1
        self._done = False
        #: CPU seconds (user + system) the child reported when it finished
        self.cpu = 0.0
        self._error: str | None = None
        self._process: Any = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        """Start the child; its first pass delivers what a killed run left."""
        from paxm_core.processes import start_child

        self._process = start_child("paxm_core.backfill.delivery")
        self._send(self._setup)
        self._reader = threading.Thread(target=self._read, name="paxm-backfill-delivery-reader", daemon=True)
        self._reader.start()
        self.kick()

    def _send(self, data: bytes) -> None:
        try:
            self._process.stdin.write(data)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):  # the child died: its exit status is the error
            self._fail_exited()

    def _fail_exited(self) -> None:
        code = self._process.wait()
        with self._cond:
            if self._error is None and not self._done:
                self._error = f"the backfill delivery process exited (status {code}); run again to resume"
            self._cond.notify_all()

    def _read(self) -> None:
        import pickle

        answers = self._process.stdout
        while True:
            try:
                message = pickle.load(answers)
            except Exception:  # EOF: the child exited (or was killed)
                self._fail_exited()
                return
            kind = message[0]
            if kind == "delivered":
                self._record(int(message[1]), list(message[2]))
                continue
            with self._cond:
                if kind == "idle":
                    self._idle = max(self._idle, int(message[1]))
                elif kind == "error":
                    self._error = str(message[1])
                elif kind == "done":
                    self._done = True
                    self.cpu = float(message[1]) if len(message) > 1 else 0.0
                self._cond.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise DeliveryProcessError(self._error)

    def kick(self) -> None:
        """Ask for a delivery pass (after an append)."""
        import pickle

        with self._cond:
            self._raise()
            self._kicks += 1
        self._send(pickle.dumps("kick"))

    def wait_below(self, backlog: int) -> None:
        """Wait while the child's pass runs and more than ``backlog`` sealed episodes are owed."""
        while True:
            with self._cond:
                self._raise()
                if self._idle >= self._kicks:  # the pass after the last kick found nothing more
                    return
            if self._owed() <= backlog:
                return
            with self._cond:
                if self._error is None and self._idle < self._kicks:
                    self._cond.wait(0.05)

    def finish(self) -> None:
        """Deliver what is left, wait for the child to exit; raises its error."""
        import pickle

        with self._cond:
            self._raise()
        self._send(pickle.dumps("finish"))
        with self._cond:
            while not self._done and self._error is None:
                self._cond.wait(0.5)
        self._stop()
        self._raise()

    def abandon(self) -> None:
        """Stop the child after the batch in hand (what is left stays queued)."""
        self._stop()

    def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        try:
            process.stdin.close()  # the child's stdin ends: it stops
        except OSError:
            pass
        try:
            process.wait(timeout=GRACE + 5)
        except Exception:
            process.kill()
            process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        try:
            process.stdout.close()
        except OSError:
            pass


def delivery_setup(
    config: Any, queue_path: str, provider: str, providers: list[str], rates: dict[str, float | None], batch: int
) -> bytes | None:
    """What a delivery child is started with, pickled; ``None`` when the config does not pickle."""
    import pickle

    try:
        return pickle.dumps(
            (os.getpid(), config, queue_path, provider, providers, rates, batch), protocol=pickle.HIGHEST_PROTOCOL
        )
    except Exception:
        return None


# -- the child ---------------------------------------------------------------------------------


class _Parent:
    """The run as the delivery child sees it: kicks and finish read from stdin, answers written to stdout."""

    def __init__(self, requests: Any, answers: Any) -> None:
        self._requests = requests
        self._answers = answers
        self._cond = threading.Condition()
        self._lock = threading.Lock()
        self.kicks = 0
        self.finish = False
        self.gone = False

    def listen(self) -> None:
        """Read the run's messages until its pipe ends (run on a daemon thread)."""
        import pickle

        while True:
            try:
                message = pickle.load(self._requests)
            except Exception:  # EOF: the run finished with us, or died
                message = None
            with self._cond:
                if message == "kick":
                    self.kicks += 1
                elif message == "finish":
                    self.finish = True
                else:
                    self.gone = True
                self._cond.notify_all()
            if message is None:
                # the batch in hand may finish; a rate limiter's long wait may not
                threading.Timer(GRACE, os._exit, (0,)).start()
                return

    def send(self, message: tuple[Any, ...]) -> None:
        """Answer the run; exits the process when the run is gone."""
        import pickle

        with self._lock:
            try:
                self._answers.write(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))
                self._answers.flush()
            except (BrokenPipeError, OSError):  # the run is gone
                os._exit(0)

    def wait(self, last: int) -> tuple[int, bool] | None:
        """Block until a kick after the ``last`` one, or finish: (kicks, finishing); ``None`` once the run is gone."""
        with self._cond:
            while not self.gone and not self.finish and self.kicks == last:
                self._cond.wait()
            if self.gone:
                return None
            return self.kicks, self.finish


def _child_main() -> None:
    import pickle

    from paxm_core.processes import protocol_pipes

    requests, answers = protocol_pipes()
    try:
        parent_pid, config, queue_path, provider, providers, rates, batch = pickle.load(requests)
    except EOFError:
        return
    from paxm_core.processes import die_with_parent

    die_with_parent(parent_pid)

    parent = _Parent(requests, answers)

    from paxm_core.backfill.rate import RateLimiter
    from paxm_core.backfill.writelock import QueueWriteLock
    from paxm_core.capture import CaptureQueue, routes_from_write_profiles
    from paxm_core.runtime import Runtime

    threading.Thread(target=parent.listen, name="paxm-backfill-delivery-stdin", daemon=True).start()
    try:
        runtime = Runtime.load(config=config, telemetry=None)
        routes: Any = (lambda _profile: [provider]) if provider else routes_from_write_profiles(config.write_profiles)
        queue = CaptureQueue(queue_path, routes=routes)
        # the run appends to this queue meanwhile: take turns on its write lock
        write_lock = QueueWriteLock(queue_path)
    except Exception as exc:
        parent.send(("error", f"the backfill delivery process could not start: {exc}"))
        return
    limiters = {name: RateLimiter(rates.get(name)) for name in providers}
    try:
        _serve(parent, queue, write_lock, runtime, providers, limiters, batch)
    except Exception as exc:
        parent.send(("error", str(exc) or type(exc).__name__))
    finally:
        queue.close()
        write_lock.close()
        runtime.close()


def _serve(
    parent: _Parent,
    queue: Any,
    write_lock: Any,
    runtime: Any,
    providers: Sequence[str],
    limiters: dict[str, Any],
    batch: int,
) -> None:
    """One delivery pass per kick (passes coalesce), until the run says finish or is gone."""
    from paxm_core.backfill.writelock import SerializedQueue

    def stopping() -> bool:
        return parent.gone

    def record(delivered: int, errors: list[str]) -> None:
        parent.send(("delivered", delivered, errors))

    last = 0
    while True:
        woken = parent.wait(last)
        if woken is None:
            break
        last, finishing = woken
        deliver_all(SerializedQueue(queue, write_lock), runtime.router, providers, limiters, batch, record, stopping)
        parent.send(("idle", last))
        if finishing:
            import resource

            usage = resource.getrusage(resource.RUSAGE_SELF)
            parent.send(("done", usage.ru_utime + usage.ru_stime))
            break


if __name__ == "__main__":
    _child_main()
