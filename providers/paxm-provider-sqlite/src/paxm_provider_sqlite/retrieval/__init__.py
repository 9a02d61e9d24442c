"""SQLite lexical recall: a deep module with a narrow API (``Request`` in, ``Candidate`` list out)."""

from __future__ import annotations

from paxm_provider_sqlite.retrieval.excerpt import excerpt_candidates
from paxm_provider_sqlite.retrieval.model import RAW_SCORE_KIND, Candidate, Request, Trace
from paxm_provider_sqlite.retrieval.search import search

__all__ = ["RAW_SCORE_KIND", "Candidate", "Request", "Trace", "excerpt_candidates", "search"]
