"""Codex passes paxm's IntegrationContract (paxm-contracttest)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, settings_hook_commands

GOLDEN = Path(__file__).parent / "golden"
SESSION = {"session_id": "0f1e2d3c-aaaa-7181-86af-174e7015b86c", "turn_id": "turn-b", "cwd": "/work/app"}


def _payload(event: str, **fields: object) -> bytes:
    return json.dumps({**SESSION, "hook_event_name": event, **fields}).encode()


class TestCodexContract(IntegrationContract):
    agent = "codex"
    output_modes = ("text", "json")

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        return [
            DecodeFixture(
                "UserPromptSubmit",
                _payload("UserPromptSubmit", prompt="Which queue did we pick?"),
                "user_input",
                {"prompt": "Which queue did we pick?", "workspace": "/work/app", "metadata.turn_id": "turn-b"},
            ),
            DecodeFixture(
                "Stop",
                _payload("Stop", last_assistant_message="We picked brisk-queue."),
                "turn_end",
                {"assistant": "We picked brisk-queue."},
            ),  # fmt: skip
            DecodeFixture("SessionStart", _payload("SessionStart", source="startup"), "session_start"),
            DecodeFixture("", _payload("Stop", last_assistant_message="done"), "turn_end", {"assistant": "done"}),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        home = tmp_path / "codex-home"
        monkeypatch.setenv("CODEX_HOME", str(home))
        monkeypatch.delenv("PAXM_CODEX_CONFIG", raising=False)
        return NativeConfig(
            path=home / "config.toml",
            content=(GOLDEN / "other-tables" / "before.toml").read_text(),
            parse=tomllib.loads,
            commands=lambda text: settings_hook_commands(tomllib.loads(text)),
        )
