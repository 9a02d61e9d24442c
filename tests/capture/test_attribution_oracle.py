"""``prepare_item`` and ``attribution_metadata`` against the object-building version they replaced.

Session 9 computes the merged attribution as plain strings instead of building temporary
origin/scope objects (the delivery path runs both for every item).  The oracle below is the
previous code, kept verbatim: for any item (padded or blank fields, legacy provenance, forged
or blank canonical keys, a turn context, a profile scope) the results must be identical,
metadata key order included, since the SQLite provider stores that order as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core import MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext
from paxm_core.attribution import (
    ATTRIBUTION_KEYS,
    META_AGENT_ID,
    META_SCOPE_ID,
    META_SCOPE_TYPE,
    META_SESSION_ID,
    META_TURN_ID,
    META_USER_ID,
    attribution_metadata,
    prepare_item,
)


def _old_merge(
    origin: MemoryOrigin, scope: MemoryScope, provenance: Provenance, metadata: Mapping[str, str]
) -> tuple[MemoryOrigin, MemoryScope]:
    if origin.user_id and origin.agent_id and origin.session_id and origin.turn_id and scope.type and scope.id:
        return origin, scope
    get = metadata.get
    merged_origin = MemoryOrigin(
        user_id=origin.user_id or provenance.user_id.strip() or (get(META_USER_ID) or "").strip(),
        agent_id=origin.agent_id or provenance.agent_id.strip() or (get(META_AGENT_ID) or "").strip(),
        session_id=origin.session_id or (get(META_SESSION_ID) or "").strip(),
        turn_id=origin.turn_id or (get(META_TURN_ID) or "").strip(),
    )
    merged_scope = MemoryScope(
        type=scope.type or provenance.scope_type.strip() or (get(META_SCOPE_TYPE) or "").strip(),
        id=scope.id or provenance.scope_id.strip() or (get(META_SCOPE_ID) or "").strip(),
    )
    return merged_origin, merged_scope


def _old_prepare_item(item: MemoryItem, default_scope: MemoryScope | None = None) -> MemoryItem:
    origin, scope = _old_merge(item.origin, item.scope, item.provenance, item.metadata)
    if item.turn is not None:
        origin = MemoryOrigin(
            origin.user_id,
            origin.agent_id,
            origin.session_id or item.turn.session_id.strip(),
            origin.turn_id or item.turn.turn_id.strip(),
        )
    if scope.is_empty() and default_scope is not None:
        scope = default_scope
    metadata = {k: v for k, v in item.metadata.items() if k not in ATTRIBUTION_KEYS}
    for key, value in (
        (META_USER_ID, origin.user_id),
        (META_AGENT_ID, origin.agent_id),
        (META_SESSION_ID, origin.session_id),
        (META_TURN_ID, origin.turn_id),
        (META_SCOPE_TYPE, scope.type),
        (META_SCOPE_ID, scope.id),
    ):
        if value.strip():
            metadata[key] = value.strip()
    return item.replace(
        metadata=metadata,
        origin=origin,
        scope=scope,
        provenance=Provenance(origin.user_id, origin.agent_id, scope.type, scope.id),
    )


names = st.sampled_from(["", "ann", "bob", " padded ", "  "])
keys = st.sampled_from([*ATTRIBUTION_KEYS, "paxm_tier", "paxm_episode_id", "workspace", "session_id", "turn_id"])
metadata = st.dictionaries(keys, st.sampled_from(["", "x", " forged ", "team", "  "]), max_size=7)
when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@st.composite
def items(draw: Any) -> MemoryItem:
    turn = draw(st.none() | st.builds(TurnContext, names, names, st.just(when), st.just(when)))
    return MemoryItem(
        text="t",
        metadata=draw(metadata),
        origin=MemoryOrigin(draw(names), draw(names), draw(names), draw(names)),
        scope=MemoryScope(draw(st.sampled_from(["", "personal", " team "])), draw(names)),
        provenance=Provenance(draw(names), draw(names), draw(st.sampled_from(["", "team", " "])), draw(names)),
        turn=turn,
    )


scopes = st.sampled_from([None, MemoryScope("personal", "ann"), MemoryScope("team", ""), MemoryScope()])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items(), scopes)
def test_prepare_item_matches_the_object_building_version(item: MemoryItem, default_scope: MemoryScope | None) -> None:
    new, old = prepare_item(item, default_scope), _old_prepare_item(item, default_scope)
    assert new == old
    assert list(new.metadata.items()) == list(old.metadata.items())  # order is stored text
    assert new.metadata is not item.metadata  # the router writes the sequence into it


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items())
def test_attribution_metadata_is_prepared_metadata(item: MemoryItem) -> None:
    got = attribution_metadata(item)
    assert list(got.items()) == list(_old_prepare_item(item).metadata.items())
    assert got is not item.metadata


def test_a_complete_item_keeps_its_objects() -> None:
    origin, scope = MemoryOrigin("u", "a", "s", "t"), MemoryScope("team", "core")
    item = MemoryItem(text="t", origin=origin, scope=scope, provenance=Provenance("u", "a", "team", "core"))
    prepared = prepare_item(item)
    assert prepared.origin is origin and prepared.scope is scope and prepared.provenance is item.provenance
    assert prepared == _old_prepare_item(item)
