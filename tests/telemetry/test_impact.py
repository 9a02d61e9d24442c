"""``paxm impact`` over the session table (real subprocesses); the passive side is in tests/passive/test_economy.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paxm_core.passive.signals import is_correction, prompt_fingerprint
from paxm_core.telemetry import Telemetry
from paxm_core.telemetry.impact import MIN_SESSIONS, compare

PAXM = [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def paxm(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PAXM, "--config", str(config), *args], capture_output=True, text=True, timeout=60, env=os.environ.copy()
    )


def _signal(session: str, arm: str, **counts: int) -> dict[str, Any]:
    return {"kind": "session_signal", "session": session, "target": "claude", "arm": arm, **counts}


def test_impact_says_too_few_below_the_threshold(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    telemetry = Telemetry(paxm_config(config))
    out = json.loads(paxm(config, "impact", "--json").stdout)
    assert out["enough_sessions"] is False and "No session has a holdback arm" in out["statement"]
    telemetry.record_many(
        [_signal(f"m{i}", "memory", turns=3) for i in range(5)] + [_signal("h0", "holdback", turns=9)]
    )
    out = json.loads(paxm(config, "impact", "--json").stdout)
    assert out["sessions"] == {"with_memory": 5, "holdback": 1, "not_in_comparison": 0}
    assert out["enough_sessions"] is False and out["statement"].startswith("Too few sessions to tell")
    assert all("ci95" not in s for s in out["signals"])
    text = paxm(config, "impact").stdout
    assert "Too few sessions to tell: 5 with memory and 1 held back" in text


def paxm_config(path: Path) -> Any:
    from paxm_core.config import load_config

    return load_config(path)


def test_impact_states_a_difference_with_its_interval(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    telemetry = Telemetry(paxm_config(config))
    signals = [_signal(f"m{i}", "memory", turns=4 + i % 3, tool_calls=10 + i % 5) for i in range(30)]
    signals += [_signal(f"h{i}", "holdback", turns=8 + i % 3, tool_calls=10 + (i + 2) % 5) for i in range(25)]
    signals += [_signal("old", "", turns=50)]  # before holdback was on: not compared
    telemetry.record_many(signals)
    out = json.loads(paxm(config, "impact", "--json").stdout)
    assert out["sessions"] == {"with_memory": 30, "holdback": 25, "not_in_comparison": 1}
    turns, tools = out["signals"][0], out["signals"][1]
    assert turns["verdict"] == "fewer turns per session with memory" and turns["ci95"][1] < 0
    assert tools["verdict"] == "no difference shown" and tools["ci95"][0] <= 0 <= tools["ci95"][1]
    text = paxm(config, "impact").stdout
    assert "turns per session: 5.00 with memory, 8.96 held back; difference -3.96 (95% CI" in text
    assert "these are counts of what paxm sees" in text
    assert paxm(config, "impact", "--days", "0").returncode != 0


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 20), min_size=MIN_SESSIONS, max_size=40),
    st.lists(st.integers(0, 20), min_size=MIN_SESSIONS, max_size=40),
)
def test_the_interval_always_holds_the_observed_difference(memory: list[int], held: list[int]) -> None:
    from datetime import UTC, datetime

    from paxm_core.telemetry.sessions import SessionRow

    now = datetime(2026, 12, 7, tzinfo=UTC)
    rows = [SessionRow(f"m{i}", "c", "memory", now, now, turns=v) for i, v in enumerate(memory)]
    rows += [SessionRow(f"h{i}", "c", "holdback", now, now, turns=v) for i, v in enumerate(held)]
    report = compare(rows, 30)
    turns = report.signals[0]
    assert report.enough and turns.low is not None and turns.high is not None
    assert turns.low <= turns.difference + 1e-9 and turns.difference - 1e-9 <= turns.high
    assert compare(rows, 30).signals[0] == turns  # the same data, the same interval


@pytest.mark.parametrize(
    ("prompt", "correction"),
    [
        ("No, we switched to blue-green deploys", True),
        ("that's wrong, the port is 7311", True),
        ("Actually use the staging database", True),
        ("Notice the failing test in billing", False),
        ("Now add a test for billing", False),
        ("How do we deploy?", False),
    ],
)
def test_corrections_are_a_plain_word_list(prompt: str, correction: bool) -> None:
    assert is_correction(prompt) is correction


def test_a_question_asked_again_has_the_same_fingerprint() -> None:
    assert prompt_fingerprint("How is billing deployed?") == prompt_fingerprint("how is BILLING deployed")
    assert prompt_fingerprint("How is billing deployed?") != prompt_fingerprint("How is ingest deployed?")
    assert prompt_fingerprint("?!") == ""


def test_receipts_and_signals_leave_the_history_counters_alone(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.yaml"
    config.parent.mkdir()
    config.write_text("version: 1\n")
    telemetry = Telemetry(paxm_config(config))
    telemetry.record({"kind": "hook_recall", "source": "hook", "target": "claude", "hit_count": 1})
    before = telemetry.history(1).totals.to_json()
    telemetry.record({"kind": "injection", "source": "hook", "target": "claude", "memories": [{"rank": 1}]})
    telemetry.record({"kind": "session_arm", "session": "abc", "arm": "holdback"})
    telemetry.record(_signal("abc", "", turns=1))
    assert telemetry.history(1).totals.to_json() == before
    assert [e["kind"] for e in telemetry.tail(10)] == ["hook_recall", "injection", "session_arm"]


@pytest.mark.parametrize("value", ["1", "1.5", "-0.1"])
def test_holdback_outside_zero_to_one_is_refused(tmp_path: Path, value: str) -> None:
    from paxm_core.api.errors import ConfigError

    config = tmp_path / "config.yaml"
    config.write_text(f"version: 1\npassive:\n  holdback: {value}\n")
    with pytest.raises(ConfigError, match=r"passive\.holdback: must be at least 0 and below 1"):
        paxm_config(config)
    config.write_text("version: 1\npassive:\n  holdback: 0.1\n  dedupe: false\n")
    loaded = paxm_config(config).passive
    assert loaded.holdback == 0.1 and not loaded.dedupe_enabled and loaded.reoffer_enabled
