"""The stored event text, written directly (``event_payload_json``), against the encoder it
replaced: ``canonical_json(encode_event_payload(item, profile))``.  Stored payloads and their
SHA-256 must stay byte-identical, so old queue files verify and re-appended events dedupe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core import MemoryItem, MemoryOrigin, MemoryScope, Provenance
from paxm_core.capture.episode import canonical_json, encode_event_payload, event_payload_json

#: empty, padded, quotes, backslashes, control and non-ASCII characters, surrogates-free unicode
strings = st.sampled_from(
    ["", " ", "a", ' "q" ', "back\\slash", "line\nbreak\t", "é ü 中文 🚀", "\x00\x1f\x7f"]
) | st.text(max_size=12)
times = st.none() | st.sampled_from(
    [
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 1, 2, 3, 4, 5),  # naive: taken as UTC
        datetime(1, 1, 1, tzinfo=UTC),
    ]
)
keys = st.sampled_from(["a", "B", "session_id", "paxm_episode_id", "é", "Z", "", "a b"]) | st.text(max_size=6)


@st.composite
def items(draw: Any) -> MemoryItem:
    return MemoryItem(
        text=draw(strings),
        id=draw(strings),
        source=draw(strings),
        metadata=draw(st.dictionaries(keys, strings, max_size=6)),
        created_at=draw(times),
        tier=draw(st.sampled_from(["", "stm", "ltm", " STM "])),
        expires_at=draw(times),
        origin=MemoryOrigin(draw(strings), draw(strings), draw(strings), draw(strings)),
        scope=MemoryScope(draw(strings), draw(strings)),
        provenance=Provenance(draw(strings), draw(strings), draw(strings), draw(strings)),
        admission_text=draw(strings),
    )


@settings(max_examples=800, deadline=None)
@given(items(), st.sampled_from(["default", "work", "é"]))
def test_written_text_equals_the_canonical_encoder(item: MemoryItem, profile: str) -> None:
    assert event_payload_json(item, profile) == canonical_json(encode_event_payload(item, profile))


class _Item(MemoryItem):
    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "extra": "kept"}


def test_other_types_take_the_encoder_path() -> None:
    # a subclass's own to_json, and metadata values that are not strings, are encoded as before
    sub = _Item(text="t", created_at=datetime(2026, 1, 2, tzinfo=UTC))
    assert '"extra":"kept"' in event_payload_json(sub, "default")
    odd = MemoryItem(text="t", metadata={"n": 1, "b": True})  # type: ignore[dict-item]
    assert event_payload_json(odd, "default") == canonical_json(encode_event_payload(odd, "default"))
    assert '"metadata":{"b":true,"n":1}' in event_payload_json(odd, "default")


def test_the_written_path_knows_every_field_of_the_item_types() -> None:
    # a field added to MemoryItem (or its attribution types) turns the written path off, so
    # the stored text never silently lacks it; this fails first, to bring the writer up to date
    from paxm_core.capture import episode

    assert episode._WRITTEN_FIELDS_MATCH
