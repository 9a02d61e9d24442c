"""Copilot CLI passes paxm's IntegrationContract, with payloads captured from Copilot CLI 1.0.102."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig
from paxm_integration_copilot_cli import CopilotCliIntegration

FIXTURES = Path(__file__).parent / "fixtures"


def _commands(text: str) -> list[str]:
    hooks = json.loads(text).get("hooks", {})
    return [h["bash"] for handlers in hooks.values() for h in handlers if "client.py" in h.get("bash", "")]


class TestCopilotCliContract(IntegrationContract):
    agent = "copilot-cli"
    lookup_names = ("copilot-cli", "copilot", "github-copilot")
    integration_type = CopilotCliIntegration
    display_name = "GitHub Copilot CLI"

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        session = "e57f4c5a-305a-427f-8fb3-ed01ec86b4bc"
        return [
            DecodeFixture(
                "sessionStart", FIXTURES / "sessionStart.json", "session_start", {"metadata.session_id": session}
            ),
            DecodeFixture(
                "userPromptSubmitted",
                FIXTURES / "userPromptSubmitted.json",
                "user_input",
                {"prompt": "RUN_TOOL: hello there"},
            ),
            DecodeFixture("postToolUse", FIXTURES / "postToolUse.json", "tool_use", {"metadata.session_id": session}),
            DecodeFixture("agentStop", FIXTURES / "agentStop.json", "turn_end", {"metadata.session_id": session}),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "cophome"))
        # paxm's own file: absent before install, removed by uninstall
        return NativeConfig(path=tmp_path / "cophome" / "hooks" / "paxm.json", content=None, commands=_commands)
