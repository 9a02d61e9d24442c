"""Deadlines and cancellation handed to every provider call.

Providers are synchronous and run on router threads, so cancellation cannot interrupt them
from outside.  Instead every call receives a :class:`Deadline`: HTTP providers turn
:meth:`Deadline.remaining` into their client timeout, SQLite interrupts a query past it, and
every provider calls :meth:`Deadline.check` before starting work so an already-cancelled or
expired call fails at once.
"""

from __future__ import annotations

import math
import time

from paxm_core.api.errors import DeadlineExceeded

__all__ = ["Deadline"]


class Deadline:
    """An absolute point on the monotonic clock, plus an explicit cancel flag.

    ``Deadline(None)`` never expires on its own but can still be cancelled.
    """

    __slots__ = ("_at", "_cancelled")

    def __init__(self, at: float | None = None) -> None:
        self._at = at
        # A plain flag, not a threading.Event: nobody blocks on a cancel (waiters poll it),
        # setting an attribute is atomic under the GIL, and an Event costs a Condition and a
        # lock per deadline, several of which every recall creates.
        self._cancelled = False

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """A deadline ``seconds`` from now (``None`` means no time limit)."""
        if seconds is None:
            return cls(None)
        return cls(time.monotonic() + max(0.0, seconds))

    @classmethod
    def none(cls) -> Deadline:
        """A deadline with no time limit."""
        return cls(None)

    @classmethod
    def cancelled_now(cls) -> Deadline:
        """A deadline that is already cancelled (useful in tests and shutdown paths)."""
        deadline = cls(None)
        deadline.cancel()
        return deadline

    @property
    def at(self) -> float | None:
        """The monotonic instant this deadline expires, or ``None``."""
        return self._at

    def cancel(self) -> None:
        """Cancel every call holding this deadline; later :meth:`check` calls raise."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def remaining(self) -> float:
        """Seconds left (``math.inf`` when unlimited, ``0.0`` when expired or cancelled)."""
        if self._cancelled:
            return 0.0
        at = self._at
        if at is None:
            return math.inf
        left = at - time.monotonic()
        return left if left > 0.0 else 0.0

    def timeout(self, cap: float | None = None) -> float | None:
        """Remaining time as a client timeout: ``None`` when unlimited, optionally capped."""
        if self._at is None and not self._cancelled:
            return cap
        left = self.remaining()
        return left if cap is None else min(left, cap)

    def expired(self) -> bool:
        """True when cancelled or past the deadline."""
        return self.remaining() <= 0.0

    def check(self, op: str = "operation") -> None:
        """Raise :class:`~paxm_core.api.errors.DeadlineExceeded` if cancelled or expired."""
        if self._cancelled:
            raise DeadlineExceeded(f"{op} cancelled", cancelled=True)
        if self._at is not None and time.monotonic() >= self._at:
            raise DeadlineExceeded(f"{op} deadline exceeded")

    def child(self, seconds: float | None) -> Deadline:
        """A deadline that ends at the earlier of this one and ``seconds`` from now.

        A parent already cancelled gives a cancelled child; a later cancel of the parent is
        not seen by the child (the router creates children per route and cancels them itself).
        """
        at = self._at
        if seconds is not None:
            own = time.monotonic() + max(0.0, seconds)
            at = own if at is None else min(at, own)
        child = Deadline(at)
        child._cancelled = self._cancelled
        return child

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else f"remaining={self.remaining():.3f}s"
        return f"Deadline({state})"
