"""``SearchPolicy.optional_grace``: optional routes keep a recall only a grace after the required ones."""

from __future__ import annotations

import time
from typing import Any

from paxm_core import SearchQuery
from paxm_core.router import Route, SearchPolicy

GRACE = 0.2
SLACK = 0.35  # generous: the machine is shared


def _outcomes(result: Any) -> dict[str, str]:
    return {r.provider: r.outcome for r in result.provider_recalls}


def test_a_hung_optional_route_is_skipped_a_grace_after_the_required_ones(fakes: Any, make_router: Any) -> None:
    fast = fakes.ScriptedProvider("fast", [fakes.hit("fast", "1", "the answer", 0.9)], delay=0.1)
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"fast": fast, "stuck": stuck})
    policy = SearchPolicy([Route("fast", required=True, timeout=10), Route("stuck", timeout=10)], optional_grace=GRACE)
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    took = time.monotonic() - started
    assert 0.1 + GRACE - 0.01 <= took < 0.1 + GRACE + SLACK
    assert [h.id for h in result.hits] == ["1"]
    assert _outcomes(result) == {"fast": "success", "stuck": "skipped"}
    (error,) = result.provider_errors
    assert error.provider == "stuck" and not error.required and "skipped" in error.error
    assert stuck.deadlines[0].cancelled  # told to stop, as at a timeout
    assert result.to_json()["provider_recalls"][1]["outcome"] == "skipped"

    # the next recall finds its lane still busy: cut at the grace too, not at its 10 s timeout
    started = time.monotonic()
    again = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started < 0.1 + GRACE + SLACK
    recalls = {r.provider: r for r in again.provider_recalls}
    assert recalls["stuck"].outcome == "skipped" and recalls["stuck"].bulkhead_busy


def test_an_optional_route_answering_within_the_grace_is_kept(fakes: Any, make_router: Any) -> None:
    fast = fakes.ScriptedProvider("fast", [fakes.hit("fast", "1", "one", 0.9)])
    slower = fakes.ScriptedProvider("slower", [fakes.hit("slower", "2", "two", 0.8)], delay=GRACE / 4)
    router = make_router({"fast": fast, "slower": slower})
    policy = SearchPolicy([Route("fast", required=True, timeout=10), Route("slower", timeout=10)], optional_grace=GRACE)
    result = router.search(SearchQuery("q"), policy)
    assert _outcomes(result) == {"fast": "success", "slower": "success"}
    assert sorted(h.id for h in result.hits) == ["1", "2"]


def test_without_a_required_route_the_grace_starts_at_the_first_answer(fakes: Any, make_router: Any) -> None:
    slow = fakes.ScriptedProvider("slow", [fakes.hit("slow", "1", "one", 0.9)], delay=0.4)
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"slow": slow, "stuck": stuck})
    policy = SearchPolicy([Route("slow", timeout=10), Route("stuck", timeout=10)], optional_grace=GRACE)
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    took = time.monotonic() - started
    # the first answer comes after 0.4 s (longer than the grace): it is waited for, then the grace
    assert 0.4 + GRACE - 0.01 <= took < 0.4 + GRACE + SLACK
    assert _outcomes(result) == {"slow": "success", "stuck": "skipped"}


def test_a_route_timeout_shorter_than_the_grace_is_still_a_timeout(fakes: Any, make_router: Any) -> None:
    fast = fakes.ScriptedProvider("fast", [])
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"fast": fast, "stuck": stuck})
    policy = SearchPolicy([Route("fast", required=True), Route("stuck", timeout=0.05)], optional_grace=5.0)
    result = router.search(SearchQuery("q"), policy)
    assert _outcomes(result) == {"fast": "success", "stuck": "timeout"}


def test_without_a_grace_optional_routes_wait_for_their_own_timeout(fakes: Any, make_router: Any) -> None:
    fast = fakes.ScriptedProvider("fast", [])
    stuck = fakes.HangingProvider("stuck")
    router = make_router({"fast": fast, "stuck": stuck})
    policy = SearchPolicy([Route("fast", required=True), Route("stuck", timeout=0.5)])
    started = time.monotonic()
    result = router.search(SearchQuery("q"), policy)
    assert time.monotonic() - started >= 0.49
    assert _outcomes(result) == {"fast": "success", "stuck": "timeout"}
