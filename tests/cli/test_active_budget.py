"""Item 6 of issue 13: the active path is bounded in time and in size."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from scripted_kit import PAXM, paxm_timed, scripted_config

from paxm_core.config import LimitsConfig


def test_defaults_are_documented_values() -> None:
    limits = LimitsConfig()
    assert (limits.route_seconds, limits.deadline_seconds) == (10.0, 20.0)
    assert limits.text_bytes == 256 * 1024 and limits.hit_chars == 4000


def test_a_hung_optional_provider_costs_at_most_the_route_timeout(tmp_path: Path) -> None:
    config = scripted_config(tmp_path, "hang", required=False, limits={"route_timeout": "1s", "deadline": "5s"})
    stored, took = paxm_timed(config, "remember", "--text", "the cache TTL is seven minutes")
    assert stored.returncode == 0, stored.stderr
    assert took < 30  # the plugin hangs for 60 s; its own timeout is 60 s
    recalled, took = paxm_timed(config, "recall", "--query", "cache TTL", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert took < 30
    assert any("seven minutes" in h["text"] for h in json.loads(recalled.stdout)["hits"])


def test_a_hung_required_provider_fails_with_a_timeout_error(tmp_path: Path) -> None:
    config = scripted_config(tmp_path, "hang", required=True, limits={"route_timeout": "1s", "deadline": "5s"})
    recalled, took = paxm_timed(config, "recall", "--query", "anything")
    assert recalled.returncode != 0
    assert "Traceback" not in recalled.stderr
    assert "hang" in recalled.stderr and ("timed out" in recalled.stderr or "deadline" in recalled.stderr)
    assert took < 30


@pytest.mark.parametrize("via", ["cli"])
def test_huge_memories_are_refused_and_long_hits_excerpted(tmp_path: Path, via: str) -> None:
    path = tmp_path / "c" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "version: 1\nidentity:\n  user_id: alice\nproviders:\n  sqlite:\n    type: sqlite\n    enabled: true\n"
        f"    path: {tmp_path / 'm.sqlite'}\nlimits:\n  max_hit_chars: 500\n"
    )
    huge = subprocess.run(
        [*PAXM, "--config", str(path), "remember", "--stdin"],
        input="word " * (4 * 1024 * 1024),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert huge.returncode != 0 and "limits.max_text_bytes" in huge.stderr and "Traceback" not in huge.stderr
    long_text = "needle " + "padding " * 5000
    assert paxm_timed(path, "remember", "--text", long_text)[0].returncode == 0
    recalled, _ = paxm_timed(path, "recall", "--query", "needle")
    assert recalled.returncode == 0
    assert "excerpt" in recalled.stdout and len(recalled.stdout) < 2000
