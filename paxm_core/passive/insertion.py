"""The insertion filter: which recalled hits reach the model (stricter than recall: the user did not ask)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from paxm_core.api.types import SEMANTIC_SCORE_KIND_PREFIX
from paxm_core.router.pipeline import FIRST_HIT_SHARE

if TYPE_CHECKING:
    from paxm_core.config.model import HookInsertionConfig

__all__ = ["InsertionPolicy", "filter_insertion_hits", "is_semantic_hit", "significant_query_terms"]

_STOP_WORDS = frozenset({"about", "check", "please", "有没有", "是否", "什么", "这个", "那个"})
# Unicode letters and numbers: \w minus the underscore
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

H = TypeVar("H")


@dataclass(frozen=True)
class InsertionPolicy:
    """``min_score`` (a share of the best hit's score; 0 = off), ``max_items`` (0 = no cap) and ``require_query_terms``.

    The all-default policy is "no filter", as upstream.
    """

    min_score: float = 0.0
    max_items: int = 0
    require_query_terms: bool = False

    @classmethod
    def from_config(cls, value: HookInsertionConfig | None) -> InsertionPolicy:
        """Build from a hook's ``insertion`` section (``None``: no filtering)."""
        if value is None:
            return cls()
        return cls(
            min_score=float(value.min_score or 0.0),
            max_items=int(value.max_items or 0),
            require_query_terms=bool(value.require_query_terms),
        )

    @property
    def is_empty(self) -> bool:
        """True when the policy filters nothing."""
        return self == InsertionPolicy()


def significant_query_terms(query: str) -> list[str]:
    """Lowercased letter/number tokens of at least 3 characters, minus a few filler words."""
    return [t for t in _TOKEN.findall(query.lower()) if len(t) >= 3 and t not in _STOP_WORDS]


def is_semantic_hit(hit: object) -> bool:
    """True if ``hit`` was matched by meaning (its ``raw_score_kind`` says so), not by shared words."""
    return str(getattr(hit, "raw_score_kind", "") or "").startswith(SEMANTIC_SCORE_KIND_PREFIX)


def _score(hit: object) -> float:
    return float(getattr(hit, "score", 0.0))


def filter_insertion_hits(hits: Sequence[H], query: str, policy: InsertionPolicy) -> list[H]:
    """Keep hits (in order) that pass ``policy``; hits need ``.score`` and ``.text``.

    The first hit needs :data:`~paxm_core.router.pipeline.FIRST_HIT_SHARE` of ``min_score`` (all
    of it when found by meaning alone), the others ``min_score`` times the best score (capped at
    1); without a first hit worth injecting, every hit needs the plain ``min_score``.  With
    ``require_query_terms`` a query without significant terms admits nothing, and a hit must
    share one of them unless it is semantic (:func:`is_semantic_hit`).
    """
    if policy.is_empty:
        return list(hits)
    limit = policy.max_items if policy.max_items > 0 else len(hits)
    terms = significant_query_terms(query) if policy.require_query_terms else []
    if policy.require_query_terms and not terms:
        return []
    share = 1.0 if hits and is_semantic_hit(hits[0]) else FIRST_HIT_SHARE
    first = bool(hits) and _score(hits[0]) >= policy.min_score * share
    # without a first hit worth injecting, the others need the plain number
    floor = policy.min_score * min(1.0, max(map(_score, hits))) if first else policy.min_score
    out: list[H] = []
    for n, hit in enumerate(hits):
        if len(out) >= limit:
            break
        if (n > 0 or not first) and _score(hit) < floor:
            continue
        if policy.require_query_terms and not is_semantic_hit(hit):
            text = str(getattr(hit, "text", "")).lower()
            if not any(term in text for term in terms):
                continue
        out.append(hit)
    return out
