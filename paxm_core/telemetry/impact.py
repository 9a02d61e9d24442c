"""``paxm impact``: sessions with passive memory against held-back sessions (docs/impact.md).

Only sessions with a holdback arm count (drawn from the session key: the groups differ only by
chance and by the memory); each signal's difference of means gets a 95% bootstrap interval, and
below :data:`MIN_SESSIONS` sessions per group nothing is concluded.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from paxm_core.api.json import JSONObject
from paxm_core.telemetry.sessions import SIGNALS, SessionRow

__all__ = ["MIN_SESSIONS", "ImpactReport", "SignalComparison", "compare"]

#: sessions needed in each group before paxm states any difference
MIN_SESSIONS = 20
#: bootstrap resamples per signal (a fixed seed: the same data always gives the same interval)
RESAMPLES = 1000
_LABELS = {
    "turns": "turns per session",
    "tool_calls": "tool calls per session",
    "tool_failures": "tool failures per session",
    "corrections": "user corrections per session",
    "repeats": "repeated questions per session",
}


@dataclass(frozen=True, slots=True)
class SignalComparison:
    """One signal: the two groups' means, their difference and its 95% interval."""

    name: str
    label: str
    memory_mean: float
    holdback_mean: float
    difference: float
    low: float | None = None
    high: float | None = None
    verdict: str = ""

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "signal": self.name,
            "label": self.label,
            "with_memory_mean": round(self.memory_mean, 4),
            "holdback_mean": round(self.holdback_mean, 4),
            "difference": round(self.difference, 4),
            "verdict": self.verdict,
        }
        if self.low is not None and self.high is not None:
            out["ci95"] = [round(self.low, 4), round(self.high, 4)]
        return out


@dataclass(slots=True)
class ImpactReport:
    """What ``paxm impact`` prints."""

    days: int
    with_memory: int
    holdback: int
    outside: int
    enough: bool
    statement: str
    signals: list[SignalComparison] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        return {
            "days": self.days,
            "sessions": {"with_memory": self.with_memory, "holdback": self.holdback, "not_in_comparison": self.outside},
            "min_sessions_per_group": MIN_SESSIONS,
            "enough_sessions": self.enough,
            "statement": self.statement,
            "signals": [s.to_json() for s in self.signals],
        }


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _interval(a: Sequence[int], b: Sequence[int], rng: random.Random) -> tuple[float, float]:
    """95% percentile bootstrap interval of ``mean(a) - mean(b)``."""
    diffs = sorted(
        sum(rng.choices(a, k=len(a))) / len(a) - sum(rng.choices(b, k=len(b))) / len(b) for _ in range(RESAMPLES)
    )
    return diffs[int(0.025 * (RESAMPLES - 1))], diffs[int(0.975 * (RESAMPLES - 1))]


def compare(rows: Sequence[SessionRow], days: int, *, min_sessions: int = MIN_SESSIONS) -> ImpactReport:
    """Compare the sessions of ``rows`` that have a holdback arm."""
    memory = [r for r in rows if r.arm == "memory"]
    held = [r for r in rows if r.arm == "holdback"]
    outside = len(rows) - len(memory) - len(held)
    enough = len(memory) >= min_sessions and len(held) >= min_sessions
    rng = random.Random(45)
    signals: list[SignalComparison] = []
    for name in SIGNALS:
        a, b = [r.signal(name) for r in memory], [r.signal(name) for r in held]
        label, mean_a, mean_b = _LABELS[name], _mean(a), _mean(b)
        if not enough:
            signals.append(SignalComparison(name, label, mean_a, mean_b, mean_a - mean_b))
            continue
        low, high = _interval(a, b, rng)
        verdict = "more" if low > 0 else "fewer" if high < 0 else ""
        verdict = f"{verdict} {label} with memory" if verdict else "no difference shown"
        signals.append(SignalComparison(name, label, mean_a, mean_b, mean_a - mean_b, low, high, verdict))
    if not memory and not held:
        statement = (
            "No session has a holdback arm: set passive.holdback (e.g. 0.1) so that some sessions get no passive "
            "memory, then compare."
        )
    elif not enough:
        statement = (
            f"Too few sessions to tell: {len(memory)} with memory and {len(held)} held back; "
            f"at least {min_sessions} of each are needed before any difference is stated."
        )
    else:
        statement = (
            "Differences are memory minus holdback, per session, with 95% bootstrap intervals; an interval that "
            "includes 0 shows no difference. Sessions were assigned by chance (a hash of the session key), but "
            "these are counts of what paxm sees, not measures of success."
        )
    return ImpactReport(days, len(memory), len(held), outside, enough, statement, signals)
