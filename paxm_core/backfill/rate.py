"""``--rate`` values (``30/m``, ``5/s``, ``1000/h``) and a token bucket that holds them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from paxm_core.api.errors import UsageError

__all__ = ["RateLimiter", "parse_rate"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*([smh])\s*$")


def parse_rate(text: str) -> float:
    """``"30/m"`` -> turns per second (0.5); raises :class:`UsageError` on anything else."""
    match = _RATE.match(text or "")
    if match is None or float(match.group(1)) <= 0:
        raise UsageError(f"invalid rate {text!r}: use COUNT/UNIT with UNIT s, m or h (e.g. 30/m)")
    return float(match.group(1)) / _UNITS[match.group(2)]


class RateLimiter:
    """Token bucket: at most ``per_second`` on average (``None``: unlimited), bursts of one second's worth."""

    def __init__(
        self,
        per_second: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.per_second = per_second
        self.burst = max(1.0, per_second or 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._last = clock()

    def allowance(self, wanted: int) -> int:
        """How many of ``wanted`` may go now (waits until at least one may)."""
        if self.per_second is None:
            return wanted
        while True:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
            self._last = now
            if self._tokens >= 1.0:
                take = min(wanted, int(self._tokens))
                self._tokens -= take
                return take
            self._sleep((1.0 - self._tokens) / self.per_second)
