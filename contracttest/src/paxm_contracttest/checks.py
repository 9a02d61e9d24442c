"""Assertion helpers of the contract suite; their messages tell a provider author what to fix."""

from __future__ import annotations

import math
from collections.abc import Sequence

from paxm_core import MemoryHit, MemoryRef

__all__ = ["check_hit_faithful", "check_ref", "check_scores", "describe_hits"]


def describe_hits(hits: Sequence[MemoryHit]) -> str:
    """A short readable list of hits for failure messages."""
    if not hits:
        return "no hits"
    shown = ", ".join(f"{h.id!r} (relevance={h.relevance!r}, text={h.text[:40]!r})" for h in hits[:5])
    return shown + (f" and {len(hits) - 5} more" if len(hits) > 5 else "")


def check_ref(ref: object, provider_name: str, what: str = "put") -> MemoryRef:
    """A write returned a :class:`MemoryRef` for this provider instance with a non-empty id."""
    assert isinstance(ref, MemoryRef), f"{what} must return a paxm_core.MemoryRef, got {type(ref).__name__}"
    assert ref.provider == provider_name, (
        f"{what} returned a ref for provider {ref.provider!r}; it must carry the instance name "
        f"{provider_name!r} (the name the factory was given)"
    )
    assert isinstance(ref.id, str) and ref.id.strip(), (
        f"{what} returned an empty ref id; ids must be stable and non-empty"
    )
    return ref


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_scores(hits: Sequence[MemoryHit]) -> None:
    """Every hit has finite ``relevance`` and ``score`` in ``[0, 1]``; ``raw_score`` is labelled.

    Out-of-range scores are *rejected*, never clamped: this check fails such a provider, and
    paxm's JSON-RPC provider refuses a plugin's search result holding one (a malformed-result
    error naming the hit), so a score of 50 is never shown as ``1.0000``.
    """
    for hit in hits:
        for field in ("relevance", "score"):
            value = getattr(hit, field)
            assert _is_number(value) and math.isfinite(value), (
                f"hit {hit.id!r}: {field} {value!r} is not a finite number"
            )
            assert 0.0 <= value <= 1.0, (
                f"hit {hit.id!r}: {field} {value!r} is outside [0, 1]. paxm needs higher-is-better "
                f"{field} in [0, 1]; normalize the backend's value and keep the original in raw_score "
                f"(with raw_score_kind)"
            )
        if hit.raw_score is not None:
            assert _is_number(hit.raw_score) and math.isfinite(hit.raw_score), (
                f"hit {hit.id!r}: raw_score {hit.raw_score!r} is not a finite number"
            )
            assert hit.raw_score_kind.strip(), (
                f"hit {hit.id!r}: raw_score is set but raw_score_kind is empty; name what the raw value means "
                f"(e.g. 'bm25', 'cosine_distance')"
            )


def check_hit_faithful(hit: MemoryHit, ref: MemoryRef, text: str, provider_name: str) -> None:
    """The hit for a written memory carries this provider's name, the written id and the exact text."""
    assert hit.provider == provider_name, (
        f"hit {hit.id!r} has provider {hit.provider!r}; search must stamp the instance name {provider_name!r}"
    )
    assert hit.id == ref.id, f"hit id {hit.id!r} differs from the id put returned ({ref.id!r})"
    assert hit.text == text, f"hit {hit.id!r} text {hit.text!r} differs from the written text {text!r}"
