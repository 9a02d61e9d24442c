"""Reused daemon threads for the hook daemon's connections and recalls.

Handing a call to an idle thread costs a few microseconds; starting a thread for it costs a
few hundred on a loaded machine, on every prompt.  The threads are daemon threads: a call
stuck in a provider that ignores its deadline never holds the process's exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

__all__ = ["Workers"]


class Workers:
    """Runs each call on an idle thread, or on a new one (named ``<name>_<n>``) when none is idle."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0

    def run(self, call: Callable[[], object]) -> None:
        """Run ``call`` on a worker thread (its exceptions are the caller's business: catch them in it)."""
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                self._started += 1
                name = f"{self._name}_{self._started}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        self._calls.put(call)

    def _work(self) -> None:
        while True:
            call = self._calls.get()
            try:
                call()
            except BaseException:  # noqa: BLE001 - a worker never dies of its call
                pass
            del call  # do not keep the call's objects alive while idle
            with self._lock:
                self._idle += 1
