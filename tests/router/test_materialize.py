"""``Candidate.materialize`` (attribution restored inline) equals a copy through ``restore_hit``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import MemoryHit
from paxm_core.api.types import MemoryOrigin, MemoryScope, Provenance
from paxm_core.attribution import (
    META_AGENT_ID,
    META_SCOPE_ID,
    META_SCOPE_TYPE,
    META_SESSION_ID,
    META_TIER,
    META_TURN_ID,
    META_USER_ID,
    effective_tier,
    restore_hit,
)
from paxm_core.router import Route, SearchPolicy
from paxm_core.router.pipeline import _candidate, eligible_hits

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
WORDS = st.sampled_from(["", "ann", " ann ", "core", "  ", "team", "personal"])
META_KEYS = [META_USER_ID, META_AGENT_ID, META_SESSION_ID, META_TURN_ID, META_SCOPE_TYPE, META_SCOPE_ID, META_TIER]


@st.composite
def hits(draw: st.DrawFn) -> MemoryHit:
    metadata = {key: draw(WORDS) for key in draw(st.lists(st.sampled_from(META_KEYS), unique=True))}
    if draw(st.booleans()):
        metadata["other"] = "x"
    return MemoryHit(
        provider="raw",
        id=draw(st.sampled_from(["1", "2"])),
        text=draw(st.sampled_from(["", "Deploy Friday"])),
        relevance=draw(st.sampled_from([0.5, 0.9, 1.0])),
        score=draw(st.sampled_from([0.0, 0.7])),
        raw_score=draw(st.sampled_from([None, 0.3])),
        raw_score_kind=draw(st.sampled_from(["", "cosine"])),
        source=draw(st.sampled_from(["", "cli"])),
        metadata=metadata,
        created_at=draw(
            st.sampled_from([None, NOW - timedelta(hours=3), (NOW - timedelta(hours=1)).replace(tzinfo=None)])
        ),
        tier=draw(st.sampled_from(["", "stm", "LTM"])),
        origin=MemoryOrigin(*(draw(st.sampled_from(["", "u", "a"])) for _ in range(4))),
        scope=MemoryScope(draw(st.sampled_from(["", "team"])), draw(st.sampled_from(["", "core"]))),
        provenance=Provenance(draw(WORDS), draw(WORDS), draw(WORDS), draw(WORDS)),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hits(), max_size=5), st.sampled_from([(), ("ltm",), ("stm",)]), st.booleans())
def test_materialize_equals_a_restored_copy(
    answer: list[MemoryHit], tiers: tuple[str, ...], dedupe_first: bool
) -> None:
    entries = eligible_hits("p", answer, Route("p"), SearchPolicy(recency_boost=0.1), tiers, NOW)
    for entry in entries:
        candidate = _candidate(entry)
        if dedupe_first:
            _ = candidate.provenance  # as the cut's walk does before the copy is made
        got = candidate.materialize()
        original = entry[5]
        created = original.created_at
        expected = original.copy(
            provider="p",
            relevance=candidate.relevance,
            score=candidate.score,
            created_at=created.replace(tzinfo=UTC) if created is not None and created.tzinfo is None else created,
            tier=effective_tier(original),
            expires_at=None,
        )
        restore_hit(expected)
        assert got == expected
        assert got.to_json() == expected.to_json()
        assert (got.origin, got.scope, got.provenance) == (expected.origin, expected.scope, expected.provenance)
        assert got.ranking == candidate.ranking
        assert got.metadata is not original.metadata
