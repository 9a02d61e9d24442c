"""A progress bar on stderr for long work (eval, flush, backfill), drawn only on a terminal.

``eval [#######.........] 12/40  30%  ETA 0:14``, redrawn at most ten times a second and erased
when done.  Off a terminal (a pipe, CI logs, ``TERM=dumb``) or with ``show`` false (``--json``)
nothing at all is written, so scripted output never changes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import IO

__all__ = ["Progress", "progress"]

_WIDTH = 24


def _clock(seconds: float) -> str:
    minutes, secs = divmod(max(0, int(seconds + 0.5)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """One bar: ``update(done, total)``; ``close()`` (or leaving ``with``) erases it.

    ``total`` ``0`` means unknown (then a count and the elapsed time); ``clock`` is for tests.
    """

    def __init__(
        self,
        label: str,
        total: int = 0,
        *,
        stream: IO[str] | None = None,
        show: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = max(0, total)
        self.done = 0
        self.detail = ""
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._start = clock()
        self._last_draw = float("-inf")
        self._drawn = 0
        self.enabled = show and os.environ.get("TERM") != "dumb" and _isatty(self._stream)

    def update(self, done: int, total: int | None = None, *, detail: str | None = None) -> None:
        """Set the count done, the total when it became known, and text shown instead of the count."""
        self.total = self.total if total is None else max(0, total)
        self.done = max(0, done)
        self.detail = self.detail if detail is None else detail
        now = self._clock()
        if not self.enabled or (now - self._last_draw < 0.1 and not 0 < self.total <= self.done):
            return
        self._last_draw = now
        text = self.render(now)
        self._stream.write("\r" + text + " " * max(0, self._drawn - len(text)))
        self._stream.flush()
        self._drawn = len(text)

    def render(self, now: float | None = None) -> str:
        """The bar's text for the current counts (what :meth:`update` draws)."""
        elapsed = (self._clock() if now is None else now) - self._start
        if self.total <= 0:
            return f"{self.label} {self.done} done  {_clock(elapsed)}"
        fraction = min(1.0, self.done / self.total)
        filled = int(fraction * _WIDTH)
        if self.done >= self.total:
            eta = "done"
        elif self.done == 0:
            eta = "ETA --:--"
        else:
            eta = f"ETA {_clock(elapsed / self.done * (self.total - self.done))}"
        count = self.detail or f"{self.done}/{self.total}"
        return f"{self.label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {count} {int(fraction * 100):3d}%  {eta}"

    def close(self) -> None:
        """Erase the bar so the command's own output starts on a clean line."""
        if self.enabled and self._drawn:
            self._stream.write("\r" + " " * self._drawn + "\r")
            self._stream.flush()
            self._drawn = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def progress(label: str, total: int = 0, *, show: bool = True) -> Progress:
    """A :class:`Progress` on stderr; draws only on a terminal and when ``show`` is true."""
    return Progress(label, total, show=show)
