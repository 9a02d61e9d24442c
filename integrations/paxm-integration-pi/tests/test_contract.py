"""Pi passes paxm's IntegrationContract (paxm-contracttest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, embedded_argv_commands
from paxm_integration_pi import PiIntegration


class TestPiContract(IntegrationContract):
    agent = "pi"
    lookup_names = ("pi",)
    integration_type = PiIntegration
    display_name = "Pi"

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        prompt = {"session_id": "s1", "cwd": "/work/app", "prompt": "Which queue did we pick?"}
        turn = {"session_id": "s1", "cwd": "/work/app", "last_assistant_message": "We picked brisk-queue."}
        return [
            DecodeFixture(
                "before_agent_start", json.dumps(prompt).encode(), "user_input", {"prompt": prompt["prompt"]}
            ),
            DecodeFixture("agent_end", json.dumps(turn).encode(), "turn_end", {"assistant": "We picked brisk-queue."}),
            DecodeFixture("session_start", json.dumps({"session_id": "s1"}).encode(), "session_start"),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        agent_dir = tmp_path / "pi-agent"
        monkeypatch.setenv("PAXM_PI_AGENT_DIR", str(agent_dir))
        extension = agent_dir / "extensions" / "paxm-hook" / "index.ts"
        return NativeConfig(path=extension, content=None, parse=lambda text: text, commands=embedded_argv_commands)
