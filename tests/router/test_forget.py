"""``Router.forget``: per-provider answers, unsupported providers reported, budgets kept."""

from __future__ import annotations

import threading
import time
from typing import Any

from paxm_core import Deadline, MemoryItem, MemoryRef, ProviderError


class Store:
    """A provider that can delete and can tell whether an id existed."""

    def __init__(self, name: str, ids: set[str], *, answers: bool = True) -> None:
        self._name = name
        self.ids = set(ids)
        self.answers = answers
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    def search(self, query: Any, deadline: Deadline) -> list[Any]:
        return []

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        self.ids.add(item.id)
        return MemoryRef(self._name, item.id)

    def health(self, deadline: Deadline) -> None:
        return None

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool | None:
        self.calls.append(ref.id)
        if ref.id == "boom":
            raise ProviderError(self._name, "delete", "backend refused")
        existed = ref.id in self.ids
        self.ids.discard(ref.id)
        return existed if self.answers else None


class ReadOnly(Store):
    delete = None  # type: ignore[assignment]


class Slow(Store):
    def __init__(self, name: str, release: threading.Event) -> None:
        super().__init__(name, {"a", "b"})
        self.release = release

    def delete(self, ref: MemoryRef, deadline: Deadline) -> bool | None:
        if ref.id == "b":
            self.release.wait(10)
        return super().delete(ref, deadline)


def test_each_provider_answers_for_each_id(make_router: Any) -> None:
    local = Store("local", {"x"})
    remote = Store("remote", {"x"}, answers=False)
    router = make_router({"local": local, "remote": remote})
    result = router.forget({"local": ["x", "y", "boom"], "remote": ["x"]})
    by = {p.provider: p for p in result.providers}
    assert (by["local"].deleted, by["local"].not_found, by["local"].failed) == (
        ["x"],
        ["y"],
        {"boom": "backend refused"},
    )
    assert by["local"].status == "partial"
    assert (by["remote"].status, by["remote"].accepted) == ("ok", ["x"])
    assert result.failed and result.gone("x") and not result.gone("y")
    assert local.ids == set() and remote.ids == set()
    data = result.to_json()
    assert data["failed"] is True
    assert data["providers"][0]["failed"] == [{"id": "boom", "error": "backend refused"}]


def test_a_provider_without_delete_is_reported_and_never_called(make_router: Any) -> None:
    router = make_router({"ro": ReadOnly("ro", {"x"}), "rw": Store("rw", {"x"})})
    result = router.forget({"ro": ["x"], "rw": ["x"]})
    by = {p.provider: p for p in result.providers}
    assert (by["ro"].status, by["ro"].unsupported) == ("unsupported", ["x"])
    assert by["rw"].deleted == ["x"]
    assert not result.failed


def test_a_slow_provider_times_out_without_holding_the_others(make_router: Any) -> None:
    release = threading.Event()
    slow = Slow("slow", release)
    fast = Store("fast", {"a"})
    router = make_router({"slow": slow, "fast": fast})
    started = time.monotonic()
    try:
        result = router.forget({"slow": ["a", "b"], "fast": ["a"]}, timeout=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    by = {p.provider: p for p in result.providers}
    assert by["fast"].deleted == ["a"]
    assert by["slow"].deleted == ["a"]  # what was answered before the budget ran out is kept
    assert list(by["slow"].failed) == ["b"] and "timed out" in by["slow"].failed["b"]
    assert by["slow"].status == "partial"


def test_unknown_provider_is_a_config_error(make_router: Any) -> None:
    import pytest

    from paxm_core.api.errors import ConfigError

    router = make_router({"local": Store("local", set())})
    with pytest.raises(ConfigError, match="not enabled"):
        router.forget({"nope": ["x"]})
