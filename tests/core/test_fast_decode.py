"""The fast paths of ``MemoryItem.from_json`` / ``replace`` equal the plain, field-by-field ones.

The queue decodes every stored event of every delivery with ``from_json``, so it checks
types inline and reads canonical timestamps with the C ``datetime.fromisoformat``.  These
properties pin it to a straightforward reference decoder (the one it replaced): equal items
on every input the reference accepts, a ``ValueError`` on every input it rejects.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api.timefmt import _parse_rfc3339, format_time
from paxm_core.api.types import MemoryItem, MemoryOrigin, MemoryScope, Provenance, TurnContext


def _ref_str(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


def _ref_map(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("not an object")
    out: dict[str, str] = {}
    for key, item in value.items():
        if item is None:
            continue
        if isinstance(item, bool):
            out[str(key)] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            out[str(key)] = str(item)
        else:
            raise ValueError("not a string")
    return out


def _ref_time(value: Any) -> datetime | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise ValueError("not a string")
    return _parse_rfc3339(value)  # the pattern parse, without parse_time's fast path


def _ref_part(cls: Any, data: Any, names: tuple[str, ...]) -> Any:
    if not data:
        return cls()
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return cls(*(_ref_str(data.get(k)) for k in names))


def reference_from_json(data: Any) -> MemoryItem:
    """The decoder before the fast path: every field through its checking helper."""
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return MemoryItem(
        text=_ref_str(data.get("text")),
        id=_ref_str(data.get("id")),
        source=_ref_str(data.get("source")),
        metadata=_ref_map(data.get("metadata")),
        created_at=_ref_time(data.get("created_at")),
        tier=_ref_str(data.get("tier")),
        expires_at=_ref_time(data.get("expires_at")),
        origin=_ref_part(MemoryOrigin, data.get("origin"), ("user_id", "agent_id", "session_id", "turn_id")),
        scope=_ref_part(MemoryScope, data.get("scope"), ("type", "id")),
        provenance=_ref_part(Provenance, data.get("provenance"), ("user_id", "agent_id", "scope_type", "scope_id")),
    )


def _outcome(fn: Any, data: Any) -> Any:
    try:
        return ("ok", fn(data))
    except ValueError:
        return ("error", None)


_times = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)).map(
    format_time
)
_time_text = st.one_of(
    _times,
    st.just("0001-01-01T00:00:00Z"),
    st.just("0001-01-01T00:00:59.5Z"),
    _times.map(lambda t: t[:-1] + "123Z" if "." in t else t[:-1] + ".123456789Z"),
    _times.map(lambda t: t.replace("Z", "+02:00")),
    _times.map(lambda t: " " + t),
    _times.map(lambda t: t.replace("-", "\u0661", 1)),  # an Arabic-Indic digit
    st.sampled_from(["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "20261201T101010Z"]),
    st.just("2026-12-01"),
    st.text(max_size=30),
)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
_anything = st.one_of(_scalar, st.lists(_scalar, max_size=2), st.dictionaries(st.text(max_size=4), _scalar, max_size=2))
_strings = st.one_of(st.text(max_size=12), st.none(), _anything)
_part = st.one_of(
    st.dictionaries(st.sampled_from(["user_id", "agent_id", "session_id", "turn_id", "type", "id", "x"]), _strings),
    _anything,
)
_item = st.fixed_dictionaries(
    {},
    optional={
        "text": _strings,
        "id": _strings,
        "source": _strings,
        "tier": _strings,
        "metadata": st.one_of(st.dictionaries(st.text(max_size=6), _scalar, max_size=4), _anything),
        "created_at": st.one_of(_time_text, _anything),
        "expires_at": st.one_of(_time_text, _anything),
        "origin": _part,
        "scope": _part,
        "provenance": _part,
        "unknown": _anything,
    },
)


@settings(max_examples=600, deadline=None)
@given(_item)
def test_fast_from_json_equals_the_reference_decoder(data: dict[str, Any]) -> None:
    assert _outcome(MemoryItem.from_json, data) == _outcome(reference_from_json, data)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_time_text, _anything))
def test_fast_timestamps_equal_parse_time(value: Any) -> None:
    fast = _outcome(lambda v: MemoryItem.from_json({"created_at": v}).created_at, value)
    assert fast == _outcome(_ref_time, value)
    if fast[0] == "ok" and fast[1] is not None:
        assert fast[1].tzinfo is not None and fast[1].utcoffset() == timedelta(0)


@settings(max_examples=200, deadline=None)
@given(
    st.builds(
        MemoryItem,
        text=st.text(max_size=20),
        id=st.text(max_size=5),
        metadata=st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
        # years before 1000: format_time's strftime writes no leading zeros (a timefmt issue)
        created_at=st.one_of(st.none(), st.datetimes(min_value=datetime(1000, 1, 1), timezones=st.just(UTC))),
        tier=st.sampled_from(["", "stm", "ltm"]),
        admission_text=st.text(max_size=5),
        turn=st.one_of(st.none(), st.builds(TurnContext, session_id=st.text(max_size=3))),
    ),
    st.dictionaries(
        st.sampled_from(["text", "id", "source", "tier", "admission_text"]), st.text(max_size=6), max_size=3
    ),
)
def test_fast_replace_equals_dataclasses_replace(item: MemoryItem, changes: dict[str, Any]) -> None:
    fast = item.replace(**changes)
    assert fast == dataclasses.replace(item, **changes)
    assert type(fast) is MemoryItem
    assert MemoryItem.from_json(fast.to_json()) == reference_from_json(fast.to_json())


def test_replace_rejects_an_unknown_field_and_keeps_items_frozen() -> None:
    item = MemoryItem(text="x")
    with pytest.raises(TypeError):
        item.replace(bogus=1)
    copy = item.replace(text="y")
    with pytest.raises(dataclasses.FrozenInstanceError):
        copy.text = "z"  # type: ignore[misc]
    assert item.text == "x" and copy.text == "y"
