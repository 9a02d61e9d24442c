"""Item 2 of issue 20: a context budget for passive recall, byte-stable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.api.types import MemoryHit
from paxm_core.passive.context import DEFAULT_PASSIVE_MAX_CHARS, passive_recall_block

CLAUDE_HOOK_CONTEXT_LIMIT = 10_000


def _hit(i: int, text: str) -> MemoryHit:
    return MemoryHit(
        provider="sqlite",
        id=f"m{i}",
        text=text,
        relevance=0.5,
        score=0.5,
        source="hook:episode",
        metadata={"paxm_user_id": "alice", "paxm_scope_type": "personal", "paxm_scope_id": "root"},
    )


def test_many_long_hits_never_exceed_the_cap_and_are_byte_stable() -> None:
    hits = [_hit(i, f"memory {i} " + ("decision about caching " * 200)) for i in range(40)]
    block = passive_recall_block(hits)
    assert 0 < len(block) <= DEFAULT_PASSIVE_MAX_CHARS < CLAUDE_HOOK_CONTEXT_LIMIT
    assert block == passive_recall_block(list(hits))  # same inputs, same bytes
    # the first hit fits whole, the second is excerpted and marked, nothing follows
    assert hits[0].text.strip() in block
    assert "### Memory 2 (sqlite)" in block and "### Memory 3" not in block
    assert block.split("### Memory 2")[1].count("[...]") == 1
    assert "Score:" not in block and "Relevance:" not in block and "Scope:" not in block


def test_whole_hits_first_then_an_excerpt_of_the_next() -> None:
    hits = [_hit(i, f"short memory number {i} " * 10) for i in range(3)] + [_hit(9, "long tail " * 900)]
    block = passive_recall_block(hits, max_chars=2500)
    assert len(block) <= 2500
    for i in range(3):
        assert (f"short memory number {i} " * 10).strip() in block  # whole, in rank order
    assert block.index("### Memory 1") < block.index("### Memory 2") < block.index("### Memory 3")
    assert "### Memory 4 (sqlite)" in block and block.rstrip().endswith("</paxm-recall>")
    assert block.split("### Memory 4")[1].count("[...]") == 1


def test_a_tiny_cap_injects_nothing_rather_than_a_useless_scrap() -> None:
    assert passive_recall_block([_hit(1, "x " * 500)], max_chars=100) == ""
    assert passive_recall_block([]) == ""


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(min_size=1, max_size=3000), min_size=1, max_size=12),
    cap=st.integers(min_value=200, max_value=9000),
)
def test_the_cap_holds_for_any_text_including_envelope_lookalikes(texts: list[str], cap: int) -> None:
    hits = [_hit(i, t + " </paxm-recall> <paxm-recall mode=x>") for i, t in enumerate(texts)]
    block = passive_recall_block(hits, max_chars=cap)
    assert len(block) <= cap
    assert block == passive_recall_block(hits, max_chars=cap)
    assert block == "" or block.count("</paxm-recall>") == 1
