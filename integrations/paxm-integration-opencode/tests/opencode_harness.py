"""Helpers for driving the real OpenCode binary against paxm and a fake Chat Completions server.

* :func:`install_opencode` installs the pinned ``opencode-ai`` with npm into a cache directory
  once (``$PAXM_TEST_NPM_CACHE`` or ``~/.cache/paxm-tests/npm``), and next to it the
  ``@opencode-ai/plugin`` package OpenCode installs into every config dir at start-up (which
  stalls about 70 s when offline unless it is already there);
* :class:`OpenCodeSandbox` is the Claude harness's sandbox (private HOME + workspace + paxm
  config, scrubbed environment) plus ``opencode run``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CLAUDE_TESTS = Path(__file__).resolve().parents[2] / "paxm-integration-claude-code" / "tests"
if str(_CLAUDE_TESTS) not in sys.path:
    sys.path.insert(0, str(_CLAUDE_TESTS))

from claude_harness import PAXM, Sandbox, npm_cache_dir  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness import npm_install_into  # noqa: E402
from paxm_contracttest.harness.npm import require_npm  # noqa: E402

__all__ = [
    "OPENCODE_VERSION",
    "PAXM",
    "OpenCodeRun",
    "OpenCodeSandbox",
    "install_opencode",
    "npm_cache_dir",
    "require_npm",
]

#: the latest release on this Node 20 machine (and in CI)
OPENCODE_VERSION = "1.18.33"
OPENCODE_PACKAGE = f"opencode-ai@{OPENCODE_VERSION}"
PLUGIN_PACKAGE = f"@opencode-ai/plugin@{OPENCODE_VERSION}"


def install_opencode(npm: str, cache: Path) -> tuple[Path, Path]:
    """``(opencode executable, dir holding the pre-installed config-dir dependency)``."""
    binary_dir = npm_install_into(
        f"opencode-ai-{OPENCODE_VERSION}",
        ["--no-save", OPENCODE_PACKAGE],
        "node_modules/.bin/opencode",
        npm=npm,
        cache=cache,
    )
    deps = npm_install_into(
        f"opencode-plugin-deps-{OPENCODE_VERSION}",
        [PLUGIN_PACKAGE],
        "node_modules/@opencode-ai/plugin",
        npm=npm,
        cache=cache,
    )
    return binary_dir / "node_modules" / ".bin" / "opencode", deps


@dataclass
class OpenCodeRun:
    """One finished ``opencode run`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    @property
    def reply(self) -> str:
        """The last text the assistant produced (from ``--format json``)."""
        texts = [str((e.get("part") or {}).get("text", "")) for e in self.events() if e.get("type") == "text"]
        return texts[-1] if texts else ""


class OpenCodeSandbox(Sandbox):
    """A private HOME, workspace and paxm config with OpenCode configured against a fake model."""

    def __init__(self, root: Path, opencode: Path, deps: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.opencode_bin = opencode
        self.deps = deps

    @property
    def opencode_dir(self) -> Path:
        """OpenCode's global config dir in the sandbox (``$XDG_CONFIG_HOME/opencode``)."""
        return self.home / ".config" / "opencode"

    @property
    def plugin_file(self) -> Path:
        return self.opencode_dir / "plugins" / "paxm.js"

    def configure_opencode(self, fake_url: str, *, preinstall_deps: bool = True) -> None:
        """Point OpenCode at the fake server; copy in the pre-installed config-dir dependency."""
        self.opencode_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": False,
            "share": "disabled",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": fake_url, "apiKey": "sk-fake"},
                    "models": {
                        "fake-model": {
                            "name": "Fake Model",
                            "tool_call": True,
                            "limit": {"context": 128000, "output": 4096},
                        }
                    },
                }
            },
        }
        (self.opencode_dir / "opencode.json").write_text(json.dumps(config, indent=2))
        if preinstall_deps:
            for name in ("package.json", "package-lock.json"):
                if (self.deps / name).exists():
                    shutil.copy2(self.deps / name, self.opencode_dir / name)
            target = self.opencode_dir / "node_modules"
            if not target.exists():
                # a link, not a 64 MB copy: OpenCode only checks that it is there and matches
                # package-lock.json, and paxm's plugin imports nothing from it
                target.symlink_to(self.deps / "node_modules", target_is_directory=True)

    def opencode(self, fake: FakeOpenAI, prompt: str, *, timeout: float = 240, **env: str) -> OpenCodeRun:
        """One ``opencode run`` turn in the workspace against ``fake``."""
        argv = [str(self.opencode_bin), "run", "--print-logs", "--format", "json", prompt]
        started = time.monotonic()
        done = subprocess.run(
            argv,
            cwd=self.workspace,
            env=self.env(
                OPENCODE_DISABLE_MODELS_FETCH="1",
                OPENCODE_DISABLE_AUTOUPDATE="1",
                OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
                **env,
            ),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return OpenCodeRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def generous_opencode_budget(self, seconds: str = "2s") -> None:
        """An explicit passive recall budget (a loaded CI machine can miss the 350 ms default)."""
        data = self.config_data()
        recall = data["agents"]["opencode"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
