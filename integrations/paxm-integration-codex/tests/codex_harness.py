"""Helpers for driving the real Codex CLI against paxm and a fake Responses server.

* :func:`codex_bin` installs the pinned ``@openai/codex`` into the shared npm test cache once
  (``paxm_contracttest.harness.npm_install``) and returns its executable;
* :class:`CodexBox` is one private HOME (``~/.codex``) + workspace + paxm config; it runs
  ``paxm`` and ``codex exec`` with a scrubbed environment (nothing inherited but ``PATH``, with
  the Codex binary's directory first so ``paxm setup`` finds it for hook trust) and reads back
  how long Codex waited for each hook: Codex prints ``hook: <Event>`` when it starts one and
  ``hook: <Event> Completed`` when it is done, and this process stamps the stderr lines as
  they arrive.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_contracttest.fake_models.responses import FakeResponses
from paxm_contracttest.harness import npm_install, require
from paxm_contracttest.sandbox import PAXM, PaxmSandbox

__all__ = ["CODEX_VERSION", "PAXM", "CodexBox", "CodexRun", "codex_bin"]

#: the newest @openai/codex release (npm view @openai/codex version, 2026-12-01)
CODEX_VERSION = "0.171.0"
_HOOK_LINE = re.compile(r"^hook: (\w+)(?: (Completed|Failed|Blocked|Stopped))?\s*$")


def codex_bin() -> Path:
    """The pinned ``codex`` executable (installed into the npm test cache on first use)."""
    try:
        root = npm_install("@openai/codex", CODEX_VERSION)
    except (RuntimeError, OSError) as exc:  # offline and not cached: skip locally, fail in CI
        require(f"cannot install @openai/codex@{CODEX_VERSION}: {exc}")
    binary = root / "node_modules" / ".bin" / "codex"
    if not binary.exists():
        raise RuntimeError(f"@openai/codex@{CODEX_VERSION} has no bin/codex at {binary}")
    return binary


@dataclass
class CodexRun:
    """One finished ``codex exec`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float
    last_message: str
    hooks: list[dict[str, Any]] = field(default_factory=list)

    def durations(self, event: str) -> list[int]:
        """Milliseconds Codex waited for each ``event`` hook run."""
        return [int(h["durationMs"]) for h in self.hooks if h["hookEvent"] == event]


def base_config(url: str) -> str:
    """The Codex config every sandbox starts from: the fake provider, no network side traffic."""
    return f"""# sandbox codex config (the user's own settings)
model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "Fake"
base_url = "{url}"
wire_api = "responses"
env_key = "FAKE_API_KEY"
"""


class CodexBox(PaxmSandbox):
    """A private HOME, workspace and paxm config; nothing leaks in from the real environment."""

    agent = "codex"

    def __init__(self, root: Path, codex: Path, *, workspace: Path | None = None, config: Path | None = None) -> None:
        super().__init__(root, workspace=workspace, config=config)
        self.codex_bin = codex
        (self.home / ".codex").mkdir(parents=True, exist_ok=True)

    @property
    def codex_config(self) -> Path:
        return self.home / ".codex" / "config.toml"

    def path_prefix(self) -> str | None:
        """Codex's own ``bin`` first on ``PATH``."""
        return str(self.codex_bin.parent)

    def point_at(self, fake: FakeResponses) -> None:
        """Write (or re-point) the sandbox's Codex config at ``fake``, keeping everything else."""
        if not self.codex_config.exists():
            self.codex_config.write_text(base_config(fake.url))
            return
        text = self.codex_config.read_text()
        self.codex_config.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{fake.url}"', text, count=1))

    def paxm_hook_call(self, event: str, payload: dict[str, Any], *, owner: str = "") -> str:
        """What paxm's hook answers a Codex call for ``event`` from ``owner`` (empty: config.toml hooks)."""
        import json

        extra = {"PAXM_INTEGRATION_OWNER": owner} if owner else {}
        done = subprocess.run(
            [PAXM, "--config", str(self.config), "__hook", "--target", "codex", "--event", event, "--json"],
            env=self.env(**extra),
            input=json.dumps({"session_id": "gate-check", "cwd": str(self.workspace), **payload}),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def codex_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.codex_bin), *args],
            cwd=self.workspace,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def codex(self, fake: FakeResponses, prompt: str, *extra: str, timeout: float = 180) -> CodexRun:
        """One ``codex exec`` turn in the workspace against ``fake``."""
        self.point_at(fake)
        last = self.root / "last-message.txt"
        last.unlink(missing_ok=True)
        argv = [str(self.codex_bin), "exec", "--skip-git-repo-check", "-o", str(last), *extra, prompt]
        started = time.monotonic()
        stamped: list[tuple[float, str]] = []
        with subprocess.Popen(
            argv,
            cwd=self.workspace,
            env=self.env(FAKE_API_KEY="sk-fake"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        ) as process:
            watchdog = threading.Timer(timeout, process.kill)
            watchdog.start()
            out: list[bytes] = []
            reader = threading.Thread(target=lambda: out.append(process.stdout.read() if process.stdout else b""))
            reader.start()
            try:
                assert process.stderr is not None
                for raw in process.stderr:
                    stamped.append((time.monotonic(), raw.decode("utf-8", "replace")))
                returncode = process.wait()
                reader.join(10)
            finally:
                watchdog.cancel()
        wall = time.monotonic() - started
        run = CodexRun(
            returncode,
            b"".join(out).decode("utf-8", "replace"),
            "".join(line for _, line in stamped),
            wall,
            last.read_text(errors="replace").strip() if last.exists() else "",
        )
        run.hooks = _hook_runs(stamped)
        return run

    # -- paxm state ----------------------------------------------------------------------------


def _hook_runs(lines: list[tuple[float, str]]) -> list[dict[str, Any]]:
    """Pair ``hook: X`` / ``hook: X Completed`` stderr lines into runs (stamped on arrival)."""
    started: dict[str, list[float]] = {}
    runs: list[dict[str, Any]] = []
    for arrived, line in lines:
        match = _HOOK_LINE.match(line.strip())
        if not match:
            continue
        event, outcome = match.group(1), match.group(2)
        if outcome is None:
            started.setdefault(event, []).append(arrived)
            continue
        begin = started.get(event, [arrived]).pop(0) if started.get(event) else arrived
        runs.append({"hookEvent": event, "outcome": outcome, "durationMs": int((arrived - begin) * 1000)})
    return runs
