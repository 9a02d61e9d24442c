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

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from paxm_contracttest.fake_models.responses import FakeResponses
from paxm_contracttest.harness import npm_install, require, scrubbed_env

__all__ = ["CODEX_VERSION", "PAXM", "CodexBox", "CodexRun", "codex_bin"]

#: the newest @openai/codex release (npm view @openai/codex version, 2026-12-01)
CODEX_VERSION = "0.171.0"
PAXM = str(Path(sys.executable).parent / "paxm")
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


class CodexBox:
    """A private HOME, workspace and paxm config; nothing leaks in from the real environment."""

    def __init__(self, root: Path, codex: Path, *, workspace: Path | None = None, config: Path | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.workspace = workspace or root / "work"
        self.config = config or root / "paxm" / "config.yaml"
        self.codex_bin = codex
        for path in (self.home / ".codex", self.workspace, root / "tmp"):
            path.mkdir(parents=True, exist_ok=True)

    @property
    def codex_config(self) -> Path:
        return self.home / ".codex" / "config.toml"

    def env(self, **extra: str) -> dict[str, str]:
        path = f"{self.codex_bin.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
        return scrubbed_env(self.home, self.root / "tmp", path=path, **extra)

    def point_at(self, fake: FakeResponses) -> None:
        """Write (or re-point) the sandbox's Codex config at ``fake``, keeping everything else."""
        if not self.codex_config.exists():
            self.codex_config.write_text(base_config(fake.url))
            return
        text = self.codex_config.read_text()
        self.codex_config.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{fake.url}"', text, count=1))

    def paxm(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [PAXM, "--config", str(self.config), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if check:
            assert done.returncode == 0, f"paxm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

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

    def config_data(self) -> dict[str, Any]:
        data = yaml.safe_load(self.config.read_text())
        assert isinstance(data, dict)
        return data

    def write_config_data(self, data: dict[str, Any]) -> None:
        self.config.write_text(yaml.safe_dump(data, sort_keys=False))

    def generous_recall_budget(self, seconds: str = "2s") -> None:
        """An explicit recall budget, so a loaded CI machine's cold SQLite cannot miss the 350 ms default."""
        data = self.config_data()
        recall = data["agents"]["codex"]["hooks"]["user_input"]["recall"]
        recall["timeout"] = seconds
        if isinstance(recall.get("initial"), dict):
            recall["initial"]["timeout"] = seconds
        self.write_config_data(data)

    def memory_texts(self) -> list[str]:
        path = Path(self.config_data()["providers"]["sqlite"]["path"])
        if not path.exists():
            return []
        with sqlite3.connect(path) as conn:
            return [row[0] for row in conn.execute("SELECT text FROM memories")]

    def daemon_pid(self) -> int:
        try:
            return int((self.config.parent / "hooks" / "paxm-hook.lock").read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    def wait_for_daemon(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.paxm("__hook-control", "--status", "--json", check=False)
            if done.returncode == 0 and '"pid"' in done.stdout:
                return
            time.sleep(0.2)
        raise AssertionError("the hook daemon did not come up")

    def stop_daemon(self) -> None:
        pid = self.daemon_pid()
        done = self.paxm("__hook-control", "--shutdown", check=False, timeout=60)
        if done.returncode != 0 and pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


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
