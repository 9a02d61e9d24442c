"""Helpers for driving the real GitHub Copilot CLI (``copilot -p``) against paxm and a fake Chat Completions server.

Reuses the Claude harness's sandbox (private HOME, workspace, paxm config, scrubbed environment)
and the OpenCode tests' fake OpenAI-compatible server (Copilot's bring-your-own-key provider
speaks Chat Completions; its shell tool is ``bash``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

_INTEGRATIONS = Path(__file__).resolve().parents[2]
for _tests in (
    _INTEGRATIONS / "paxm-integration-claude-code" / "tests",
    _INTEGRATIONS / "paxm-integration-opencode" / "tests",
    _INTEGRATIONS / "paxm-integration-gemini-cli" / "tests",
    Path(__file__).resolve().parent,
):
    if str(_tests) not in sys.path:
        sys.path.insert(0, str(_tests))

from claude_harness import Sandbox  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness import npm_cache_dir  # noqa: E402
from paxm_contracttest.harness.npm import npm_install_cached  # noqa: E402

__all__ = ["COPILOT_VERSION", "CopilotRun", "CopilotSandbox", "install_copilot"]

COPILOT_VERSION = "1.0.102"
COPILOT_PACKAGE = f"@github/copilot@{COPILOT_VERSION}"


def install_copilot(npm: str) -> Path:
    """The pinned ``copilot`` executable, installed once into the shared npm cache."""
    dest = npm_install_cached(npm, f"copilot-{COPILOT_VERSION}", [COPILOT_PACKAGE], "node_modules/.bin/copilot")
    return dest / "node_modules" / ".bin" / "copilot"


def copilot_pkg_cache() -> Path:
    """Where Copilot unpacks its runtime on first start (``$XDG_CACHE_HOME/copilot/pkg``): shared by the tests.

    Unpacking takes several seconds; every sandbox has a fresh HOME, so without this each turn
    would pay it again.
    """
    return npm_cache_dir() / f"copilot-{COPILOT_VERSION}-xdg-cache"


@dataclass
class CopilotRun:
    """One finished ``copilot -p -s`` turn: stdout is the agent's response only."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    @property
    def reply(self) -> str:
        return self.stdout.strip()


class CopilotSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Copilot CLI pointed at a fake model."""

    def __init__(self, root: Path, copilot: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.copilot_bin = copilot

    @property
    def copilot_home(self) -> Path:
        return self.home / ".copilot"

    @property
    def hooks_file(self) -> Path:
        return self.copilot_home / "hooks" / "paxm.json"

    def write_user_hooks(self) -> dict[str, str]:
        """The user's own hook file and settings, as text (to check they are left alone)."""
        files = {
            "hooks/mine.json": '{"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "true"}]}}\n',
            "settings.json": '{"model": "fake-model"}\n',
        }
        for name, text in files.items():
            path = self.copilot_home / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return files

    def copilot_argv(self, prompt: str) -> list[str]:
        return [str(self.copilot_bin), "-p", prompt, "-s", "--no-color", "--allow-all-tools"]

    def copilot_env(self, fake: FakeOpenAI) -> dict[str, str]:
        cache = copilot_pkg_cache()
        cache.mkdir(parents=True, exist_ok=True)
        return self.env(
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=fake.url,
            COPILOT_PROVIDER_API_KEY="x",
            COPILOT_MODEL="fake-model",
            XDG_CACHE_HOME=str(cache),
        )

    def copilot(self, fake: FakeOpenAI, prompt: str, *, timeout: float = 240) -> CopilotRun:
        started = time.monotonic()
        done = subprocess.run(
            self.copilot_argv(prompt),
            cwd=self.workspace,
            env=self.copilot_env(fake),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return CopilotRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def generous_agent_budget(self, agent: str, seconds: str = "2s") -> None:
        """An explicit passive-recall budget for ``agent`` (a loaded CI machine can miss the default)."""
        data = self.config_data()
        recall = data["agents"][agent]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
