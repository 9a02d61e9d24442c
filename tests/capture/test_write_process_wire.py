"""The write process's wire form of items (``_wire_items`` / ``_items_from_wire``).

Items cross to the child as tuples of their fields, not pickled dataclasses.  What must hold:
through a real pickle round trip every item comes back equal, of the same type, field by
field (attribution, times with their zones, the internal ``admission_text`` and ``turn``); a
subclass, or an item with a subclassed part, goes whole and comes back as itself; parts the
child shares between items are never confused across kinds (an origin and a provenance with
the same four strings stay an origin and a provenance).
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core import MemoryItem, MemoryOrigin, MemoryScope, Provenance
from paxm_core.types import TurnContext
from paxm_core.write_process import _items_from_wire, _wire_items

texts = st.text(max_size=40)
names = st.sampled_from(["", "ann", "bob", "team-core", "ünï"])
times = st.one_of(
    st.none(),
    st.datetimes(
        min_value=datetime(2000, 1, 1),
        max_value=datetime(2100, 1, 1),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
    ),
)


@st.composite
def items(draw: Any) -> MemoryItem:
    turn = draw(st.one_of(st.none(), st.builds(TurnContext, names, names, times, times)))
    return MemoryItem(
        text=draw(texts),
        id=draw(names),
        source=draw(st.sampled_from(["", "hook:episode", "cli"])),
        metadata=draw(st.dictionaries(st.sampled_from(["a", "paxm_x", "session_id"]), texts, max_size=3)),
        created_at=draw(times),
        tier=draw(st.sampled_from(["", "short", "long"])),
        expires_at=draw(times),
        origin=MemoryOrigin(draw(names), draw(names), draw(names), draw(names)),
        scope=MemoryScope(draw(st.sampled_from(["", "personal", "team"])), draw(names)),
        provenance=Provenance(draw(names), draw(names), draw(st.sampled_from(["", "team"])), draw(names)),
        admission_text=draw(texts),
        turn=turn,
    )


def _across_the_pipe(batch: list[MemoryItem]) -> list[MemoryItem]:
    return _items_from_wire(pickle.loads(pickle.dumps(_wire_items(batch), protocol=pickle.HIGHEST_PROTOCOL)))


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    assert a == b
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        assert type(x) is type(y), f.name
        if isinstance(x, datetime):
            assert x.utcoffset() == y.utcoffset(), f.name  # equal instants in another zone would pass ==


@settings(max_examples=150, deadline=None)
@given(st.lists(items(), max_size=8))
def test_every_item_comes_back_equal_field_by_field(batch: list[MemoryItem]) -> None:
    back = _across_the_pipe(batch)
    assert len(back) == len(batch)
    for original, copy in zip(batch, back, strict=True):
        _same(original, copy)
        for part in ("origin", "scope", "provenance", "turn"):
            if getattr(original, part) is not None:
                _same(getattr(original, part), getattr(copy, part))


def test_an_origin_and_a_provenance_with_the_same_strings_stay_apart() -> None:
    same = ("ann", "codex", "team", "core")
    item = MemoryItem("x", origin=MemoryOrigin(*same), provenance=Provenance(*same))
    (back,) = _across_the_pipe([item, item])[1:]
    assert type(back.origin) is MemoryOrigin and type(back.provenance) is Provenance
    assert back == item


class _TaggedItem(MemoryItem):
    __slots__ = ()


class _TaggedScope(MemoryScope):
    __slots__ = ()


def test_subclasses_travel_whole_and_come_back_as_themselves() -> None:
    plain = MemoryItem("plain", id="p")
    tagged = _TaggedItem("tagged", id="t")
    scoped = MemoryItem("scoped", id="s", scope=_TaggedScope("team", "core"))
    wire = _wire_items([plain, tagged, scoped])
    assert type(wire[0]) is tuple and wire[1] is tagged and wire[2] is scoped
    back = _across_the_pipe([plain, tagged, scoped])
    assert [type(b) for b in back] == [MemoryItem, _TaggedItem, MemoryItem]
    assert type(back[2].scope) is _TaggedScope
    assert back == [plain, tagged, scoped]
