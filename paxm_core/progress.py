"""A progress bar for long work, shown only on a terminal.

``with progress("eval", total=40, show=not as_json) as bar: ... bar.update(done)`` draws
``eval [#######.........] 12/40  30%  ETA 0:14`` on stderr, redrawn at most ten times a
second and erased when done.  When stderr is not a terminal (a pipe, CI logs) or ``show`` is
false (``--json``) nothing at all is written, so scripted output never changes.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO

__all__ = ["Progress", "progress"]

_WIDTH = 24


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """One bar: ``update(done)`` / ``advance()``; ``close()`` (or leaving ``with``) erases it.

    :param label: what is progressing (``eval``, ``flush``).
    :param total: how many units in all; ``0`` while unknown (then a count and elapsed time).
    :param stream: where to draw (default: stderr).
    :param show: ``False`` draws nothing whatever the stream is (``--json``).
    :param clock: seconds, for the ETA (tests pass their own).
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
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._start = clock()
        self._last_draw = float("-inf")
        self._drawn = 0
        self.enabled = show and _is_terminal(self._stream)

    def update(self, done: int, total: int | None = None) -> None:
        """Set the count done (and the total, when it became known or changed)."""
        if total is not None:
            self.total = max(0, total)
        self.done = max(0, done)
        if not self.enabled:
            return
        now = self._clock()
        finished = self.total > 0 and self.done >= self.total
        if now - self._last_draw < 0.1 and not finished:
            return
        self._last_draw = now
        self._draw(self.render(now))

    def advance(self, step: int = 1) -> None:
        """Count ``step`` more units done."""
        self.update(self.done + step)

    def render(self, now: float | None = None) -> str:
        """The bar's text for the current counts (what :meth:`update` draws)."""
        elapsed = (self._clock() if now is None else now) - self._start
        if self.total <= 0:
            return f"{self.label} {self.done} done  {_clock(elapsed)}"
        fraction = min(1.0, self.done / self.total)
        filled = int(fraction * _WIDTH)
        bar = "#" * filled + "." * (_WIDTH - filled)
        if self.done >= self.total:
            eta = "done"
        elif self.done == 0:
            eta = "ETA --:--"
        else:
            eta = f"ETA {_clock(elapsed / self.done * (self.total - self.done))}"
        return f"{self.label} [{bar}] {self.done}/{self.total} {int(fraction * 100):3d}%  {eta}"

    def _draw(self, text: str) -> None:
        pad = " " * max(0, self._drawn - len(text))
        self._stream.write("\r" + text + pad)
        self._stream.flush()
        self._drawn = len(text)

    def close(self) -> None:
        """Erase the bar so the command's own output starts on a clean line."""
        if self.enabled and self._drawn:
            self._stream.write("\r" + " " * self._drawn + "\r")
            self._stream.flush()
            self._drawn = 0

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _is_terminal(stream: IO[str]) -> bool:
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream
        return False


def progress(label: str, total: int = 0, *, show: bool = True, stream: IO[str] | None = None) -> Progress:
    """A :class:`Progress` on stderr; draws only on a terminal and when ``show`` is true."""
    return Progress(label, total, stream=stream, show=show)
