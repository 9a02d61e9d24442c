"""Telemetry recording: event log fields, privacy, rotation, metrics, best effort, concurrency."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.api.timefmt import format_time
from paxm_core.api.types import MemoryHit, MemoryRef, ProviderErrorInfo, ProviderRecall
from paxm_core.config import load_config
from paxm_core.config.model import RecallProfileConfig, RouteConfig, WriteProfileConfig
from paxm_core.router.policy import RecallResult, RememberResult
from paxm_core.telemetry import Telemetry, TelemetryError, TelemetrySettings
from paxm_core.telemetry.metrics import Counter, provider_recall_p95_ms

SECRET_QUERY = "where is the launch code zebra-7781 kept"
SECRET_TEXT = "launch code zebra-7781 lives in the blue vault"


def make(tmp_path: Path, **overrides: Any) -> Telemetry:
    settings = TelemetrySettings(dir=tmp_path / "state", **overrides)
    config = load_config(tmp_path / "config.yaml")
    config.recall_profiles["default"] = RecallProfileConfig(
        providers=[RouteConfig(name="sqlite", required=True), RouteConfig(name="mem0")]
    )
    config.write_profiles["default"] = WriteProfileConfig(providers=[RouteConfig(name="sqlite", required=True)])
    return Telemetry(config, settings=settings)


def events_of(t: Telemetry) -> list[dict[str, Any]]:
    return [json.loads(line) for line in t.settings.events_path.read_text().splitlines()]


def recall(t: Telemetry, **kw: Any) -> None:
    result = RecallResult(
        query=SECRET_QUERY,
        hits=[MemoryHit(provider="sqlite", id="m1", text=SECRET_TEXT, score=0.9, relevance=0.8, tier="stm")],
        provider_recalls=[ProviderRecall(provider="sqlite", duration_ms=12, outcome="success")],
    )
    args: dict[str, Any] = {
        "query": SECRET_QUERY,
        "profile": "",
        "source": "cli",
        "command": "recall",
        "result": result,
        "error": "",
        "duration_ms": 15.9,
    }
    args.update(kw)
    t.on_recall(**args)


def test_recall_event_has_upstream_fields_and_private_query(tmp_path: Path) -> None:
    t = make(tmp_path)
    recall(t)
    (event,) = events_of(t)
    assert list(event)[:3] == ["time", "kind", "source"]
    assert event["kind"] == "recall" and event["source"] == "cli" and event["command"] == "recall"
    assert event["profile"] == "default" and event["success"] is True
    assert event["duration_ms"] == 15
    assert event["query_length"] == len(SECRET_QUERY)
    assert len(event["query_hash"]) == 16 and int(event["query_hash"], 16) >= 0
    assert event["provider_recalls"] == {"sqlite": 1, "mem0": 1}
    assert event["provider_hits"] == {"sqlite": 1}
    assert event["recall_hits"] == [{"provider": "sqlite", "id": "m1", "score": 0.9, "relevance": 0.8, "tier": "stm"}]
    assert event["provider_recall_details"] == [{"provider": "sqlite", "duration_ms": 12, "outcome": "success"}]
    raw = t.settings.events_path.read_text() + t.settings.metrics_path.read_text()
    assert "zebra" not in raw and "launch" not in raw
    assert "query_preview" not in event and "text_preview" not in json.dumps(event)


def test_preview_is_opt_in(tmp_path: Path) -> None:
    t = make(tmp_path, capture_query_preview=True, query_preview_chars=10)
    recall(t)
    (event,) = events_of(t)
    assert event["query_preview"] == SECRET_QUERY[:10]
    assert event["recall_hits"][0]["text_preview"] == SECRET_TEXT


def test_record_never_writes_a_raw_query_key(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.record({"kind": "hook_recall", "source": "hook", "target": "claude", "query": SECRET_QUERY, "success": True})
    (event,) = events_of(t)
    assert "query" not in event and event["query_length"] == len(SECRET_QUERY)
    assert "zebra" not in t.settings.events_path.read_text()


def test_files_are_private(tmp_path: Path) -> None:
    t = make(tmp_path)
    recall(t)
    assert stat.S_IMODE(t.settings.dir.stat().st_mode) == 0o700
    for path in (t.settings.events_path, t.settings.metrics_path, t.settings.lock_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_remember_and_failed_recall_events(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.on_remember(
        profile="",
        source="mcp",
        command="remember",
        result=RememberResult(refs=[MemoryRef("sqlite", "a1")]),
        duration_ms=4,
    )
    failed = RecallResult(
        query="q", provider_errors=[ProviderErrorInfo(provider="sqlite", required=True, op="search", error="boom")]
    )
    recall(t, result=failed, error="sqlite search: boom " + "x" * 400)
    remember, bad = events_of(t)
    assert remember["kind"] == "remember" and remember["source"] == "mcp"
    assert remember["item_count"] == 1 and remember["ref_count"] == 1
    assert remember["provider_writes"] == {"sqlite": 1} and remember["provider_refs"] == {"sqlite": 1}
    assert bad["success"] is False and len(bad["error"]) == 240
    assert bad["provider_errors"] == [{"provider": "sqlite", "op": "search", "required": True}]
    summary = t.history(7).to_json()
    assert summary["totals"]["events"] == 2
    assert summary["totals"]["errors"] == 1 and summary["totals"]["provider_errors"] == 1
    assert summary["totals"]["writes"] == 1 and summary["totals"]["recalls"] == 1
    providers = {row["name"]: row["counter"] for row in summary["providers"]}
    assert providers["sqlite"]["refs"] == 1 and providers["sqlite"]["provider_errors"] == 1


def test_hook_events_feed_agent_hook_and_delivery_breakdowns(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.record(
        {
            "kind": "hook_recall",
            "source": "hook",
            "target": "claude",
            "hook_event": "user_input",
            "hit_count": 2,
            "inserted_count": 2,
            "success": True,
        }
    )
    t.record({"kind": "hook_write", "source": "hook", "target": "claude", "hook_event": "turn_end", "skipped": True})
    for ms in (30, 70):
        t.record(
            {
                "kind": "hook_delivery",
                "source": "capture_queue",
                "provider": "sqlite",
                "success": True,
                "provider_duration_ms": ms,
                "passive_write_latency_total_ms": ms * 10,
                "passive_write_samples": 1,
                "flushed": 1,
            }
        )
    s = t.history(1)
    agents = dict(s.agents)
    assert agents["claude"].recalls == 1 and agents["claude"].inserted == 2 and agents["claude"].skipped == 1
    assert agents["claude"].writes == 0  # a skipped write is not a write
    assert set(dict(s.hook_events)) == {"claude/user_input", "claude/turn_end"}
    sqlite = dict(s.providers)["sqlite"]
    assert sqlite.provider_write_samples == 2 and sqlite.provider_write_duration_ms == 100
    assert sqlite.passive_write_latency_total_ms == 1000
    assert s.totals.flushes == 2 and s.totals.writes == 2


def test_latency_histogram_and_p95(tmp_path: Path) -> None:
    t = make(tmp_path)
    for ms in [5] * 18 + [600, 3000]:
        recall(t, result=RecallResult(query="q", provider_recalls=[ProviderRecall("sqlite", ms, "success")]))
    recall(t, result=RecallResult(query="q", provider_recalls=[ProviderRecall("mem0", 250, "timeout", 250)]))
    providers = dict(t.history(1).providers)
    sqlite = providers["sqlite"]
    assert sqlite.provider_recall_samples == 20
    assert sqlite.provider_recall_latency_buckets == [18, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert provider_recall_p95_ms(sqlite) == 800
    assert providers["mem0"].provider_recall_timeouts == 1
    assert provider_recall_p95_ms(Counter()) == 0


def test_rotation_keeps_bounded_files_and_tail_spans_them(tmp_path: Path) -> None:
    t = make(tmp_path, max_event_file_bytes=600, max_event_files=3)
    for i in range(40):
        t.record({"kind": "remember", "source": "cli", "profile": f"p{i:02d}", "success": True})
    names = sorted(p.name for p in t.settings.dir.iterdir() if p.name.startswith("events"))
    assert names == ["events.jsonl", "events.jsonl.1", "events.jsonl.2"]
    for name in names:
        assert (t.settings.dir / name).stat().st_size <= 600
    tail = t.tail(5)
    assert [e["profile"] for e in tail] == [f"p{i:02d}" for i in range(35, 40)]
    everything = t.tail(1000)
    profiles = [e["profile"] for e in everything]
    assert profiles == sorted(profiles) and profiles[-1] == "p39" and len(profiles) < 40
    # metrics keep counting what the log rotated away
    assert t.history(1).totals.events == 40


def test_retention_prunes_old_days_and_history_window(tmp_path: Path) -> None:
    t = make(tmp_path, retention_days=3)
    now = datetime.now(UTC)
    for days_ago in (10, 2, 1, 0):
        t.record({"kind": "recall", "time": format_time(now - timedelta(days=days_ago)), "success": True})
    metrics = json.loads(t.settings.metrics_path.read_text())
    assert len(metrics["daily"]) == 3
    assert metrics["totals"]["events"] == 4  # totals are lifetime
    assert t.history(1).totals.events == 1
    assert t.history(2).totals.events == 2
    assert t.history(0).days == 3 and t.history(0).totals.events == 3
    huge = t.history(10**9)  # walks stored buckets, not a billion dates
    assert huge.totals.events == 3 and [d for d, _ in huge.daily] == sorted(d for d, _ in huge.daily)


def test_failures_are_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    t = Telemetry(None, settings=TelemetrySettings(dir=blocker / "state"))
    recall(t)
    t.on_remember(profile="", source="cli", command="remember", result=None, error="x", duration_ms=1)
    t.record({"kind": "hook_write"})
    err = capsys.readouterr().err
    assert err.count("paxm telemetry skipped:") == 3


def test_disabled_telemetry_writes_nothing(tmp_path: Path) -> None:
    t = make(tmp_path, enabled=False)
    recall(t)
    assert not t.settings.dir.exists()
    assert t.history(7).totals.events == 0


def test_corrupt_metrics_is_set_aside_by_writers_and_reported_by_readers(tmp_path: Path) -> None:
    t = make(tmp_path)
    recall(t)
    t.settings.metrics_path.write_text("{not json")
    with pytest.raises(TelemetryError, match="corrupt"):
        t.history(7)
    recall(t)
    assert t.history(7).totals.events == 1
    assert (t.settings.dir / "metrics.json.corrupt").read_text() == "{not json"


def test_torn_and_garbage_lines_are_skipped(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.record({"kind": "recall", "success": True})
    with t.settings.events_path.open("a") as fh:
        fh.write("garbage\n[1,2]\n")
    t.record({"kind": "remember", "success": True})
    with t.settings.events_path.open("a") as fh:
        fh.write('{"kind":"half')
    assert [e["kind"] for e in t.tail(10)] == ["recall", "remember"]


_WORKER = """
import sys
from pathlib import Path
from paxm_core.telemetry import Telemetry, TelemetrySettings
t = Telemetry(None, settings=TelemetrySettings(dir=Path(sys.argv[1]), max_event_file_bytes=4000))
for i in range(int(sys.argv[3])):
    t.record({"kind": "remember", "source": "cli", "profile": sys.argv[2], "success": True, "item_count": 1})
"""


def test_concurrent_processes_lose_no_counts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(state), f"w{n}", "25"], env=os.environ.copy())
        for n in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    t = Telemetry(None, settings=TelemetrySettings(dir=state, max_event_file_bytes=4000))
    summary = t.history(1)
    assert summary.totals.events == 100 and summary.totals.items == 100
    assert {name: c.events for name, c in summary.profiles} == {f"w{n}": 25 for n in range(4)}
    for event in t.tail(1000):  # every surviving line is whole
        assert event["kind"] == "remember"


def test_follow_sees_every_event_across_rotations(tmp_path: Path) -> None:
    # Ten files of 700 bytes hold all 33 events, so a follower slowed by a busy machine can lag
    # several rotations behind and still must not lose or repeat a line.
    t = make(tmp_path, max_event_file_bytes=700, max_event_files=10)
    for i in range(3):
        t.record({"kind": "recall", "profile": f"old{i}", "success": True})
    seen: list[str] = []
    stop = threading.Event()
    follower = threading.Thread(
        target=t.follow,
        args=(2, lambda e: seen.append(e["profile"])),
        kwargs={"poll_interval": 0.01, "should_stop": stop.is_set},
    )
    follower.start()
    try:
        time.sleep(0.05)
        for i in range(30):
            t.record({"kind": "recall", "profile": f"new{i:02d}", "success": True})
            if i % 3 == 0:
                time.sleep(0.02)  # let the follower poll between some rotations
        deadline = time.monotonic() + 5
        while len(seen) < 32 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        stop.set()
        follower.join(timeout=5)
    assert seen == ["old1", "old2", *[f"new{i:02d}" for i in range(30)]]


def test_short_count_names_are_mapped_to_upstream_fields(tmp_path: Path) -> None:
    t = make(tmp_path)
    t.record({"kind": "hook_recall", "source": "hook", "target": "codex", "hits": 3, "inserted": 2, "timed_out": True,
              "budget_ms": 350, "success": True})  # fmt: skip
    (event,) = events_of(t)
    assert event["hit_count"] == 3 and event["inserted_count"] == 2 and event["recall_timed_out"] is True
    assert event["budget_ms"] == 350 and "hits" not in event
    totals = t.history(1).totals
    assert (totals.hits, totals.inserted, totals.recall_timeouts, totals.recalls) == (3, 2, 1, 1)


_DELIVERY = {
    "kind": "hook_delivery",
    "source": "capture_queue",
    "hook_event": "delivery",
    "provider": "sqlite",
    "provider_refs": {"sqlite": 1},
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    events=st.lists(
        st.tuples(st.text(max_size=120), st.booleans(), st.integers(0, 12), st.integers(0, 5000)),
        min_size=1,
        max_size=25,
    ),
    cap=st.integers(150, 3000),
    files=st.integers(1, 4),
)
def test_record_many_writes_what_record_called_in_turn_writes(
    tmp_path: Path, events: list[tuple[str, bool, int, int]], cap: int, files: int
) -> None:
    now = datetime.now(UTC)
    prepared = [
        {
            **_DELIVERY,
            "episode_id": episode,
            "success": ok,
            "time": format_time(now - timedelta(days=days_ago)),
            "duration_ms": duration,
            **({} if ok else {"error": f"failed {episode}"}),
        }
        for episode, ok, days_ago, duration in events
    ]
    root = tmp_path / uuid.uuid4().hex
    one, many = (
        make(root / name, max_event_file_bytes=cap, max_event_files=files, retention_days=7) for name in ("one", "many")
    )
    for event in prepared:
        one.record(event)
    many.record_many(iter(prepared))

    def files_of(t: Telemetry) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(t.settings.dir.iterdir()) if p.name != "telemetry.lock"}

    assert files_of(many) == files_of(one)
    assert many.tail(1000) == one.tail(1000)
    metrics = json.loads(many.settings.metrics_path.read_text())
    assert metrics["totals"]["events"] == len(prepared)  # totals are lifetime
    assert len(metrics.get("daily", {})) <= 7  # days older than the retention window were pruned


def test_record_many_of_nothing_writes_nothing_and_errors_are_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = make(tmp_path)
    t.record_many([])
    assert not t.settings.dir.exists() or not t.settings.events_path.exists()
    t.settings.dir.mkdir(parents=True, exist_ok=True)
    t.settings.metrics_path.mkdir()  # the metrics file cannot be read: telemetry is best effort
    t.record_many([{**_DELIVERY, "episode_id": "e1", "success": True}])
    assert "paxm telemetry skipped" in capsys.readouterr().err


@pytest.mark.parametrize("via_env", [False, True])
def test_an_unset_telemetry_dir_follows_the_runtimes_state_dir_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_env: bool
) -> None:
    from paxm_core.runtime import session_sequence_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    config = load_config(tmp_path / "config.yaml")
    config.telemetry.dir = ""
    if via_env:  # $PAXM_CONFIG is the standard location: its state goes to the XDG state dir
        monkeypatch.setenv("PAXM_CONFIG", str(tmp_path / "config.yaml"))
    else:
        monkeypatch.delenv("PAXM_CONFIG", raising=False)
    directory = TelemetrySettings.from_config(config).dir
    assert directory == (tmp_path / "xdg" / "paxm" if via_env else tmp_path / "state")
    assert directory == session_sequence_path(config).parent
