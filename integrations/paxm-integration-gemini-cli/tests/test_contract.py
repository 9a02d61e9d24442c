"""Gemini CLI passes paxm's IntegrationContract (paxm-contracttest), with payloads captured from Gemini CLI 0.61."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, settings_hook_commands
from paxm_integration_gemini_cli import GeminiCliIntegration

FIXTURES = Path(__file__).parent / "fixtures"
EXISTING = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}


class TestGeminiCliContract(IntegrationContract):
    agent = "gemini-cli"
    lookup_names = ("gemini-cli", "gemini")
    integration_type = GeminiCliIntegration
    display_name = "Gemini CLI"

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        session = "89bc89ce-02e9-48cf-bfaa-cf407c7e184d"
        return [
            DecodeFixture(
                "SessionStart", FIXTURES / "SessionStart.json", "session_start", {"metadata.session_id": session}
            ),
            DecodeFixture(
                "BeforeAgent", FIXTURES / "BeforeAgent.json", "user_input", {"prompt": "RUN_TOOL: hello there"}
            ),
            DecodeFixture("AfterTool", FIXTURES / "AfterTool.json", "tool_use", {"metadata.session_id": session}),
            DecodeFixture(
                "AfterAgent",
                FIXTURES / "AfterAgent.json",
                "turn_end",
                {"assistant": "Noted, I will remember that. [marker-seen]"},
            ),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        path = tmp_path / "gemhome" / ".gemini" / "settings.json"
        monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemhome"))
        return NativeConfig(
            path=path,
            content=json.dumps(EXISTING, indent=2),
            commands=lambda text: settings_hook_commands(json.loads(text)),
        )
