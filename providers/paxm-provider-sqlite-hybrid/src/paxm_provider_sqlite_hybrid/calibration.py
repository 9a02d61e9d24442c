"""Mapping cosine similarity onto paxm's score scale, and the cut-off that admits a hit.

The constants were calibrated on this distribution's paraphrase suite (``evals/paraphrase``):
``CUTOFF`` sits above the similarity of nearly every unrelated query/memory pair there, and
``STRONG`` is where a paraphrase is unmistakable.  The score scale then lines up with the
router's default thresholds: a hit at the cut-off scores ``FLOOR_SCORE`` (enough for active
recall at 0.25 and for the initial-recall floor), and only a strong match reaches the passive
profile (0.75) and the hook insertion floor (0.8).  A lexical exact/strict hit scores 1.0, so
a semantic hit never outranks one; ``CEILING_SCORE`` keeps them apart.
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
