"""``paxm setup --yes --provider zep``: key from a flag or the environment, never echoed; Zep user ensured first."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml
from zep_fake import ZepFake

from paxm_contracttest.sandbox import run_cli as run


def setup(
    zep: ZepFake, config: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``paxm --config CONFIG setup --yes --provider zep EXTRA --user-id todd --base-url <the fake>``."""
    return run(
        "--config", str(config), "setup", "--yes", "--provider", "zep", *extra, "--user-id", "todd",
        "--base-url", zep.base_url, env=env,
    )  # fmt: skip


def test_setup_with_a_key_flag_ensures_the_user_and_never_echoes_the_key(zep: ZepFake, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    out = setup(zep, config, "--provider", "sqlite", "--api-key", zep.state.api_key)
    assert out.returncode == 0, out.stderr
    assert "ensured zep (zep) target: user todd (created)" in out.stdout
    assert zep.state.api_key not in out.stdout + out.stderr
    saved = yaml.safe_load(config.read_text())
    assert saved["providers"]["zep"]["enabled"] is True and saved["providers"]["zep"]["api_key"] == zep.state.api_key
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    assert [r.path for r in zep.state.log[:2]] == ["/api/v4/users/lookup", "/api/v4/users"]
    again = setup(zep, config, "--force", "--provider", "sqlite", "--api-key", zep.state.api_key)
    assert "ensured zep (zep) target: user todd (exists)" in again.stdout
    doctor = run("--config", str(config), "config", "doctor", "--json")
    assert {"provider": "zep", "required": True, "ok": True} in json.loads(doctor.stdout)


def test_setup_takes_the_key_from_the_environment(zep: ZepFake, tmp_path: Path) -> None:
    out = setup(zep, tmp_path / "config.yaml", env={"PAXM_API_KEY": zep.state.api_key})
    assert out.returncode == 0, out.stderr
    assert zep.state.api_key not in out.stdout + out.stderr
    assert zep.state.requests("POST", r"/users$")


def test_a_wrong_key_stops_setup_before_writing_anything(zep: ZepFake, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    out = setup(zep, config, "--api-key", "z_wrong_secret")
    assert out.returncode == 1
    assert "authentication failed" in out.stderr and "z_wrong_secret" not in out.stdout + out.stderr
    assert not config.exists()
