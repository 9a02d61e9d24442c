"""Helpers for driving the real Kimi Code CLI (``kimi -p``) against paxm and a fake Chat Completions server.

Reuses the Claude harness's sandbox (private HOME, workspace, paxm config, scrubbed environment)
and the Cline tests' fake server (whose tool call fits Kimi's ``Bash`` tool).  Kimi Code needs
Node >= 22.19: the pinned Node 24 from the npm cache goes first on ``PATH``.
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
    _INTEGRATIONS / "paxm-integration-cline" / "tests",
):
    if str(_tests) not in sys.path:
        sys.path.insert(0, str(_tests))

from claude_harness import PAXM, Sandbox  # noqa: E402
from paxm_contracttest.fake_models.chat_tools import FakeChat  # noqa: E402

from paxm_contracttest.harness import node24_bin, npm_install  # noqa: E402

__all__ = ["KIMI_VERSION", "PAXM", "KimiRun", "KimiSandbox", "install_kimi", "user_config"]

KIMI_PACKAGE = "@moonshot-ai/kimi-code"
KIMI_VERSION = "2.1.0"


def install_kimi() -> tuple[Path, Path]:
    """``(kimi executable, Node 24 bin dir)``, installed once into the shared npm cache."""
    node = node24_bin()
    root = npm_install(KIMI_PACKAGE, KIMI_VERSION, path_prefix=node)
    return root / "node_modules" / ".bin" / "kimi", node


def user_config(base_url: str) -> str:
    """A realistic ``config.toml``: comments, the fake provider, the user's own hook, a model."""
    return f"""\
# my Kimi Code settings
default_model = "fake"  # the local one
telemetry = false

[providers.fake]
type = "openai"
base_url = "{base_url}"
api_key = "sk-fake"

# my own guard
[[hooks]]
event = "PreToolUse"
matcher = "Bash"
command = "true"
timeout = 5

[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 128000
"""


@dataclass
class KimiRun:
    """One finished ``kimi -p`` turn (text output)."""

    returncode: int
    stdout: str
    stderr: str
    wall: float


class KimiSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Kimi Code pointed at a fake model."""

    def __init__(self, root: Path, kimi: Path, node: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.kimi_bin = kimi
        self.node = node

    @property
    def kimi_config(self) -> Path:
        return self.home / ".kimi-code" / "config.toml"

    def write_user_config(self, fake: FakeChat) -> str:
        text = user_config(fake.url)
        self.kimi_config.parent.mkdir(parents=True, exist_ok=True)
        self.kimi_config.write_text(text)
        return text

    def point_at(self, fake: FakeChat) -> None:
        """Repoint the provider's ``base_url`` at ``fake`` (a new server per test phase)."""
        import re

        text = self.kimi_config.read_text()
        self.kimi_config.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{fake.url}"', text, count=1))

    def kimi_env(self) -> dict[str, str]:
        env = self.env()
        env["PATH"] = f"{self.node}:{env['PATH']}"
        return env

    def argv(self, prompt: str) -> list[str]:
        return [str(self.kimi_bin), "-p", prompt]

    def kimi(self, prompt: str, *, timeout: float = 240) -> KimiRun:
        started = time.monotonic()
        done = subprocess.run(
            self.argv(prompt),
            cwd=self.workspace,
            env=self.kimi_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return KimiRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def generous_budget(self, seconds: str = "2s") -> None:
        data = self.config_data()
        recall = data["agents"]["kimi-code"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
