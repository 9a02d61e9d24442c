"""Cosine similarity onto paxm's score scale, calibrated on this distribution's paraphrase suite:
a hit at :data:`CUTOFF` scores :data:`FLOOR_SCORE` (active recall), only a :data:`STRONG` match
reaches the passive floors, and :data:`CEILING_SCORE` keeps every semantic hit under a lexical
exact/strict hit (``docs/hybrid-retrieval.md``, Scores).
"""

from __future__ import annotations

__all__ = ["CEILING_SCORE", "CUTOFF", "FLOOR_SCORE", "MARGIN", "RUNNER_UP_SCORE", "STRONG", "to_score"]

#: Cosine below which a memory is treated as unrelated (no hit at all).
CUTOFF = 0.28
#: A dense-only hit more than this below the best one is a runner-up, not an answer: it stays
#: in the ranking (a caller asking for ten gets ten) but scores ``RUNNER_UP_SCORE``.
MARGIN = 0.12
#: Score of a runner-up: under the router's default recall floor relative to any admitted best
#: hit (0.25 of ``FLOOR_SCORE`` is 0.0875), so default recalls show answers, not the answer's
#: neighbours.
RUNNER_UP_SCORE = 0.05
#: Cosine of an unmistakable paraphrase.
STRONG = 0.62
FLOOR_SCORE = 0.35
STRONG_SCORE = 0.80
CEILING_SCORE = 0.95


def to_score(cosine: float) -> float:
    """paxm score in ``[FLOOR_SCORE, CEILING_SCORE]`` for a cosine at or above :data:`CUTOFF`."""
    share = (cosine - CUTOFF) / (STRONG - CUTOFF)
    score = FLOOR_SCORE + share * (STRONG_SCORE - FLOOR_SCORE)
    return max(FLOOR_SCORE, min(CEILING_SCORE, score))
