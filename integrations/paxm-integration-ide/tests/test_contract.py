"""Each IDE integration against the shared ``IntegrationContract``, on a realistic pre-existing file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig
from paxm_core.integration import Integration, client_path
from paxm_integration_ide import (
    CursorIntegration,
    KiroIntegration,
    TraeCNIntegration,
    TraeIntegration,
    ZCodeIntegration,
)

WORKSPACE = "/nonexistent/ide-project"


def commands_in(text: str) -> list[str]:
    """Every hook ``command`` string in a JSON document that runs paxm's hook client."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            command = value.get("command")
            if isinstance(command, str) and str(client_path()) in command:
                found.append(command)
            for child in value.values():
                walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(json.loads(text))
    return found


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


class TestCursorContract(IntegrationContract):
    output_modes = ("text", "json", "cursor")
    json_modes = ("json", "cursor")

    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return CursorIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        base = {"conversation_id": "c-1", "generation_id": "g-1", "workspace_roots": [WORKSPACE]}
        return [
            DecodeFixture(
                "session_start",
                _json({**base, "hook_event_name": "sessionStart", "session_id": "c-1", "composer_mode": "agent"}),
                "session_start",
                {"metadata.session_id": "c-1", "workspace": WORKSPACE},
            ),
            DecodeFixture(
                "user_input",
                _json(
                    {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "fix the flaky test", "attachments": []}
                ),
                "user_input",
                {"prompt": "fix the flaky test", "metadata.session_id": "c-1", "native_event": "beforeSubmitPrompt"},
            ),
            DecodeFixture(
                "turn_end",
                _json({**base, "hook_event_name": "afterAgentResponse", "text": "Fixed: the retry had no jitter."}),
                "turn_end",
                {"assistant": "Fixed: the retry had no jitter.", "workspace": WORKSPACE},
            ),
            # the IDE's own event names decode too (a hand-written hooks.json may pass them)
            DecodeFixture("afterAgentResponse", _json({**base, "text": "ok"}), "turn_end", {"assistant": "ok"}),
            DecodeFixture("", _json({**base, "hook_event_name": "beforeSubmitPrompt", "prompt": "p"}), "user_input"),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        user = {
            "version": 1,
            "hooks": {
                "beforeShellExecution": [{"command": "./hooks/audit.sh"}],
                "afterAgentResponse": [{"command": "say done", "timeout": 5}],
            },
        }
        path = CursorIntegration().hooks_path()
        return NativeConfig(path=path, content=json.dumps(user, indent=2), commands=commands_in)


class TestTraeContract(IntegrationContract):
    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return TraeIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        base = {"session_id": "t-9", "transcript_path": "/tmp/t-9.jsonl", "cwd": WORKSPACE}
        return [
            DecodeFixture(
                "session_start",
                _json({**base, "hook_event_name": "SessionStart", "source": "startup"}),
                "session_start",
                {"metadata.session_id": "t-9"},
            ),
            DecodeFixture(
                "user_input",
                _json({**base, "hook_event_name": "UserPromptSubmit", "prompt": "where is the retry policy?"}),
                "user_input",
                {"prompt": "where is the retry policy?", "workspace": WORKSPACE},
            ),
            DecodeFixture(
                "turn_end",
                _json({**base, "hook_event_name": "Stop", "last_assistant_message": "In retry.py."}),
                "turn_end",
                {"assistant": "In retry.py.", "native_event": "Stop"},
            ),
            DecodeFixture("Stop", _json({**base, "last_assistant_message": "x"}), "turn_end", {"assistant": "x"}),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        user = {
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard"}]}],
                "Stop": [{"hooks": [{"type": "command", "command": "notify-send TRAE done", "timeout": 3}]}],
            }
        }
        return NativeConfig(path=TraeIntegration().hooks_path(), content=json.dumps(user), commands=commands_in)


class TestTraeCNContract(TestTraeContract):
    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return TraeCNIntegration()

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        # no hooks.json yet: install creates it, uninstall must remove it again
        return NativeConfig(path=TraeCNIntegration().hooks_path(), content=None, commands=commands_in)


class TestKiroContract(IntegrationContract):
    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return KiroIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        return [
            DecodeFixture("session_start", _json({"hook_event_name": "agentSpawn", "cwd": WORKSPACE}), "session_start"),
            DecodeFixture(
                "user_input",
                _json({"hook_event_name": "userPromptSubmit", "cwd": WORKSPACE, "prompt": "deploy to staging"}),
                "user_input",
                {"prompt": "deploy to staging", "workspace": WORKSPACE},
            ),
            DecodeFixture(
                "turn_end",
                _json({"hook_event_name": "stop", "cwd": WORKSPACE, "assistant_response": "Deployed."}),
                "turn_end",
                {"assistant": "Deployed.", "native_event": "stop"},
            ),
            DecodeFixture("", _json({"hook_event_name": "userPromptSubmit", "prompt": "q"}), "user_input"),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        # paxm's own agent file: absent before install, gone after uninstall
        return NativeConfig(path=KiroIntegration().agent_path(), content=None, commands=commands_in)


class TestZCodeContract(IntegrationContract):
    output_modes = ("text", "json", "zcode")
    json_modes = ("json", "zcode")

    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return ZCodeIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        base = {"session_id": "z-3", "cwd": WORKSPACE}
        return [
            DecodeFixture(
                "session_start",
                _json({**base, "hook_event_name": "SessionStart", "source": "resume"}),
                "session_start",
                {"metadata.session_id": "z-3"},
            ),
            DecodeFixture(
                "user_input",
                _json({**base, "hook_event_name": "UserPromptSubmit", "prompt": "rename the flag"}),
                "user_input",
                {"prompt": "rename the flag"},
            ),
            DecodeFixture(
                "turn_end",
                _json({**base, "hook_event_name": "Stop", "last_assistant_message": "Renamed."}),
                "turn_end",
                {"assistant": "Renamed."},
            ),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        user = {
            "model": {"provider": "zhipu", "name": "glm-4.6"},
            "hooks": {"enabled": True, "events": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}},
            "mcp": {"servers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}},
        }
        return NativeConfig(path=ZCodeIntegration().config_path(), content=json.dumps(user), commands=commands_in)
