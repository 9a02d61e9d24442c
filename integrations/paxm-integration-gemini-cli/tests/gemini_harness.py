"""Helpers for driving the real Gemini CLI (``gemini -p``) against paxm and the fake Gemini API.

Reuses the Claude harness's sandbox (private HOME, workspace, paxm config, scrubbed environment).
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
for _tests in (_INTEGRATIONS / "paxm-integration-claude-code" / "tests", Path(__file__).resolve().parent):
    if str(_tests) not in sys.path:
        sys.path.insert(0, str(_tests))

from claude_harness import Sandbox  # noqa: E402
from paxm_contracttest.fake_models.gemini import FakeGemini  # noqa: E402

from paxm_contracttest.harness.npm import npm_install_cached  # noqa: E402

__all__ = ["GEMINI_VERSION", "USER_SETTINGS", "GeminiRun", "GeminiSandbox", "install_gemini"]

GEMINI_VERSION = "0.61.0"
GEMINI_PACKAGE = f"@google/gemini-cli@{GEMINI_VERSION}"

#: a realistic ~/.gemini/settings.json: API-key auth, no telemetry or update checks, the user's
#: own MCP server and hook (folder trust off: the sandbox workspace is new every run)
USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "mcpServers": {"docs": {"command": "true", "args": [], "trust": False}},
    "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "name": "mine", "command": "true", "timeout": 2000}]}]},
}


def install_gemini(npm: str) -> Path:
    """The pinned ``gemini`` executable, installed once into the shared npm cache."""
    dest = npm_install_cached(npm, f"gemini-cli-{GEMINI_VERSION}", [GEMINI_PACKAGE], "node_modules/.bin/gemini")
    return dest / "node_modules" / ".bin" / "gemini"


@dataclass
class GeminiRun:
    """One finished ``gemini -p`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    @property
    def reply(self) -> str:
        """The turn's ``response`` (``-o json``)."""
        try:
            value = json.loads(self.stdout)
        except ValueError:
            return ""
        return str(value.get("response") or "") if isinstance(value, dict) else ""


class GeminiSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Gemini CLI pointed at the fake API."""

    def __init__(self, root: Path, gemini: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.gemini_bin = gemini

    @property
    def gemini_settings(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    def write_user_settings(self) -> None:
        self.gemini_settings.parent.mkdir(parents=True, exist_ok=True)
        self.gemini_settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")

    def gemini_argv(self, prompt: str) -> list[str]:
        return [str(self.gemini_bin), "-m", "fake-model", "-p", prompt, "-o", "json", "--approval-mode", "yolo"]

    def gemini_env(self, fake: FakeGemini) -> dict[str, str]:
        return self.env(GEMINI_API_KEY="x", GOOGLE_GEMINI_BASE_URL=fake.url, GEMINI_CLI_TRUST_WORKSPACE="true")

    def gemini(self, fake: FakeGemini, prompt: str, *, timeout: float = 240) -> GeminiRun:
        started = time.monotonic()
        done = subprocess.run(
            self.gemini_argv(prompt),
            cwd=self.workspace,
            env=self.gemini_env(fake),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return GeminiRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def generous_agent_budget(self, agent: str, seconds: str = "2s") -> None:
        """An explicit passive-recall budget for ``agent`` (a loaded CI machine can miss the default)."""
        data = self.config_data()
        recall = data["agents"][agent]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
