"""Property tests for attribution: canonical keys always mirror the structured fields, survive a
string-only store, and caller-supplied ``paxm_*`` keys never reach a provider query."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import MemoryHit, MemoryItem, MemoryOrigin, MemoryScope, Provenance
from paxm_core.attribution import ATTRIBUTION_KEYS, prepare_item, restore_hit, without_paxm_keys

names = st.sampled_from(["", "ann", "bob", " padded "])
keys = st.sampled_from([*ATTRIBUTION_KEYS, "paxm_tier", "paxm_custom", "workspace", "topic", "session_id"])
metadata = st.dictionaries(keys, st.sampled_from(["", "x", "forged", "team"]), max_size=6)


@st.composite
def items(draw: Any) -> MemoryItem:
    return MemoryItem(
        text="t",
        metadata=draw(metadata),
        origin=MemoryOrigin(draw(names).strip(), draw(names).strip(), draw(names).strip(), draw(names).strip()),
        scope=MemoryScope(draw(st.sampled_from(["", "personal", "team"])), draw(names).strip()),
        provenance=Provenance(draw(names), draw(names), draw(st.sampled_from(["", "team"])), draw(names)),
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items(), st.sampled_from([None, MemoryScope("personal", "ann"), MemoryScope("team", "core")]))
def test_canonical_keys_mirror_fields_and_round_trip(item: MemoryItem, default_scope: MemoryScope | None) -> None:
    prepared = prepare_item(item, default_scope)
    origin, scope, meta = prepared.origin, prepared.scope, prepared.metadata
    expected = {
        "paxm_user_id": origin.user_id,
        "paxm_agent_id": origin.agent_id,
        "paxm_session_id": origin.session_id,
        "paxm_turn_id": origin.turn_id,
        "paxm_scope_type": scope.type,
        "paxm_scope_id": scope.id,
    }
    assert {k: meta.get(k, "") for k in ATTRIBUTION_KEYS} == {k: v.strip() for k, v in expected.items()}
    # structured fields always win over the caller's metadata
    if item.origin.user_id:
        assert origin.user_id == item.origin.user_id
    if item.scope.type:
        assert scope.type == item.scope.type
    known = (
        item.scope.type,
        item.scope.id,
        item.provenance.scope_type.strip(),
        item.provenance.scope_id.strip(),
        item.metadata.get("paxm_scope_type", "").strip(),
        item.metadata.get("paxm_scope_id", "").strip(),
    )
    if not any(known):  # nothing known about the scope: the profile's applies
        assert scope == (default_scope or MemoryScope())
    else:  # what the item says is kept, never replaced by the profile's default
        assert (scope.type or scope.id) and (scope.type, scope.id) != ("", "")
        assert scope.type in known or scope.id in known
    # a store that keeps only text + string metadata gives the same attribution back
    hit = MemoryHit(provider="p", id="1", text="t", metadata=dict(meta))
    restore_hit(hit)
    assert hit.origin == MemoryOrigin(
        *(v.strip() for v in (origin.user_id, origin.agent_id, origin.session_id, origin.turn_id))
    )
    if scope.type.strip() and scope.id.strip():
        assert hit.scope == MemoryScope(scope.type.strip(), scope.id.strip())
    else:
        assert hit.scope == MemoryScope("unknown")
    assert hit.provenance == Provenance(hit.origin.user_id, hit.origin.agent_id, hit.scope.type, hit.scope.id)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata)
def test_caller_paxm_keys_never_survive(meta: dict[str, str]) -> None:
    cleaned = without_paxm_keys(meta)
    assert not any(k.startswith("paxm_") for k in cleaned)
    assert {k: v for k, v in meta.items() if not k.startswith("paxm_")} == cleaned


def test_caller_metadata_values_become_strings() -> None:
    meta: Any = {"n": 3, "ok": True, "none": None, "paxm_x": 1, "s": "v"}
    assert without_paxm_keys(meta) == {"n": "3", "ok": "true", "s": "v"}
