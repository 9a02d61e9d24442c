"""The LoCoMo runner in-process: a broken write path fails the canary; what cannot be isolated is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paxm_contracttest.fake_models.chat_tools import FakeChat
from paxm_core import ProviderConfig, UsageError
from paxm_core.config import default_config
from paxm_core.evals.locomo import LocomoOptions, load_locomo, run_locomo
from paxm_core.evals.locomo_harness import ChatEndpoint, ChatHarness
from paxm_core.evals.locomo_scope import clean_runs, prepare_scope, sanitize_scope_id
from paxm_core.plugins import installed_provider_catalog
from tests.evals.test_locomo_e2e import dataset


class NoWriteHarness(ChatHarness):
    """A harness whose turn_end hook never runs: the passive write path is broken."""

    def _hook(self, event: str, payload: dict[str, Any]) -> str:
        return "" if event == "turn_end" else super()._hook(event, payload)


def test_a_broken_write_path_fails_the_canary_and_keeps_the_retrieval_diagnostic(tmp_path: Path) -> None:
    config = default_config(tmp_path / "config.yaml", installed_provider_catalog())
    runs = tmp_path / "runs"
    with FakeChat(tmp_path / "log.jsonl", reply="STORED") as fake:
        harness = NoWriteHarness(ChatEndpoint(fake.url, "m"))
        opts = LocomoOptions(run_id="broken", manifest_dir=runs)
        result, errors = run_locomo(load_locomo(dataset(tmp_path)), config, harness, opts)
        assert len(fake.completions()) == 1  # the canary turn only: no question was asked
    assert errors == ["conv-t1: agent write canary: the canary was not persisted by the turn_end hook"]
    assert result["write_canary"] is False
    assert {t["error"] for t in result["trials"]} == {errors[0].split(": ", 1)[1]}
    assert all(s["errors"] == 2 for s in result["summaries"])
    assert result["retrieval"]["passed"] == 2  # measured before the canary
    assert list(runs.iterdir()) == []


def test_keep_memory_keeps_a_failed_run_marked_failed(tmp_path: Path) -> None:
    config = default_config(tmp_path / "config.yaml", installed_provider_catalog())
    runs = tmp_path / "runs"
    with FakeChat(tmp_path / "log.jsonl", reply="STORED") as fake:
        harness = NoWriteHarness(ChatEndpoint(fake.url, "m"))
        opts = LocomoOptions(run_id="kept", manifest_dir=runs, keep_memory=True)
        run_locomo(load_locomo(dataset(tmp_path)), config, harness, opts)
    manifest = json.loads((runs / "kept-conv-t1" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "canary was not persisted" in manifest["cleanup_error"]


def test_providers_without_file_isolation_and_existing_runs_are_refused(tmp_path: Path) -> None:
    config = default_config(tmp_path / "config.yaml", installed_provider_catalog())
    config.providers["team"] = ProviderConfig(type="zep", enabled=True, base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match="provider type 'zep' has no eval isolation"):
        prepare_scope(config, "team", "r1", tmp_path / "runs", False)
    assert not (tmp_path / "runs").exists()  # refused before anything was written
    prepare_scope(config, "sqlite", "r1", tmp_path / "runs", False)
    with pytest.raises(UsageError, match="eval run 'r1' already exists"):
        prepare_scope(config, "sqlite", "r1", tmp_path / "runs", False)
    run_config = json.loads((tmp_path / "runs" / "r1" / "config.json").read_text())
    assert list(run_config["providers"]) == ["sqlite"]
    assert run_config["providers"]["sqlite"]["path"] == str(tmp_path / "runs" / "r1" / "memory.sqlite")
    assert list(run_config["agents"]) == ["paxm-eval"]


@given(st.text(max_size=60))
def test_a_run_id_never_leaves_the_manifest_directory(raw: str) -> None:
    scope_id = sanitize_scope_id(raw)
    assert all(ch.isalnum() or ch in "-_" for ch in scope_id)
    assert not scope_id.startswith("-") and not scope_id.endswith("-")
    root = Path("/runs")
    if scope_id:
        assert (root / scope_id).parent == root  # no separator, no "..": one directory below the root


def test_cleanup_of_a_traversing_run_id_stays_inside(tmp_path: Path) -> None:
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "manifest.json").write_text(json.dumps({"version": 1, "run_id": "victim"}))
    runs = tmp_path / "runs"
    runs.mkdir()
    cleaned, errors = clean_runs(runs, "../victim", stale=False)
    assert (cleaned, errors) == ([], []) and (outside / "manifest.json").exists()
