"""Helpers for driving the real Cline CLI (``cline --json``) against paxm and a fake Chat Completions server.

Reuses the Claude harness's sandbox.  Cline keeps a hub daemon running after a run unless
``CLINE_SESSION_BACKEND_MODE=local``; every run here sets it, and the tests' finalizer kills
(and fails on) any cline process a test leaves behind.
"""

from __future__ import annotations

import os
import signal
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
    Path(__file__).resolve().parent,
):
    if str(_tests) not in sys.path:
        sys.path.insert(0, str(_tests))

from claude_harness import PAXM, Sandbox  # noqa: E402
from paxm_contracttest.fake_models.chat_tools import FakeChat  # noqa: E402

from paxm_contracttest.harness import npm_install  # noqa: E402

__all__ = ["CLINE_VERSION", "PAXM", "ClineRun", "ClineSandbox", "cline_processes", "install_cline", "kill_cline"]

CLINE_VERSION = "3.0.65"
#: the user's own plugin beside paxm's (must survive install and uninstall byte for byte)
USER_PLUGIN = 'export default { name: "mine", manifest: { capabilities: ["hooks"] }, hooks: {} };\n'


def install_cline() -> Path:
    """The pinned ``cline`` executable, installed once into the shared npm cache."""
    return npm_install("cline", CLINE_VERSION) / "node_modules" / ".bin" / "cline"


def cline_processes() -> list[int]:
    """PIDs of running processes started from a pinned cline install (``/proc`` scan)."""
    from paxm_contracttest.harness import npm_cache_dir

    root = str(npm_cache_dir() / f"cline-{CLINE_VERSION}").encode()
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(root in part for part in cmdline[:2]):
            out.append(int(entry.name))
    return out


def kill_cline(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class ClineRun:
    """One finished ``cline --json`` run."""

    returncode: int
    stdout: str
    stderr: str
    wall: float

    @property
    def reply(self) -> str:
        import json

        for line in reversed(self.stdout.splitlines()):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "run_result":
                return str(event.get("text") or "")
        return ""


#: enable ``agents.cline`` with this distribution's defaults and install its plugin (in the sandbox)
_INSTALL = """\
from paxm_core.config import load_config, save_config
from paxm_core.config.codec import decode
from paxm_core.config.model import AgentConfig
from paxm_core.integration import InstallContext
from paxm_integration_cline import ClineIntegration

path = %(path)r
config = load_config(path)
ours = ClineIntegration()
old = config.agents.get("cline")
agent = decode(AgentConfig, dict(ours.default_agent_config()), "agents.cline")
agent.enabled = True
agent.passive_write_started_at = getattr(old, "passive_write_started_at", "") or agent.passive_write_started_at
config.agents["cline"] = agent
save_config(config, path)
ours.install(InstallContext(config=load_config(path)))
"""


class ClineSandbox(Sandbox):
    """A private HOME, workspace and paxm config with Cline pointed at a fake model."""

    def __init__(self, root: Path, cline: Path, claude: Path | None = None) -> None:
        super().__init__(root, claude or Path("claude"))
        self.cline_bin = cline

    @property
    def plugins(self) -> Path:
        return self.home / ".cline" / "plugins"

    def cline_env(self) -> dict[str, str]:
        # local backend: no hub daemon left behind; a loaded CI machine needs more than Cline's
        # 4 s to start the plugin sandbox
        return self.env(
            CLINE_SESSION_BACKEND_MODE="local", CLINE_NO_AUTO_UPDATE="1", CLINE_PLUGIN_IMPORT_TIMEOUT_MS="60000"
        )

    def authenticate(self, fake: FakeChat) -> None:
        done = subprocess.run(
            [str(self.cline_bin), "auth", "-p", "openai", "-k", "sk-fake", "-m", "fake-model", "-b", fake.url],
            cwd=self.workspace,
            env=self.cline_env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def write_user_plugin(self) -> None:
        self.plugins.mkdir(parents=True, exist_ok=True)
        (self.plugins / "mine.js").write_text(USER_PLUGIN)

    def argv(self, prompt: str) -> list[str]:
        return [str(self.cline_bin), "--json", prompt]

    def cline(self, prompt: str, *, timeout: float = 240) -> ClineRun:
        started = time.monotonic()
        done = subprocess.run(
            self.argv(prompt),
            cwd=self.workspace,
            env=self.cline_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return ClineRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    # -- paxm through this distribution's own object ---------------------------------------------

    def _ours_registered(self) -> bool:
        done = self.python(
            "from paxm_core.plugins import get_plugin_manager as g; import paxm_integration_cline as c\n"
            "print(isinstance(g().integration('cline'), c.ClineIntegration))"
        )
        return done.stdout.strip() == "True"

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-c", code], env=self.env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done

    def setup_cline(self, *agents: str) -> None:
        """``paxm setup`` for ``cline`` (and ``agents``), the plugin installed by this distribution.

        Until the IDE distribution stops registering its own ``cline`` output mode, the CLI
        resolves ``cline`` to that object; the agent section and the plugin then come from this
        distribution's object directly.
        """
        extra = [a for agent in agents for a in ("--agent", agent)]
        self.paxm("setup", "--yes", "--agent", "cline", *extra, "--provider", "sqlite")
        if self._ours_registered():
            return
        self.python(_INSTALL % {"path": str(self.config)})

    def uninstall_cline(self) -> None:
        self.paxm("uninstall", "--agent", "cline", "--yes")
        if not self._ours_registered():
            self.python(
                "from paxm_core.config import load_config\nfrom paxm_core.integration import InstallContext\n"
                "from paxm_integration_cline import ClineIntegration\n"
                f"ClineIntegration().uninstall(InstallContext(config=load_config({str(self.config)!r})))\n"
            )

    def warm_daemon(self) -> None:
        """Start paxm's hook daemon before the first run (Cline allows a plugin hook only 3 s)."""
        import json as _json

        from paxm_integration_cline.plugin import embedded_settings

        settings = embedded_settings((self.plugins / "paxm.js").read_text()) or {}
        argv = settings["commands"]["session_start"]
        payload = {"hook_event_name": "session_start", "session_id": "warm-up", "cwd": str(self.workspace)}
        subprocess.run(argv, input=_json.dumps(payload), env=self.env(), capture_output=True, text=True, timeout=60)
        self.wait_for_daemon()

    def generous_budget(self, seconds: str = "1s") -> None:
        data: dict[str, Any] = self.config_data()
        recall = data["agents"]["cline"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)
