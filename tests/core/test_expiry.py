"""Expiry has one rule (``attribution.expires_at_for``) and one reader of stored strings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from paxm_core.api.types import MemoryItem
from paxm_core.attribution import expires_at_for, metadata_expires_at
from paxm_core.router.policy import PutPolicy, Route

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_expires_at_for_adds_expires_after_and_never_without_it() -> None:
    assert expires_at_for(T0, 3600) == T0 + timedelta(hours=1)
    assert expires_at_for(T0, None) is None
    assert expires_at_for(T0, 0) is None
    assert expires_at_for(T0, -5) is None
    naive = datetime(2026, 3, 1, 12, 0)
    assert expires_at_for(naive, 60) == T0 + timedelta(minutes=1)  # naive is UTC
    plus2 = datetime(2026, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    assert expires_at_for(plus2, 60) == T0 + timedelta(minutes=1)


def test_metadata_expires_at_reads_the_first_parseable_key() -> None:
    assert metadata_expires_at({"paxm_expires_at": "2026-03-01T12:00:00Z"}) == T0
    assert metadata_expires_at({"paxm_expires_at": "not a time"}) is None
    assert metadata_expires_at({}) is None
    both = {"paxm_expires_at": "garbage", "expires_at": "2026-03-01T12:00:00Z"}
    assert metadata_expires_at(both, ("paxm_expires_at", "expires_at")) == T0


def test_the_router_applies_the_same_rule_to_every_write() -> None:
    from paxm_core.router.core import Router

    router = Router({}, clock=lambda: T0)
    policy = PutPolicy([Route("none")], "stm", 86400.0)
    created = T0 - timedelta(hours=3)
    (dated,) = router.prepare_items([MemoryItem(text="a", created_at=created)], policy)
    assert dated.expires_at == expires_at_for(created, 86400.0)
    (undated,) = router.prepare_items([MemoryItem(text="b")], policy)
    assert undated.expires_at == expires_at_for(T0, 86400.0)
    explicit = T0 + timedelta(days=9)
    (kept,) = router.prepare_items([MemoryItem(text="c", expires_at=explicit)], policy)
    assert kept.expires_at == explicit
    (ltm,) = router.prepare_items([MemoryItem(text="d")], PutPolicy([Route("none")], "ltm", None))
    assert ltm.expires_at is None
