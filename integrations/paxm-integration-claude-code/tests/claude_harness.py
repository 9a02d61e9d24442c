"""Helpers for driving the real Claude Code binary against paxm and a fake model server.

* :func:`install_claude` installs the pinned ``@anthropic-ai/claude-code`` with npm into a cache
  directory once (``$PAXM_TEST_NPM_CACHE`` or ``~/.cache/paxm-tests/npm``) and reuses it;
* :class:`Sandbox` is one private HOME + workspace + paxm config; it runs ``paxm`` and
  ``claude -p`` with a scrubbed environment (nothing inherited but ``PATH``) and reads back
  how long Claude waited for each hook from its ``--include-hook-events`` stream
  (``hook_started`` to ``hook_response``, stamped as the lines arrive).
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paxm_contracttest.fake_models.anthropic import FakeAnthropic, Recorded
from paxm_contracttest.harness import npm_cache_dir, npm_install_into
from paxm_contracttest.sandbox import PAXM, PaxmSandbox

__all__ = [
    "CLAUDE_PACKAGE",
    "PAXM",
    "ClaudeRun",
    "Sandbox",
    "assert_no_garbage",
    "hook_blocks",
    "install_claude",
    "model_text",
    "npm_cache_dir",
]

#: newer releases need Node >= 22; CI and this machine run Node 20
CLAUDE_VERSION = "2.1.197"
CLAUDE_PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_VERSION}"


def install_claude(npm: str, cache: Path) -> Path:
    """The ``claude`` executable of the pinned version, installing it under ``cache`` if needed."""
    probe = "node_modules/.bin/claude"
    return (
        npm_install_into(f"claude-code-{CLAUDE_VERSION}", ["--no-save", CLAUDE_PACKAGE], probe, npm=npm, cache=cache)
        / probe
    )


@dataclass
class ClaudeRun:
    """One finished ``claude -p`` turn."""

    returncode: int
    stdout: str
    stderr: str
    wall: float
    result: dict[str, Any]
    hooks: list[dict[str, Any]] = field(default_factory=list)
    init: dict[str, Any] = field(default_factory=dict)

    @property
    def reply(self) -> str:
        """The model's final answer as Claude reports it."""
        return str(self.result.get("result", ""))

    def durations(self, event: str) -> list[int]:
        """``durationMs`` of every hook Claude ran for ``event`` (from its hook event stream)."""
        return [int(h.get("durationMs", -1)) for h in self.hooks if h.get("hookEvent") == event]


def _hook_runs(events: list[tuple[float, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Pair ``hook_started``/``hook_response`` stream events into hook runs.

    ``durationMs`` is measured between the moments Claude wrote the two events (this process
    reads the stream as it is written), i.e. how long Claude waited for the hook.
    """
    started: dict[str, float] = {}
    runs: list[dict[str, Any]] = []
    for arrived, event in events:
        if event.get("type") != "system":
            continue
        hook_id = str(event.get("hook_id", ""))
        if event.get("subtype") == "hook_started":
            started[hook_id] = arrived
        elif event.get("subtype") == "hook_response":
            begin = started.pop(hook_id, arrived)
            runs.append(
                {
                    "hookEvent": event.get("hook_event"),
                    "outcome": event.get("outcome"),
                    "exit_code": event.get("exit_code"),
                    "stdout": event.get("stdout", ""),
                    "stderr": event.get("stderr", ""),
                    "durationMs": int((arrived - begin) * 1000),
                    "timing": "stream",
                }
            )
    return runs


def model_text(request: Recorded) -> str:
    """All text the model was shown in ``messages`` (hook context arrives there)."""
    body = request.get("body") or {}
    parts: list[str] = []
    for message in body.get("messages", []) if isinstance(body, dict) else []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return "\n".join(parts)


def hook_blocks(text: str) -> list[str]:
    """The ``<system-reminder>`` blocks in which Claude passed hook output to the model."""
    blocks = text.split("<system-reminder>")
    return [b.split("</system-reminder>")[0] for b in blocks[1:] if " hook success:" in b or " hook additional" in b]


def assert_no_garbage(text: str) -> None:
    """No tracebacks, client errors, daemon frames or half envelopes reached the model."""
    for bad in ("Traceback", "paxm hook:", "PAXM-HOOK"):
        assert bad not in text, f"{bad!r} reached the model:\n{text[:3000]}"
    for block in hook_blocks(text):
        for bad in ("Error", "Exception", "timed out", '"ok"'):
            assert bad not in block, f"{bad!r} in hook output given to the model:\n{block[:3000]}"
        assert block.count("<paxm-recall") == block.count("</paxm-recall>"), block[:3000]
        assert block.count("<paxm-session-identity") == block.count("</paxm-session-identity>"), block[:3000]


class Sandbox(PaxmSandbox):
    """A private HOME, workspace and paxm config; nothing leaks in from the real environment."""

    agent = "claude"

    def __init__(self, root: Path, claude: Path) -> None:
        super().__init__(root)
        self.claude_bin = claude

    @property
    def settings(self) -> Path:
        return self.home / ".claude" / "settings.json"

    def claude_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run a non-session ``claude`` command (``plugin marketplace add`` ...)."""
        done = subprocess.run(
            [str(self.claude_bin), *args],
            cwd=self.workspace,
            env=self.env(CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1"),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"claude {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
        return done

    def claude(self, fake: FakeAnthropic, prompt: str, *extra: str, timeout: float = 180) -> ClaudeRun:
        """One ``claude -p`` turn in the workspace against ``fake``."""
        env = self.env(
            ANTHROPIC_BASE_URL=fake.url,
            ANTHROPIC_API_KEY="x",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
        )
        argv = [
            str(self.claude_bin),
            "-p",
            prompt,
            "--model",
            "claude-sonnet-4-5",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-hook-events",
            *extra,
        ]
        started = time.monotonic()
        stderr_path = self.root / "claude.stderr"
        with (
            stderr_path.open("w") as stderr,
            subprocess.Popen(
                argv, cwd=self.workspace, env=env, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL
            ) as process,
        ):
            watchdog = threading.Timer(timeout, process.kill)
            watchdog.start()
            events: list[tuple[float, dict[str, Any]]] = []
            lines: list[str] = []
            try:
                assert process.stdout is not None
                for raw in process.stdout:
                    arrived = time.monotonic()
                    line = raw.decode("utf-8", "replace")
                    lines.append(line)
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(event, dict):
                        events.append((arrived, event))
                returncode = process.wait()
            finally:
                watchdog.cancel()
        wall = time.monotonic() - started
        result = next((e for _, e in reversed(events) if e.get("type") == "result"), {})
        run = ClaudeRun(returncode, "".join(lines), stderr_path.read_text(errors="replace"), wall, result)
        run.hooks = _hook_runs(events)
        run.init = next((e for _, e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
        self._prefer_transcript_timing(run)
        return run

    def _prefer_transcript_timing(self, run: ClaudeRun) -> None:
        # Claude writes SessionStart's stream events only once the session is initialised, so
        # their arrival times say nothing; its transcript has the real ``durationMs`` for every
        # hook that printed context (hooks with empty output are not recorded there).
        session_id = str(run.result.get("session_id", ""))
        recorded: dict[str, list[int]] = {}
        for transcript in (self.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl") if session_id else ():
            for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                attachment = entry.get("attachment") if isinstance(entry, dict) else None
                if isinstance(attachment, dict) and "durationMs" in attachment:
                    recorded.setdefault(str(attachment.get("hookEvent")), []).append(int(attachment["durationMs"]))
        for hook in run.hooks:
            durations = recorded.get(str(hook["hookEvent"]))
            if durations:
                hook["durationMs"] = durations.pop(0)
                hook["timing"] = "transcript"
            elif hook["hookEvent"] == "SessionStart":
                hook["timing"] = "unknown"
