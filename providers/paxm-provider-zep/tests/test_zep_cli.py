"""Zep through the paxm CLI: config doctor, remember and recall against the local v4 server."""

from __future__ import annotations

import json
from pathlib import Path

from zep_fake import Fault, ZepFake

from paxm_contracttest.sandbox import run_paxm


def write_config(path: Path, zep: ZepFake, *, zep_required: bool, api_key: str = "z_test_key") -> Path:
    path.write_text(
        f"""version: 1
identity: {{user_id: todd}}
providers:
  sqlite: {{type: sqlite, enabled: true, path: {path.parent}/memory.sqlite}}
  zep: {{type: zep, enabled: true, api_key: {api_key}, base_url: "{zep.base_url}", user_id: todd}}
recall_profiles:
  default:
    providers: [{{name: sqlite, required: true}}, {{name: zep, required: {str(zep_required).lower()}}}]
write_profiles:
  default:
    providers: [{{name: sqlite, required: true}}, {{name: zep, required: {str(zep_required).lower()}}}]
"""
    )
    # a config holding a credential is the user's own file, as `paxm setup` writes it: doctor
    # reports a group- or world-readable one as an error (file_modes), whatever the umask
    path.chmod(0o600)
    return path


def test_doctor_reports_zep_health_against_the_server(zep: ZepFake, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", zep, zep_required=True)
    out = run_paxm(config, "config", "doctor", "--json")
    assert out.returncode == 0, out.stderr
    assert {"provider": "zep", "required": True, "ok": True} in json.loads(out.stdout)
    assert zep.state.requests("GET", r"/graphs/[^/]+$"), "health made an authenticated call"


def test_doctor_fails_clearly_on_a_bad_key_without_printing_it(zep: ZepFake, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", zep, zep_required=True, api_key="z_leaked_secret")
    out = run_paxm(config, "config", "doctor")
    assert out.returncode == 1
    assert "error: zep:" in out.stdout + out.stderr and "authentication failed" in out.stdout + out.stderr
    assert "z_leaked_secret" not in out.stdout + out.stderr
    shown = run_paxm(config, "config", "show", "--json")
    assert "z_leaked_secret" not in shown.stdout


def test_remember_and_recall_fan_out_to_zep(zep: ZepFake, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", zep, zep_required=True)
    stored = run_paxm(config, "remember", "--text", "kafka topics have twelve partitions", "--json")
    assert stored.returncode == 0, stored.stderr
    providers = sorted(ref["provider"] for ref in json.loads(stored.stdout)["refs"])
    assert providers == ["sqlite", "zep"]
    add = zep.state.requests("POST", r"/episodes$")[0]
    assert add.body["metadata"]["paxm_user_id"] == "todd" and add.body["metadata"]["paxm_scope_type"] == "personal"
    recalled = run_paxm(config, "recall", "--query", "kafka partitions", "--json")
    assert recalled.returncode == 0, recalled.stderr
    result = json.loads(recalled.stdout)
    assert {r["provider"] for r in result["provider_recalls"]} == {"sqlite", "zep"}
    assert [h["text"] for h in result["hits"]] == ["kafka topics have twelve partitions"]  # deduped across providers


def test_a_failing_best_effort_zep_never_blocks_recall(zep: ZepFake, tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.yaml", zep, zep_required=False)
    assert run_paxm(config, "remember", "--text", "redis runs on port 6380").returncode == 0
    zep.state.faults.append(Fault("POST", r"/search/episodes$", status=500))
    recalled = run_paxm(config, "recall", "--query", "redis port", "--json")
    assert recalled.returncode == 0, recalled.stderr
    result = json.loads(recalled.stdout)
    assert [h["provider"] for h in result["hits"]] == ["sqlite"]
    [error] = result["provider_errors"]
    assert error["provider"] == "zep" and error["op"] == "search"
    # Zep's client retries a 500 within its deadline; past the optional-provider grace the
    # router stops waiting and reports it skipped: either way recall returned SQLite's hit
    assert "HTTP 500" in error["error"] or "skipped" in error["error"], error
