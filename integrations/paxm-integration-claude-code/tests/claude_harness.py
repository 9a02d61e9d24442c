"""The Claude Code sandbox for the suites not yet on the shared kit, as a thin layer over it.

Everything here is :mod:`paxm_contracttest.harness.kit` with the Claude Code description
(:data:`paxm_contracttest.harness.harnesses.CLAUDE`): :class:`Sandbox` is a
:class:`~paxm_contracttest.harness.kit.HarnessBox` whose ``claude()`` runs one turn.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from paxm_contracttest.harness import npm_cache_dir, require
from paxm_contracttest.harness.claude import assert_no_garbage, hook_blocks, model_text
from paxm_contracttest.harness.harnesses import CLAUDE
from paxm_contracttest.harness.kit import HarnessBox, Installed, Turn, install
from paxm_contracttest.sandbox import PAXM, PaxmSandbox

__all__ = [
    "CLAUDE_VERSION",
    "PAXM",
    "Sandbox",
    "assert_no_garbage",
    "hook_blocks",
    "install_claude",
    "model_text",
    "npm_cache_dir",
]

#: the pinned release (the last that runs on Node 20)
CLAUDE_VERSION = CLAUDE.packages[0].rsplit("@", 1)[1]


def install_claude(npm: str | None = None, cache: Path | None = None) -> Path:
    """The pinned ``claude`` executable (the kit's installer; ``npm``/``cache`` are its own)."""
    if shutil.which("npm") is None:
        require("npm is not installed: the real Claude Code tests need Node and npm")
    return install(CLAUDE).binary


class Sandbox(PaxmSandbox):
    """A private HOME, workspace and paxm config with the pinned Claude Code in it.

    Other harnesses' sandboxes subclass it to run Claude Code beside their own binary; each
    Claude turn runs through a kit box on the same root and config.
    """

    agent = "claude"

    def __init__(self, root: Path, claude: Path) -> None:
        super().__init__(root)
        self.claude_bin = claude

    @property
    def settings(self) -> Path:
        return self.home / ".claude" / "settings.json"

    def _claude_box(self) -> HarnessBox:
        return HarnessBox(self.root, CLAUDE, Installed(self.claude_bin), config=self.config)

    def claude_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a non-session ``claude`` command (``plugin marketplace add`` ...)."""
        return self._claude_box().cli(*args)

    def claude(self, fake: Any, prompt: str, *extra: str, timeout: float = 180) -> Turn:
        """One ``claude -p`` turn in the workspace against ``fake``."""
        return self._claude_box().turn(fake, prompt, *extra, timeout=timeout)
