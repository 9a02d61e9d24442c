"""A provider's large batch writes in a child process of their own.

Delivering a backlog into a local store is CPU work on both sides of the interpreter lock:
the capture queue claims and verifies the next batch while the provider analyses and writes
the current one (SQLite: term analysis, metadata, row building).  In one process the two
take turns on one GIL; measured on two cores, delivery used about 1.1 of them.
:class:`WriteProcessProvider` wraps a provider that declares
:data:`~paxm_core.protocols.CAP_SHARED_STORE` (its memories live in a file or a server, so a
second instance built from the same config sees the same store) and sends each
``put_batch`` of at least :data:`MIN_BATCH` items to a child process that runs that second
instance: the queue's work and the provider's then run on two cores.

What does not change:

* everything but large ``put_batch`` calls (recall, single writes, ``delete``, ``health``)
  runs on the wrapped provider in this process, as before;
* the items are the router's prepared items (attribution, session sequences), so the child
  stores exactly what the in-process call would have stored;
* failures: a provider error in the child is raised here as the same
  :class:`~paxm_core.errors.ProviderError` (its message), so delivery falls back to one
  episode at a time as it would in process.  When the child is gone (killed, crashed, could
  not start) the batch is written in this process instead, with the same items and ids: at
  least once, as a queue re-delivery after a crash (an upserting store keeps one copy).
  After a failure the child is not started again for :data:`RESTART_AFTER` seconds;
* deadlines: the wait for the child's answer ends with the call's deadline (or its cancel);
  the child is then killed, its open transaction rolls back, and the call raises
  :class:`~paxm_core.errors.DeadlineExceeded` (the queue retries it later).

The child starts on the first large batch (that batch is written in process while it starts,
so nobody waits for its start-up), serves one batch at a time (a second large batch arriving
meanwhile is written in process), and exits after :data:`IDLE_EXIT` seconds without work, when
its stdin ends (this process closed it, or died).

Protocol: length-prefixed pickles over the child's stdin and stdout.  This process sends the
setup ``(parent pid, provider type, instance name, ProviderConfig, sys.path, idle exit)``; the child
answers ``("ready",)`` or ``("failed", message)``; then per batch ``("put", items, seconds
left or None)`` -> ``("ok", [ids])`` or ``("error", message, retryable)``.  The items travel as
plain tuples of their fields (:func:`_wire_items`): pickling the dataclasses themselves calls
a Python ``__getstate__`` per object, five objects per item, which cost half of this process's
share of a hand-off.  Pickles cross only between this process and its own child, over pipes
nobody else holds.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import fields
from operator import attrgetter
from typing import IO, Any

from paxm_core.deadline import Deadline
from paxm_core.errors import ProviderError
from paxm_core.types import MemoryItem, MemoryOrigin, MemoryRef, MemoryScope, Provenance, TurnContext

__all__ = ["IDLE_EXIT", "MIN_BATCH", "RESTART_AFTER", "START_TIMEOUT", "WriteProcessProvider"]

#: smallest ``put_batch`` sent to the child: below it the pickling and the hand-off cost more
#: than the overlap gains (a live turn is one item)
MIN_BATCH = 64
#: seconds without a batch after which the child exits (a backlog is drained; memory back)
IDLE_EXIT = 30.0
#: seconds after a failed or lost child before another is started
RESTART_AFTER = 30.0
#: seconds the child may take to build its provider and answer ``ready``
START_TIMEOUT = 30.0

_LENGTH = struct.Struct("<I")
#: longest slice of a wait for the child: a cancelled deadline is seen within it
_POLL_SLICE = 0.05


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


# names from the dataclasses themselves, so a field added to an item travels without a change
# here (``MemoryItem(*values)``: the written-out ``__init__`` takes the fields in this order)
_ITEM_FIELDS = attrgetter(*_field_names(MemoryItem))
_PART_TYPES: dict[str, type] = {
    "origin": MemoryOrigin,
    "scope": MemoryScope,
    "provenance": Provenance,
    "turn": TurnContext,
}
#: (position in the item's fields, part type, getter of the part's fields)
_PARTS: tuple[tuple[int, type, attrgetter[Any]], ...] = tuple(
    (position, _PART_TYPES[name], attrgetter(*_field_names(_PART_TYPES[name])))
    for position, name in enumerate(_field_names(MemoryItem))
    if name in _PART_TYPES
)


def _wire_items(items: Sequence[MemoryItem]) -> list[Any]:
    """``items`` for the pipe: each exact :class:`MemoryItem` as a tuple of its fields.

    Its attribution parts and turn become tuples of theirs.  An item of a subclass (or with
    a subclassed part) goes as itself, pickled whole, so :func:`_items_from_wire` gives back
    an equal item of the same type either way.
    """
    wire: list[Any] = []
    append = wire.append
    for item in items:
        if type(item) is not MemoryItem:
            append(item)
            continue
        values = list(_ITEM_FIELDS(item))
        for position, kind, part_fields in _PARTS:
            part = values[position]
            if part is None:
                continue  # no turn
            if type(part) is not kind:
                break
            values[position] = part_fields(part)
        else:
            append(tuple(values))
            continue
        append(item)
    return wire


def _items_from_wire(wire: list[Any]) -> list[MemoryItem]:
    """Inverse of :func:`_wire_items`: the same items, equal field by field."""
    items: list[MemoryItem] = []
    append = items.append
    # a batch's items mostly share their attribution (one user, agent, scope): one object per
    # distinct value, a cache per part so equal strings never cross kinds
    built: list[dict[tuple[Any, ...], Any]] = [{} for _ in _PARTS]
    for entry in wire:
        if type(entry) is not tuple:
            append(entry)
            continue
        values = list(entry)
        for (position, kind, _), cache in zip(_PARTS, built, strict=True):
            key = values[position]
            if key is None:
                continue
            part = cache.get(key)
            if part is None:
                part = cache[key] = kind(*key)
            values[position] = part
        append(MemoryItem(*values))
    return items


class _Gone(Exception):
    """The child's pipes ended or broke: it exited or was killed."""


def _write_frame(stream: IO[bytes], message: object) -> None:
    import pickle

    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _read_exact(fd: int, size: int, wait: Any) -> bytes:
    """``size`` bytes from ``fd``; ``wait()`` blocks until it is readable (or raises)."""
    chunks: list[bytes] = []
    left = size
    while left:
        wait()
        chunk = os.read(fd, left)
        if not chunk:
            raise _Gone("end of stream")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, wait: Any) -> Any:
    import pickle

    (size,) = _LENGTH.unpack(_read_exact(fd, _LENGTH.size, wait))
    return pickle.loads(_read_exact(fd, size, wait))


class _Child:
    """One running child process and its pipes."""

    def __init__(self, setup: tuple[Any, ...]) -> None:
        import select

        from paxm_core.processes import start_child

        # the setup hands over this process's sys.path
        self.process = start_child("paxm_core.write_process")
        self.stdin: IO[bytes] = self.process.stdin
        self.fd = self.process.stdout.fileno()
        self.started = time.monotonic()
        self.ready = False
        self._poll = select.poll()
        self._poll.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            _write_frame(self.stdin, setup)
        except OSError as exc:
            self.stop(kill=True)
            raise _Gone(str(exc)) from exc

    def readable(self, seconds: float) -> bool:
        return bool(self._poll.poll(max(0, int(seconds * 1000))))

    def stop(self, *, kill: bool = False) -> None:
        """End the child: close its stdin (it exits after the batch in hand), or kill it."""
        process = self.process
        try:
            if kill:
                process.kill()
            else:
                self.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=None if kill else 5.0)
        except Exception:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class WriteProcessProvider:
    """``provider`` with its large ``put_batch`` calls run in a child process (see the module doc).

    :param provider: the in-process instance; every other call goes to it.
    :param kind: its provider type (the plugin's name), to build the child's instance.
    :param config: its :class:`~paxm_core.provider_config.ProviderConfig`, pickled to the child.
    :param min_batch: smallest batch sent to the child.
    :param idle_exit: seconds without work after which the child exits.
    """

    def __init__(
        self,
        provider: Any,
        kind: str,
        config: Any,
        *,
        min_batch: int = MIN_BATCH,
        idle_exit: float = IDLE_EXIT,
        restart_after: float = RESTART_AFTER,
    ) -> None:
        self._inner = provider
        self.name: str = provider.name
        self._kind = kind
        self._config = config
        self._min_batch = max(1, min_batch)
        self._idle_exit = idle_exit
        self._restart_after = restart_after
        #: held for a whole exchange with the child (one batch at a time); also guards _child
        self._lock = threading.Lock()
        self._child: _Child | None = None
        self._retry_at = 0.0
        self._closed = False
        #: batches written by the child, and in this process (small, busy or fallback)
        self.remote_batches = 0
        self.local_batches = 0
        #: what ended the last child that failed ("" while none has)
        self.last_failure = ""

    def __getattr__(self, attr: str) -> Any:
        # the provider's other methods (search, put, delete, capabilities ...) are its own;
        # private names are not forwarded (copy/pickle probe them before __init__ ran)
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._inner, attr)

    @property
    def wrapped(self) -> Any:
        """The in-process provider."""
        return self._inner

    def __repr__(self) -> str:
        return f"WriteProcessProvider({self._inner!r})"

    # -- writes ------------------------------------------------------------------------

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Write ``items``; at least :data:`MIN_BATCH` of them go through the child when it is up."""
        if len(items) >= self._min_batch and self._lock.acquire(blocking=False):
            try:
                child = self._usable_child()
                if child is not None:
                    refs = self._remote(child, items, deadline)
                    if refs is not None:
                        self.remote_batches += 1
                        return refs
            finally:
                self._lock.release()
        self.local_batches += 1
        return list(self._inner.put_batch(items, deadline))

    def _usable_child(self) -> _Child | None:
        """The ready child, or ``None`` (and a start begun when none runs); under ``_lock``."""
        if self._closed:
            return None
        child = self._child
        if child is not None and child.ready and child.process.poll() is not None:
            # exited between batches: an idle exit (status 0) may start again at once
            self._lose(child, f"exited with status {child.process.returncode}", backoff=child.process.returncode != 0)
            child = None
        if child is None:
            if time.monotonic() < self._retry_at:
                return None
            try:
                self._child = _Child(
                    (os.getpid(), self._kind, self.name, self._config, list(sys.path), self._idle_exit)
                )
            except (OSError, _Gone) as exc:
                self._retry_at = time.monotonic() + self._restart_after
                self.last_failure = f"could not start: {exc}"
                self._warn(self.last_failure)
            return None  # this batch in process while the child starts
        if child.ready:
            return child
        if not child.readable(0):  # its answer to the setup (ready, or why not) is not in yet
            if time.monotonic() - child.started > START_TIMEOUT:
                self._lose(child, f"not ready after {START_TIMEOUT:.0f} s", kill=True)
            return None
        try:
            answer = _read_frame(child.fd, lambda: None)
        except (_Gone, OSError, EOFError, ValueError, struct.error) as exc:
            self._lose(child, f"exited while starting ({exc})")
            return None
        if answer != ("ready",):
            detail = answer[1] if isinstance(answer, tuple) and len(answer) > 1 else repr(answer)
            self._lose(child, f"could not start: {detail}")
            return None
        child.ready = True
        return child

    def _remote(self, child: _Child, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef] | None:
        """One batch through ``child``; ``None`` when the child was lost (write in process)."""
        left = deadline.remaining()
        try:
            _write_frame(child.stdin, ("put", _wire_items(items), None if left == float("inf") else left))
        except (OSError, ValueError) as exc:  # a closed or broken pipe: the child is gone
            self._lose(child, f"lost while sending a batch ({exc})")
            return None

        def wait() -> None:
            while not child.readable(min(_POLL_SLICE, deadline.remaining())):
                if deadline.expired():
                    # the child's open transaction rolls back; the queue retries the batch
                    self._lose(child, "killed at the write's deadline", kill=True, backoff=False)
                    deadline.check(f"{self.name} put in its write process")

        try:
            answer = _read_frame(child.fd, wait)
        except (_Gone, OSError, EOFError, ValueError, struct.error) as exc:
            self._lose(child, f"lost during a batch ({exc})")
            return None
        if answer[0] == "ok":
            name = self.name
            return [MemoryRef(name, item_id) for item_id in answer[1]]
        raise ProviderError(self.name, "put", str(answer[1]), retryable=bool(answer[2]))

    def _lose(self, child: _Child, why: str, *, kill: bool = False, backoff: bool = True) -> None:
        if self._child is child:
            self._child = None
        child.stop(kill=True if kill else child.process.poll() is None)
        if backoff:
            self._retry_at = time.monotonic() + self._restart_after
            self.last_failure = why
            self._warn(why)

    def _warn(self, why: str) -> None:
        # stderr is the daemon's log; the batch itself is written in process, nothing is lost
        sys.stderr.write(f"paxm: {self.name}: write process {why}; writing in process\n")

    # -- lifecycle ---------------------------------------------------------------------

    def child_pid(self) -> int | None:
        """The running child's pid (``None`` when none runs); for tests and diagnostics."""
        child = self._child
        return child.process.pid if child is not None and child.process.poll() is None else None

    def close(self) -> None:
        """Stop the child (after the batch in hand), then close the provider."""
        with self._lock:
            self._closed = True
            child, self._child = self._child, None
        if child is not None:
            child.stop()
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()


# -- the child ---------------------------------------------------------------------------------


def _child_main() -> int:
    from paxm_core.processes import protocol_pipes

    requests, answers = protocol_pipes()
    fd = requests.fileno()
    try:
        parent, kind, name, config, path, idle_exit = _read_frame(fd, lambda: None)
    except (_Gone, EOFError):
        return 0
    # Not PR_SET_PDEATHSIG: Linux sends it when the *thread* that started the child ends, and
    # the daemon's delivery threads come and go.  The parent's death ends this stdin instead
    # (its pipes are close-on-exec, so no other process holds them): the wait below sees it,
    # and a batch in hand ends by its deadline.
    if os.getppid() != parent:  # the parent died before the setup was read
        return 0
    sys.path[:] = path
    try:
        from paxm_core.plugins import get_plugin_manager

        provider: Any = get_plugin_manager().provider_type(kind).factory(name, config)
        provider.health(Deadline.after(START_TIMEOUT))
    except Exception as exc:
        _write_frame(answers, ("failed", str(exc) or type(exc).__name__))
        return 1
    _write_frame(answers, ("ready",))
    import select

    poll = select.poll()
    poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        while True:
            if not poll.poll(int(idle_exit * 1000)):
                return 0  # idle: the backlog is drained; the parent starts another when needed
            try:
                _op, wire, left = _read_frame(fd, lambda: None)
            except (_Gone, EOFError):
                return 0  # stdin ended: the parent closed us or died
            try:
                refs = provider.put_batch(_items_from_wire(wire), Deadline.after(left))
                answer: tuple[Any, ...] = ("ok", [ref.id for ref in refs])
            except Exception as exc:
                detail = exc.detail if isinstance(exc, ProviderError) else str(exc) or type(exc).__name__
                answer = ("error", detail, bool(getattr(exc, "retryable", False)))
            try:
                _write_frame(answers, answer)
            except OSError:
                return 0  # the parent is gone
    finally:
        close = getattr(provider, "close", None)
        if callable(close):
            close()


if __name__ == "__main__":
    sys.exit(_child_main())
