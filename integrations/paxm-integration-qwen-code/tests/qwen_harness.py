"""Helpers for driving the real Qwen Code CLI (``qwen -p``) against paxm and a fake Chat Completions server.

Reuses the Claude harness's sandbox (private HOME, workspace, paxm config, scrubbed environment)
and the OpenCode tests' fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INTEGRATIONS = Path(__file__).resolve().parents[2]
for _tests in (
    _INTEGRATIONS / "paxm-integration-claude-code" / "tests",
    _INTEGRATIONS / "paxm-integration-opencode" / "tests",
):
    if str(_tests) not in sys.path:
        sys.path.insert(0, str(_tests))

from claude_harness import PAXM, Sandbox  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness.npm import npm_install_cached  # noqa: E402

__all__ = ["PAXM", "QWEN_VERSION", "QwenRun", "QwenSandbox", "USER_SETTINGS", "install_qwen"]

#: the last release that runs on Node 20 (0.21+ need Node >= 22)
QWEN_VERSION = "0.15.10"
QWEN_PACKAGE = f"@qwen-code/qwen-code@{QWEN_VERSION}"

#: a realistic ~/.qwen/settings.json: auth, privacy, the user's own hook and MCP server
USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "general": {"disableAutoUpdate": True, "enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    # Qwen's own managed memory makes a second model request per turn
    "memory": {"enableManagedAutoMemory": False},
    "mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"]}},
    "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true", "timeout": 2000}]}]},
}


def install_qwen(npm: str) -> Path:
    """The pinned ``qwen`` executable, installed once into the shared npm cache."""
    dest = npm_install_cached(npm, f"qwen-code-{QWEN_VERSION}", [QWEN_PACKAGE], "node_modules/.bin/qwen")
    return dest / "node_modules" / ".bin" / "qwen"


@dataclass
class QwenRun:
    """One finished ``qwen -p`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    @property
    def reply(self) -> str:
        """The turn's result text (``-o json``: a list of messages ending with a ``result``)."""
        try:
            value = json.loads(self.stdout)
        except ValueError:
            return ""
        items = value if isinstance(value, list) else [value]
        for item in reversed(items):
            if isinstance(item, dict) and item.get("type") == "result":
                return str(item.get("result") or "")
        return ""


class QwenSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Qwen Code pointed at a fake model."""

    def __init__(self, root: Path, qwen: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.qwen_bin = qwen

    @property
    def qwen_settings(self) -> Path:
        return self.home / ".qwen" / "settings.json"

    def write_user_settings(self) -> None:
        self.qwen_settings.parent.mkdir(parents=True, exist_ok=True)
        self.qwen_settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")

    def qwen(self, fake: FakeOpenAI, prompt: str, *, timeout: float = 240) -> QwenRun:
        started = time.monotonic()
        done = subprocess.run(
            [str(self.qwen_bin), "-p", prompt, "-o", "json", "--approval-mode", "yolo"],
            cwd=self.workspace,
            env=self.qwen_env(fake),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return QwenRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def qwen_env(self, fake: FakeOpenAI) -> dict[str, str]:
        return self.env(OPENAI_API_KEY="sk-fake", OPENAI_BASE_URL=fake.url, OPENAI_MODEL="fake-model")

    def generous_qwen_budget(self, seconds: str = "2s") -> None:
        data = self.config_data()
        recall = data["agents"]["qwen"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
