"""Claude Code passes paxm's IntegrationContract (paxm-contracttest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, settings_hook_commands
from paxm_integration_claude_code import ClaudeCodeIntegration

FIXTURES = Path(__file__).parent / "fixtures"

#: a user's settings.json with their own hook and other settings: paxm must leave them exactly so
USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
}


class TestClaudeCodeContract(IntegrationContract):
    agent = "claude"
    lookup_names = ("claude", "claude-code", "claude_code", "claudecode", "Claude-Code")
    integration_type = ClaudeCodeIntegration
    output_modes = ("text", "json")

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        return [
            DecodeFixture(
                "UserPromptSubmit",
                FIXTURES / "claude_user_prompt_submit.json",
                "user_input",
                {"prompt": "Which queue library did we pick for the ingest service?", "workspace": "/work/app"},
            ),
            DecodeFixture(
                "Stop",
                FIXTURES / "claude_stop.json",
                "turn_end",
                {"assistant": "We picked the brisk-queue library for the ingest service."},
            ),
            DecodeFixture("PostToolUse", FIXTURES / "claude_post_tool_use.json", "tool_use"),
            DecodeFixture("SessionStart", FIXTURES / "claude_session_start.json", "session_start"),
            # no --event: the payload's hook_event_name decides
            DecodeFixture("", FIXTURES / "claude_stop.json", "turn_end"),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        path = tmp_path / "claude" / "settings.json"
        monkeypatch.setenv("PAXM_CLAUDE_SETTINGS", str(path))
        return NativeConfig(
            path=path,
            content=json.dumps(USER_SETTINGS, indent=4),
            commands=lambda text: settings_hook_commands(json.loads(text)),
        )
