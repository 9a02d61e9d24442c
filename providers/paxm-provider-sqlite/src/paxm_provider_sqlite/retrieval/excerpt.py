"""Placeholder replaced below."""

from __future__ import annotations

from paxm_provider_sqlite.retrieval.model import Candidate


def excerpt_candidates(query: str, hits: list[Candidate]) -> list[Candidate]:
    return hits
