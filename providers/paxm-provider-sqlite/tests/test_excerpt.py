"""Excerpts of long hits: extractive, bounded, fail-open."""

from __future__ import annotations

from paxm_core import Deadline, MemoryItem, SearchQuery
from paxm_provider_sqlite.provider import SQLiteProvider
from paxm_provider_sqlite.retrieval.excerpt import excerpt_text, segments_of

NO_LIMIT = Deadline.none()


def transcript(lines: int, special: dict[int, str], header: str = "[session 2026-04-02 s-17]") -> str:
    body = [f"User: routine chatter line {i} about lunch, chairs and the weather outside." for i in range(lines)]
    for index, text in special.items():
        body[index] = text
    return "\n".join([header, *body])


def test_long_hit_is_excerpted_with_neighbours_and_header(provider: SQLiteProvider) -> None:
    text = transcript(300, {150: "Assistant: the canary region moved to ap-south-2 after the outage."})
    provider.put(MemoryItem(text=text, id="t"), NO_LIMIT)
    (hit,) = provider.search(SearchQuery("canary region outage", limit=1), NO_LIMIT)
    assert hit.metadata["sqlite_excerpted"] == "true"
    assert hit.metadata["sqlite_original_bytes"] == str(len(text.encode()))
    assert len(hit.text.encode()) <= 2400
    lines = hit.text.split("\n")
    assert lines[0] == "[session 2026-04-02 s-17]"  # header kept
    assert "Assistant: the canary region moved to ap-south-2 after the outage." in lines
    assert "line 149 " in hit.text and "line 151 " in hit.text  # one neighbour each side
    assert "line 148 " not in hit.text and "line 152 " not in hit.text
    assert "[...]" in hit.text
    for line in lines:  # extractive: every line comes from the original
        assert line == "[...]" or line in text


def test_short_hits_untouched(provider: SQLiteProvider) -> None:
    text = transcript(50, {25: "Assistant: canary region is eu-west-3."})
    assert len(text.encode()) <= 8192
    provider.put(MemoryItem(text=text, id="t"), NO_LIMIT)
    (hit,) = provider.search(SearchQuery("canary region", limit=1), NO_LIMIT)
    assert hit.text == text and "sqlite_excerpted" not in hit.metadata


def test_budget_shrinks_with_more_hits(provider: SQLiteProvider) -> None:
    for n in range(5):
        provider.put(
            MemoryItem(text=transcript(300, {100 + n: f"Assistant: quota ceiling {n} was raised."}), id=f"t{n}"),
            NO_LIMIT,
        )
    hits = provider.search(SearchQuery("quota ceiling raised", limit=5), NO_LIMIT)
    assert len(hits) == 5
    for hit in hits:
        assert hit.metadata.get("sqlite_excerpted") == "true"
        assert len(hit.text.encode()) <= 8000 // 5


def test_fail_open_when_terms_are_not_together() -> None:
    # Each term is present but the budget cannot hold segments covering all of them.
    text = transcript(300, {10: "User: zebra " + "pad " * 190, 280: "User: quokka " + "pad " * 190})
    assert excerpt_text("zebra quokka", text, 300) is None


def test_temporal_query_prefers_dated_segment() -> None:
    text = transcript(
        300,
        {
            40: "User: the migration freeze was discussed at length.",
            200: "Assistant: the migration freeze starts on 2026-05-04.",
        },
    )
    excerpt = excerpt_text("when does the migration freeze start", text, 600)
    assert excerpt is not None and "2026-05-04" in excerpt


def test_segments_split_long_lines() -> None:
    long_line = "Speaker: " + " ".join(f"Sentence number {i} is here." for i in range(200))
    segments = segments_of(long_line + "\n" + "x" * 5000 + "\n" + "界" * 1000)
    assert all(len(s.encode()) <= 800 for s in segments)
    assert all(s.startswith("Speaker: ") for s in segments[:5])
    assert sum("界" in s for s in segments) >= 4
