"""``paxm remember`` / ``paxm recall``: real subprocesses on the SQLite default, and JSON diagnostics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from paxm_core.api.timefmt import parse_time


def _paxm() -> list[str]:
    script = Path(sys.executable).with_name("paxm")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from paxm_core.cli import main; main()"]


def run(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    return subprocess.run(
        [*_paxm(), "--config", str(tmp_path / "config.yaml"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )


def test_remember_then_recall_end_to_end(tmp_path: Path) -> None:
    stored = run(tmp_path, "remember", "--text", "The release checklist lives in docs/RELEASE.md")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored memory: sqlite/ltm_") and stored.stdout.endswith("\n")
    ref_id = stored.stdout.strip().split("/", 1)[1]

    text = run(tmp_path, "recall", "-q", "release checklist")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == '<paxm-recall version="1" mode="active">'
    assert lines[1] == "### Memory 1 (sqlite)"
    assert lines[-1] == "</paxm-recall>"
    assert "The release checklist lives in docs/RELEASE.md" in lines
    assert any(line.startswith("Scope: personal:") for line in lines)

    as_json = run(tmp_path, "recall", "--query", "release checklist", "--json")
    data = json.loads(as_json.stdout)
    assert data["query"] == "release checklist"
    assert data["paxm_context"] == {"version": 1, "kind": "recall", "mode": "active"}
    (hit,) = data["hits"]
    assert hit["provider"] == "sqlite" and hit["id"] == ref_id
    assert hit["origin"]["session_id"].startswith("paxm-cli-")
    assert hit["scope"]["type"] == "personal"
    (recall,) = data["provider_recalls"]
    assert recall["provider"] == "sqlite" and recall["outcome"] == "success" and recall["candidate_count"] == 1
    assert "provider_errors" not in data

    # upstream's legacy entry point: a Codex user_input hook event on stdin.  The prompt write
    # is switched off so that no capture daemon is started (it would outlive the test).
    from paxm_core.config import load_config, save_config

    config = load_config(tmp_path / "config.yaml")
    for hook in config.agents["codex"].hooks.values():
        hook.write.enabled = False
    save_config(config, tmp_path / "config.yaml")
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "where is the release checklist"})
    hooked = run(tmp_path, "recall", "--hook-event", stdin=payload)
    assert not (tmp_path / "hooks" / "paxm-hook.sock").exists()
    assert hooked.returncode == 0, hooked.stderr
    assert '<paxm-recall version="1" mode="passive">' in hooked.stdout and "docs/RELEASE.md" in hooked.stdout


def test_stm_profile_json_and_expiry(tmp_path: Path) -> None:
    before = datetime.now(UTC)
    stored = run(tmp_path, "remember", "--profile", "stm", "--text", "temporary token ABC123", "--json")
    assert stored.returncode == 0, stored.stderr
    refs = json.loads(stored.stdout)["refs"]
    assert len(refs) == 1 and refs[0]["provider"] == "sqlite" and not refs[0]["id"].startswith("ltm_")
    data = json.loads(run(tmp_path, "recall", "-q", "temporary token", "--json").stdout)
    (hit,) = data["hits"]
    assert hit["tier"] == "stm"
    expires = parse_time(hit["expires_at"])
    assert expires is not None
    assert before + timedelta(hours=24) - timedelta(seconds=5) <= expires <= datetime.now(UTC) + timedelta(hours=24)


def test_stdin_source_and_limit(tmp_path: Path) -> None:
    assert run(tmp_path, "remember", "--stdin", "--source", "notes", stdin="kiwi fact number 0\n").returncode == 0
    from paxm_core.runtime import Runtime

    with Runtime.load(str(tmp_path / "config.yaml"), telemetry=None) as runtime:  # seed the rest in-process
        for i in range(1, 4):
            runtime.tools.remember(f"kiwi fact number {i}", source="notes")
    data = json.loads(run(tmp_path, "recall", "--stdin", "--limit", "2", "--json", stdin="kiwi fact").stdout)
    assert len(data["hits"]) == 2 and {h["source"] for h in data["hits"]} == {"notes"}
    data = json.loads(run(tmp_path, "recall", "-q", "kiwi fact", "--limit", "-1", "--json").stdout)
    assert len(data["hits"]) == 3  # 0 or less: the profile's max_results, as upstream


def test_ltm_remember_twice_consolidates(tmp_path: Path) -> None:
    first = run(tmp_path, "remember", "--text", "prefer ruff over flake8")
    second = run(tmp_path, "remember", "--text", "Prefer  ruff over flake8")
    assert first.stdout == second.stdout
    data = json.loads(run(tmp_path, "recall", "-q", "ruff flake8", "--json").stdout)
    assert data["hits"][0]["metadata"]["paxm_occurrences"] == "2"


def test_empty_input_and_unknown_profile_exit_1(tmp_path: Path) -> None:
    for args in (("recall", "-q", "   "), ("remember", "--text", ""), ("recall", "--stdin"), ("remember",)):
        proc = run(tmp_path, *args, stdin="")
        assert proc.returncode == 1 and proc.stderr.startswith("Error: "), (args, proc.stderr)
        assert "required" in proc.stderr and proc.stdout == ""
    proc = run(tmp_path, "recall", "-q", "x", "--profile", "nope")
    assert proc.returncode == 1 and "recall profile 'nope' is not configured" in proc.stderr


def test_no_hits_prints_no_memories_found(tmp_path: Path) -> None:
    proc = run(tmp_path, "recall", "-q", "nothing stored yet")
    assert proc.returncode == 0 and proc.stdout == "No memories found.\n"


def test_two_processes_remembering_get_increasing_sequences(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAXM_")}
    procs = [
        subprocess.Popen(
            [
                *_paxm(),
                "--config",
                str(tmp_path / "config.yaml"),
                "remember",
                "--profile",
                "stm",
                "--text",
                f"parallel {i}",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    data = json.loads(run(tmp_path, "recall", "-q", "parallel", "--json").stdout)
    hits = data["hits"]
    assert len(hits) == 2
    assert hits[0]["origin"]["session_id"] == hits[1]["origin"]["session_id"]  # same user/config/cwd
    sequences = sorted(int(h["metadata"]["sequence"]) for h in hits)
    assert sequences[0] < sequences[1]


# -- in-process: diagnostics with fake providers ------------------------------------------


def _fakes() -> ModuleType:
    from paxm_contracttest import fakes

    return fakes


@pytest.fixture
def fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from paxm_core import ProviderConfig
    from paxm_core.config import RouteConfig, load_config
    from paxm_core.runtime import Runtime

    fakes = _fakes()
    plugin = fakes.FakesPlugin()
    cfg = load_config(tmp_path / "config.yaml")
    cfg.providers = {
        "main": ProviderConfig(type="graded", enabled=True),
        "flaky": ProviderConfig(type="raising", enabled=True),
        "stuck": ProviderConfig(type="hanging", enabled=True),
    }
    cfg.recall_profiles["default"].providers = [
        RouteConfig(name="main", required=True),
        RouteConfig(name="flaky"),
        RouteConfig(name="stuck", timeout=0.1),
    ]
    original = Runtime.load.__func__  # type: ignore[attr-defined]

    def load(cls: Any, config_path: str | None = None, **kwargs: Any) -> Runtime:
        return original(cls, config_path, config=cfg, plugin_manager=fakes.plugin_manager(plugin), telemetry=None)

    monkeypatch.setattr(Runtime, "load", classmethod(load))
    yield plugin
    plugin.release_all()


def test_recall_json_shows_provider_errors_and_recalls(fake_runtime: Any) -> None:
    from paxm_core.cli import cli

    result = CliRunner().invoke(cli, ["recall", "-q", "graded", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [h["id"] for h in data["hits"]] == ["g0", "g1", "g2"]
    assert data["provider_errors"] == [
        {"provider": "flaky", "required": False, "op": "search", "error": "backend down"},
        {"provider": "stuck", "required": False, "op": "search", "error": "search timed out after 100ms"},
    ]
    recalls = {r["provider"]: r for r in data["provider_recalls"]}
    assert list(recalls) == ["flaky", "main", "stuck"]
    assert recalls["main"]["candidate_count"] == 4 and recalls["main"]["eligible_count"] == 4
    assert recalls["flaky"]["outcome"] == "error"
    assert recalls["stuck"]["outcome"] == "timeout" and recalls["stuck"]["timeout_ms"] == 100
