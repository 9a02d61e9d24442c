"""``paxm setup --yes --provider mem0|mem0_cloud``: the connection and key are checked before
saving (a bad key saves nothing), then remember / recall / config doctor work, and the key is
never printed or written anywhere but the 0600 config file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from mem0_cloud_fake import Mem0CloudFake
from mem0_fixtures import Mem0Server

from paxm_contracttest.sandbox import run_cli as run


def files_mentioning(root: Path, secret: str, skip: Path) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path != skip and secret.encode() in path.read_bytes():
            found.append(path)
    return found


def test_self_hosted_setup_checks_the_key_then_the_loop_works(
    mem0_server: Mem0Server, tmp_path: Path, isolated_home: Path
) -> None:
    config = tmp_path / "paxm" / "config.yaml"
    user = mem0_server.fresh_user()
    base = ["--config", str(config), "setup", "--yes", "--provider", "mem0", "--base-url", mem0_server.base_url]
    bad = run(*base, "--user-id", user, "--api-key", "m0-not-the-key")
    assert bad.returncode == 1
    assert "mem0 setup check: authentication failed (HTTP 401, GET /memories)" in bad.stderr
    assert "m0-not-the-key" not in bad.stdout + bad.stderr
    assert not config.exists(), "a bad key must save nothing"

    good = run(*base, "--user-id", user, env={"PAXM_API_KEY": mem0_server.api_key})
    assert good.returncode == 0, good.stderr
    assert f"ensured mem0 (mem0) target: user_id={user} (exists)" in good.stdout
    assert mem0_server.api_key not in good.stdout + good.stderr
    saved = yaml.safe_load(config.read_text())["providers"]["mem0"]
    assert saved["enabled"] is True and saved["user_id"] == user and saved["api_key"] == mem0_server.api_key
    assert saved["base_url"] == mem0_server.base_url
    assert oct(config.stat().st_mode & 0o777) == "0o600"

    stored = run("--config", str(config), "remember", "--text", "the nightly backup runs at 02:00 on the nas")
    assert stored.returncode == 0, stored.stderr
    assert stored.stdout.startswith("stored memory: mem0/")
    recalled = run("--config", str(config), "recall", "--query", "when does the nightly backup run", "--json")
    assert recalled.returncode == 0, recalled.stderr
    hits = json.loads(recalled.stdout)["hits"]
    assert hits[0]["provider"] == "mem0" and hits[0]["text"] == "the nightly backup runs at 02:00 on the nas"
    assert hits[0]["raw_score_kind"] == "mem0_similarity"
    assert hits[0]["scope"] == {"type": "personal", "id": user}  # attribution restored from paxm_* metadata
    doctor = run("--config", str(config), "config", "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    assert {"provider": "mem0", "required": True, "ok": True} in json.loads(doctor.stdout)
    shown = run("--config", str(config), "config", "show")
    assert mem0_server.api_key not in shown.stdout and "api_key: <redacted>" in shown.stdout
    assert files_mentioning(config.parent, mem0_server.api_key, skip=config) == []
    assert files_mentioning(isolated_home, mem0_server.api_key, skip=config) == []

    # the error paths with a revoked key: clear errors, and that key is never written either
    revoked = "m0-revoked-" + "q" * 16
    config.write_text(config.read_text().replace(mem0_server.api_key, revoked))
    failed = run("--config", str(config), "recall", "--query", "nightly backup")
    assert failed.returncode != 0 and "HTTP 401" in failed.stderr and revoked not in failed.stdout + failed.stderr
    sick = run("--config", str(config), "config", "doctor", "--json")
    assert sick.returncode != 0 and revoked not in sick.stdout + sick.stderr
    [row] = [r for r in json.loads(sick.stdout) if r["provider"] == "mem0"]
    assert row["ok"] is False and "authentication failed (HTTP 401, GET /memories)" in row["error"]
    assert files_mentioning(config.parent, revoked, skip=config) == []
    assert files_mentioning(isolated_home, revoked, skip=config) == []


def test_setup_can_target_an_agent_instead_of_the_user(mem0_server: Mem0Server, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "providers": {
                    "mem0": {
                        "type": "mem0",
                        "base_url": mem0_server.base_url,
                        "api_key": "env:SHIM_KEY",
                        "agent_id": "shared-agent",
                    }
                }
            }
        )
    )
    key = {"SHIM_KEY": mem0_server.api_key}
    out = run("--config", str(config), "setup", "--yes", "--force", "--provider", "mem0", env=key)
    assert out.returncode == 0, out.stderr
    assert "ensured mem0 (mem0) target: agent_id=shared-agent (exists)" in out.stdout
    saved = yaml.safe_load(config.read_text())["providers"]["mem0"]
    assert saved["api_key"] == "env:SHIM_KEY" and saved["agent_id"] == "shared-agent" and not saved.get("user_id")


def test_cloud_setup_checks_the_key_and_saves_nothing_on_401(cloud: Mem0CloudFake, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    base = ["--config", str(config), "setup", "--yes", "--provider", "mem0_cloud", "--base-url", cloud.base_url]
    bad = run(*base, "--user-id", "todd", env={"PAXM_API_KEY": "m0-wrong-key-123"})
    assert bad.returncode == 1 and "mem0_cloud setup check: authentication failed (HTTP 401" in bad.stderr
    assert "m0-wrong-key-123" not in bad.stdout + bad.stderr and not config.exists()
    missing = run(*base, "--user-id", "todd")
    assert missing.returncode != 0 and "needs an API key" in missing.stderr and not config.exists()
    good = run(*base, "--user-id", "todd", env={"PAXM_API_KEY": cloud.state.api_key})
    assert good.returncode == 0, good.stderr
    assert "ensured mem0_cloud (mem0-cloud) target: user_id=todd (exists)" in good.stdout
    assert cloud.state.api_key not in good.stdout + good.stderr
    cloud.state.pending_polls = 1
    stored = run("--config", str(config), "remember", "--text", "cloud loop probe: the vpn profile is corp-eu")
    assert stored.returncode == 0, stored.stderr
    recalled = run("--config", str(config), "recall", "--query", "cloud loop probe vpn profile", "--json")
    assert json.loads(recalled.stdout)["hits"][0]["text"] == "cloud loop probe: the vpn profile is corp-eu"
    doctor = run("--config", str(config), "config", "doctor", "--json")
    assert {"provider": "mem0_cloud", "required": True, "ok": True} in json.loads(doctor.stdout)
    paths = [r.path for r in cloud.requests()]
    assert "/v3/memories/add/" in paths and "/v3/memories/search/" in paths


def test_an_unreachable_server_stops_setup(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    out = run("--config", str(config), "setup", "--yes", "--provider", "mem0", "--base-url", "http://127.0.0.1:9")
    assert out.returncode == 1 and "cannot reach Mem0 at http://127.0.0.1:9" in out.stderr
    assert not config.exists()


@pytest.mark.parametrize("kind", ["mem0", "mem0-cloud"])
def test_plugins_lists_both_types_from_one_distribution(kind: str) -> None:
    out = run("plugins", "--json")
    assert out.returncode == 0, out.stderr
    plugin = next(p for p in json.loads(out.stdout)["plugins"] if p["name"] == "mem0")
    assert plugin["distribution"] == "paxm-provider-mem0" and kind in plugin["providers"]
