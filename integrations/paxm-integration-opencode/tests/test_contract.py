"""OpenCode passes paxm's IntegrationContract (paxm-contracttest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, embedded_argv_commands
from paxm_core.plugins import get_plugin_manager
from paxm_integration_opencode import OpenCodeIntegration

#: the user's own plugin beside paxm's: install and uninstall must leave it byte-identical
USER_PLUGIN = "export const Mine = async () => ({})\n"


class TestOpenCodeContract(IntegrationContract):
    agent = "opencode"
    lookup_names = ("opencode",)
    integration_type = OpenCodeIntegration
    display_name = "OpenCode"
    output_modes = ("text", "json")

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        prompt = {"session_id": "ses_1", "cwd": "/work/app", "prompt": "Which queue did we pick?"}
        turn = {"session_id": "ses_1", "cwd": "/work/app", "assistant": "We picked brisk-queue."}
        return [
            DecodeFixture("chat.message", json.dumps(prompt).encode(), "user_input", {"prompt": prompt["prompt"]}),
            DecodeFixture("session.idle", json.dumps(turn).encode(), "turn_end", {"assistant": turn["assistant"]}),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        config_dir = tmp_path / "opencode"
        monkeypatch.setenv("PAXM_OPENCODE_CONFIG_DIR", str(config_dir))
        # the file paxm writes is its own plugin; the user's plugin beside it must survive untouched
        (config_dir / "plugins").mkdir(parents=True)
        (config_dir / "plugins" / "mine.js").write_text(USER_PLUGIN)
        return NativeConfig(
            path=config_dir / "plugins" / "paxm.js", content=None, parse=lambda t: t, commands=embedded_argv_commands
        )


def test_the_users_own_plugin_is_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install and uninstall touch only paxm's file in the shared plugins/ directory."""
    from paxm_core.config import save_config
    from paxm_core.config.defaults import default_config
    from paxm_core.integration import InstallContext

    config_dir = tmp_path / "opencode"
    monkeypatch.setenv("PAXM_OPENCODE_CONFIG_DIR", str(config_dir))
    mine = config_dir / "plugins" / "mine.js"
    mine.parent.mkdir(parents=True)
    mine.write_text(USER_PLUGIN)
    config = default_config(tmp_path / "paxm" / "config.yaml")
    save_config(config, tmp_path / "paxm" / "config.yaml")
    config.path = tmp_path / "paxm" / "config.yaml"
    integration = get_plugin_manager().integration("opencode")
    assert integration is not None
    integration.install(InstallContext(config=config))
    integration.uninstall(InstallContext(config=config))
    assert mine.read_text() == USER_PLUGIN and sorted(p.name for p in mine.parent.iterdir()) == ["mine.js"]
