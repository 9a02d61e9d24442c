"""Request, candidate and trace types of the retrieval pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field

from paxm_core import MemoryHit, SearchQuery, normalize_tier
from paxm_core.api.values import value_dataclass
from paxm_provider_sqlite.records import decode_metadata
from paxm_provider_sqlite.timestamps import parse_stamp

__all__ = ["RAW_SCORE_KIND", "Candidate", "Request", "Trace"]

RAW_SCORE_KIND = "sqlite_fts_bm25_negated"

#: Columns every candidate query selects, in this order.
ROW_COLUMNS = "m.rowid, m.id, m.text, m.source, m.metadata_json, m.created_at, m.tier, m.expires_at"


@value_dataclass(frozen=True)
class Request:
    """What the provider asks of the pipeline."""

    text: str
    limit: int = 0
    tiers: tuple[str, ...] = ()
    workspace: str = ""
    filters: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, query: SearchQuery) -> Request:
        """The request for a provider's ``search(query)``.

        ``query.metadata["workspace"]`` (trusted runtime context) narrows to that workspace;
        tiers are normalized, deduplicated and sorted.
        """
        return cls(
            text=query.text,
            limit=query.limit,
            tiers=tuple(sorted({normalize_tier(t) for t in query.tiers if t.strip()})),
            workspace=query.metadata.get("workspace", "").strip(),
            filters=dict(query.filters),
        )

    @property
    def result_limit(self) -> int:
        return self.limit if self.limit > 0 else 50

    @property
    def candidate_limit(self) -> int:
        return max(50, self.limit * 5) if self.limit > 0 else 50


@dataclass
class Candidate:
    """One memory row moving through the pipeline."""

    rowid: int
    id: str
    text: str
    source: str
    metadata_json: str
    created_at: str
    tier: str
    expires_at: str
    raw_score: float | None = None
    score: float = 0.0
    rrf: float = 0.0
    density: float = 0.0
    extra_metadata: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: tuple[object, ...], raw_score: float | None = None) -> Candidate:
        rowid, id_, text, source, meta, created, tier, expires = row[:8]
        return cls(
            int(rowid),  # type: ignore[call-overload]
            str(id_),
            str(text),
            str(source or ""),
            str(meta or ""),
            str(created or ""),
            str(tier or ""),
            str(expires or ""),
            raw_score,
        )

    def to_hit(self, provider: str, raw_score_kind: str = RAW_SCORE_KIND) -> MemoryHit:
        """The wire hit; relevance and score are the stage score in ``[0, 1]``.

        ``raw_score_kind`` names the backend's raw score (the Postgres provider maps its rows
        through this class too).
        """
        meta = decode_metadata(self.metadata_json)
        meta.update(self.extra_metadata)
        score = min(1.0, max(0.0, self.score))
        return MemoryHit(
            provider=provider,
            id=self.id,
            text=self.text,
            relevance=score,
            score=score,
            raw_score=self.raw_score,
            raw_score_kind=raw_score_kind if self.raw_score is not None else "",
            source=self.source,
            metadata=meta,
            created_at=parse_stamp(self.created_at),
            tier=normalize_tier(self.tier),
            expires_at=parse_stamp(self.expires_at),
        )


@value_dataclass
class Trace:
    """What each step of one search found (internal diagnostics, never on the wire)."""

    terms: list[str] = field(default_factory=list)
    branches: dict[str, int] = field(default_factory=dict)
    selected: str = ""
