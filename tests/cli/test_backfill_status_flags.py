"""``paxm backfill status`` takes upstream's ``--agent`` / ``--provider`` and narrows its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest.sandbox import run_paxm as paxm
from paxm_core.backfill.checkpoint import CheckpointStore


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A config beside a checkpoint store that recorded three runs (two agents, two providers)."""
    path = tmp_path / "cfg" / "config.yaml"
    path.parent.mkdir(mode=0o700)
    path.write_text("providers:\n  sqlite: {type: sqlite, enabled: true}\n")
    path.chmod(0o600)
    (path.parent / "backfill").mkdir(mode=0o700)
    store = CheckpointStore(path.parent / "backfill" / "checkpoint.sqlite")
    try:
        for agent, provider in (("claude", "sqlite"), ("codex", "sqlite"), ("claude", "sqlite,zep")):
            run = store.start_run(agent, provider)
            store.record_step(run, state="done", found=3, queued=3, delivered=3)
        store.record_step(run, "claude", [("c1", "queued"), ("c2", "queued")])
        store.record_step(run, "codex", [("x1", "queued")])
    finally:
        store.close()
    return path


def test_agent_and_provider_narrow_the_report(config: Path) -> None:
    every = json.loads(paxm(config, "backfill", "status", "--json").stdout)
    assert len(every["runs"]) == 3 and set(every["turns"]) == {"claude", "codex"}
    # an alias names the same agent; a run that wrote to several providers counts for each
    claude = paxm(config, "backfill", "status", "--agent", "claude-code", "--json")
    assert claude.returncode == 0, claude.stderr
    report = json.loads(claude.stdout)
    assert {r["agent"] for r in report["runs"]} == {"claude"} and len(report["runs"]) == 2
    assert set(report["turns"]) == {"claude"}
    assert set(report) == set(every)  # the same JSON shape
    zep = json.loads(paxm(config, "backfill", "status", "--agent", "claude", "--provider", "zep", "--json").stdout)
    assert [r["provider"] for r in zep["runs"]] == ["sqlite,zep"]
    codex = paxm(config, "backfill", "status", "--agent", "codex", "--provider", "sqlite")
    assert codex.returncode == 0, codex.stderr
    assert "codex" in codex.stdout and "claude" not in codex.stdout


def test_no_run_for_the_filter_says_so(config: Path) -> None:
    done = paxm(config, "backfill", "status", "--agent", "pi", "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    assert "no backfill run for agent pi and provider sqlite" in done.stdout
