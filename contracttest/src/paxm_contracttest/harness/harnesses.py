"""The harnesses paxm's real-binary tests and hook-latency benchmark drive, described as data.

Each :class:`~paxm_contracttest.harness.kit.Harness` says which npm release is pinned, how one
prompt runs non-interactively, which fake model API it speaks, and its environment and config
quirks.  :data:`HARNESSES` maps the short names (``benchmarks/harness_latency.py --harness``)
to them.  The npm cache entry names are the ones ``.ci/warm_harnesses.py`` fills.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from paxm_contracttest.harness import npm_cache_dir
from paxm_contracttest.harness.claude import run_claude
from paxm_contracttest.harness.kit import Harness, HarnessBox, Turn, stamped_run

__all__ = [
    "CLAUDE",
    "CLAUDE_CURRENT",
    "CLINE",
    "CODEX",
    "codex_hooks_completed",
    "COPILOT",
    "GEMINI",
    "HARNESSES",
    "KILO",
    "KIMI",
    "OPENCODE",
    "PI",
    "PI_BUILDS",
    "PI_CURRENT",
    "PI_OLD",
    "QWEN",
    "QWEN_SETTINGS",
    "GEMINI_SETTINGS",
    "ESCAPED_ENVELOPE",
    "CLINE_USER_PLUGIN",
    "COPILOT_USER_HOOKS",
    "KIMI_CONFIG",
]


def _json_reply(key: str) -> Callable[[HarnessBox, str], str]:
    def reply(_box: HarnessBox, stdout: str) -> str:
        try:
            value = json.loads(stdout)
        except ValueError:
            return ""
        items = value if isinstance(value, list) else [value]
        for item in reversed(items):
            if isinstance(item, dict) and (key == "response" or item.get("type") == "result"):
                return str(item.get(key) or "")
        return ""

    return reply


def _write_once(path: Path, text: str) -> None:
    """The user's own config, written before paxm ever touches it (kept if it exists)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


#: where a user config points before the first turn moves it to the fake (nothing listens there)
NO_SERVER = "http://127.0.0.1:9/v1"


def _point_base_url(path: Path, url: str) -> None:
    """Move the first ``base_url`` of the user's TOML config to ``url`` (paxm's entries stay)."""
    text = path.read_text()
    path.write_text(re.sub(r'base_url = "[^"]*"', f'base_url = "{url}"', text, count=1))


# -- Claude Code ------------------------------------------------------------------------------

CLAUDE = Harness(
    name="claude",
    cache="claude-code-2.1.197",  # the last release that runs on Node 20
    packages=("@anthropic-ai/claude-code@2.1.197",),
    api="anthropic",
    argv=("-p", "{prompt}", "--model", "claude-sonnet-4-5", "--output-format", "stream-json", "--verbose")
    + ("--include-hook-events",),
    env={
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": "x",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    },
    run=run_claude,
    native_config=lambda box: box.home / ".claude" / "settings.json",
)
#: the current release, on the pinned Node 24
CLAUDE_CURRENT = replace(
    CLAUDE,
    cache="anthropic-ai-claude-code-2.1.332",
    packages=("@anthropic-ai/claude-code@2.1.332",),
    node24=True,
)

# -- Codex ------------------------------------------------------------------------------------

_HOOK_LINE = re.compile(r"^hook: (\w+)(?: (Completed|Failed|Blocked|Stopped))?\s*$")

CODEX_CONFIG = """# sandbox codex config (the user's own settings)
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


def run_codex(box: HarnessBox, argv: list[str], env: dict[str, str], timeout: float) -> Turn:
    """One ``codex exec`` turn; Codex prints ``hook: <Event>`` and ``hook: <Event> Completed``
    on stderr around each hook, stamped as the lines arrive (how long Codex waited)."""
    last = box.root / "last-message.txt"
    last.unlink(missing_ok=True)
    returncode, stamped, stdout, wall = stamped_run(box, argv, env, timeout, watch="stderr")
    reply = last.read_text(errors="replace").strip() if last.exists() else ""
    turn = Turn(returncode, stdout, "".join(line for _, line in stamped), wall, reply)
    begun: dict[str, list[float]] = {}
    for arrived, line in stamped:
        match = _HOOK_LINE.match(line.strip())
        if match and match.group(2) is None:
            begun.setdefault(match.group(1), []).append(arrived)
        elif match:
            begin = begun[match.group(1)].pop(0) if begun.get(match.group(1)) else arrived
            turn.hooks.append(
                {"hookEvent": match.group(1), "outcome": match.group(2), "durationMs": int((arrived - begin) * 1000)}
            )
    return turn


def codex_hooks_completed(run: Turn, *events: str, within_ms: int) -> None:
    """Codex ran (trusted) each of ``events`` once, and every hook completed inside ``within_ms``."""
    seen = [h["hookEvent"] for h in run.hooks]
    for event in events:
        assert seen.count(event) == 1, (event, run.hooks, run.stderr[-3000:])
    for hook in run.hooks:
        assert hook["outcome"] == "Completed", (hook, run.stderr[-3000:])
        assert hook["durationMs"] < within_ms, hook


CODEX = Harness(
    name="codex",
    packages=("@openai/codex@0.171.0",),
    api="responses",
    argv=("exec", "--skip-git-repo-check", "-o", "{root}/last-message.txt", "{prompt}"),
    env={"FAKE_API_KEY": "sk-fake"},
    prepare=lambda box: _write_once(box.home / ".codex" / "config.toml", CODEX_CONFIG.replace("{url}", NO_SERVER)),
    configure=lambda box, url: _point_base_url(box.home / ".codex" / "config.toml", url),
    run=run_codex,
    native_config=lambda box: box.home / ".codex" / "config.toml",
)

# -- Qwen Code and Gemini CLI (settings.json, JSON output) -------------------------------------

#: a realistic ~/.qwen/settings.json: auth, privacy, the user's own hook and MCP server
QWEN_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "general": {"disableAutoUpdate": True, "enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    # Qwen's own managed memory makes a second model request per turn
    "memory": {"enableManagedAutoMemory": False},
    "mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs-mcp"]}},
    "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "true", "timeout": 2000}]}]},
}

#: Qwen Code and Gemini CLI HTML-escape the context a hook adds: the envelope as the model sees it
ESCAPED_ENVELOPE = ('&lt;paxm-recall version="1" mode="passive"&gt;', "&lt;/paxm-recall&gt;")

QWEN = Harness(
    name="qwen",
    cache="qwen-code-0.15.10",  # the last release that runs on Node 20
    packages=("@qwen-code/qwen-code@0.15.10",),
    api="chat",
    argv=("-p", "{prompt}", "-o", "json", "--approval-mode", "yolo"),
    env={"OPENAI_API_KEY": "sk-fake", "OPENAI_BASE_URL": "{url}", "OPENAI_MODEL": "fake-model"},
    prepare=lambda box: _write_once(box.home / ".qwen" / "settings.json", json.dumps(QWEN_SETTINGS, indent=2) + "\n"),
    reply=_json_reply("result"),
    native_config=lambda box: box.home / ".qwen" / "settings.json",
    envelope=ESCAPED_ENVELOPE,
)

#: a realistic ~/.gemini/settings.json: auth, privacy, the user's own hook and MCP server
GEMINI_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "mcpServers": {"docs": {"command": "true", "args": [], "trust": False}},
    "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "name": "mine", "command": "true", "timeout": 2000}]}]},
}

GEMINI = Harness(
    name="gemini",
    agent="gemini-cli",
    cache="gemini-cli-0.61.0",
    packages=("@google/gemini-cli@0.61.0",),
    api="gemini",
    argv=("-m", "fake-model", "-p", "{prompt}", "-o", "json", "--approval-mode", "yolo"),
    env={"GEMINI_API_KEY": "x", "GOOGLE_GEMINI_BASE_URL": "{url}", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
    prepare=lambda box: _write_once(
        box.home / ".gemini" / "settings.json", json.dumps(GEMINI_SETTINGS, indent=2) + "\n"
    ),
    reply=_json_reply("response"),
    native_config=lambda box: box.home / ".gemini" / "settings.json",
    envelope=ESCAPED_ENVELOPE,
)

# -- Copilot CLI -------------------------------------------------------------------------------


def _copilot_prepare(box: HarnessBox) -> None:
    """The user's own Copilot settings and hook file; the shared unpack cache."""
    _write_once(box.home / ".copilot" / "settings.json", '{"model": "fake-model"}\n')
    _write_once(box.home / ".copilot" / "hooks" / "mine.json", COPILOT_USER_HOOKS)
    (npm_cache_dir() / "copilot-1.0.102-xdg-cache").mkdir(parents=True, exist_ok=True)


COPILOT_USER_HOOKS = '{"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "true"}]}}\n'

COPILOT = Harness(
    name="copilot",
    agent="copilot-cli",
    cache="copilot-1.0.102",
    packages=("@github/copilot@1.0.102",),
    api="chat",
    argv=("-p", "{prompt}", "-s", "--no-color", "--allow-all-tools"),
    env={
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": "{url}",
        "COPILOT_PROVIDER_API_KEY": "x",
        "COPILOT_MODEL": "fake-model",
        # Copilot unpacks itself into XDG_CACHE_HOME on first run (seconds): one shared cache
        "XDG_CACHE_HOME": "{npm_cache}/copilot-1.0.102-xdg-cache",
    },
    prepare=_copilot_prepare,
    native_config=lambda box: box.home / ".copilot" / "hooks" / "paxm.json",
)

# -- Kimi Code and Cline (Chat Completions offering their own shell tool) ----------------------

KIMI_CONFIG = """\
default_model = "fake"  # the local one
telemetry = false

[providers.fake]
type = "openai"
base_url = "{url}"
api_key = "sk-fake"

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

KIMI = Harness(
    name="kimi",
    agent="kimi-code",
    packages=("@moonshot-ai/kimi-code@2.1.0",),
    api="chat-tools",
    argv=("-p", "{prompt}"),
    node24=True,  # Kimi Code needs Node >= 22.19
    prepare=lambda box: _write_once(box.home / ".kimi-code" / "config.toml", KIMI_CONFIG.replace("{url}", NO_SERVER)),
    configure=lambda box, url: _point_base_url(box.home / ".kimi-code" / "config.toml", url),
    reply=lambda _box, stdout: next((line.strip() for line in reversed(stdout.splitlines()) if line.strip()), ""),
    native_config=lambda box: box.home / ".kimi-code" / "config.toml",
)


def _cline_reply(_box: HarnessBox, stdout: str) -> str:
    for line in reversed(stdout.splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "run_result":
            return str(event.get("text") or "")
    return ""


def _cline_auth(box: HarnessBox, url: str) -> None:
    """``cline auth`` against the fake (once per fake server)."""
    if getattr(box, "cline_url", None) == url:
        return
    done = subprocess.run(
        [str(box.installed.binary), "auth", "-p", "openai", "-k", "sk-fake", "-m", "fake-model", "-b", url],
        cwd=box.workspace,
        env=box.turn_env(url),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    box.cline_url = url  # type: ignore[attr-defined]


#: the user's own Cline plugin, beside which paxm's is installed
CLINE_USER_PLUGIN = 'export default { name: "mine", manifest: { capabilities: ["hooks"] }, hooks: {} };\n'


CLINE = Harness(
    name="cline",
    packages=("cline@3.0.65",),
    api="chat-tools",
    argv=("--json", "{prompt}"),
    # local: no hub daemon left running after a run
    env={"CLINE_SESSION_BACKEND_MODE": "local", "CLINE_NO_AUTO_UPDATE": "1", "CLINE_PLUGIN_IMPORT_TIMEOUT_MS": "60000"},
    configure=_cline_auth,
    reply=_cline_reply,
    prepare=lambda box: _write_once(box.home / ".cline" / "plugins" / "mine.js", CLINE_USER_PLUGIN),
    native_config=lambda box: box.home / ".cline" / "plugins" / "paxm.js",
)

# -- OpenCode and Kilo Code (a plugin in the config dir, ``run --format json``) ----------------


def _opencode_reply(_box: HarnessBox, stdout: str) -> str:
    texts = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "text":
            texts.append(str((event.get("part") or {}).get("text", "")))
    return texts[-1] if texts else ""


def _opencode_configure(directory: str, config_name: str, schema: str) -> Callable[[HarnessBox, str], None]:
    def configure(box: HarnessBox, url: str) -> None:
        """Point the config dir at the fake; link the pre-installed config-dir dependency (the
        harness installs it at start otherwise, which stalls over a minute offline)."""
        target = box.home / ".config" / directory
        target.mkdir(parents=True, exist_ok=True)
        model = {"name": "Fake Model", "tool_call": True, "limit": {"context": 128000, "output": 4096}}
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": url, "apiKey": "sk-fake"},
            "models": {"fake-model": model},
        }
        config = {
            "$schema": schema,
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"fake": provider},
        }
        (target / config_name).write_text(json.dumps(config, indent=2))
        deps = box.installed.extras["deps"]
        for name in ("package.json", "package-lock.json"):
            if (deps / name).exists() and not (target / name).exists():
                (target / name).write_bytes((deps / name).read_bytes())
        if not (target / "node_modules").exists():
            (target / "node_modules").symlink_to(deps / "node_modules", target_is_directory=True)

    return configure


_OPENCODE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}

OPENCODE = Harness(
    name="opencode",
    packages=("opencode-ai@1.18.33",),
    api="chat",
    argv=("run", "--print-logs", "--format", "json", "{prompt}"),
    env=_OPENCODE_ENV,
    extras={
        "deps": ("opencode-plugin-deps-1.18.33", ("@opencode-ai/plugin@1.18.33",), "node_modules/@opencode-ai/plugin")
    },
    configure=_opencode_configure("opencode", "opencode.json", "https://opencode.ai/config.json"),
    reply=_opencode_reply,
    native_config=lambda box: box.home / ".config" / "opencode" / "plugins" / "paxm.js",
)

KILO = Harness(
    name="kilo",
    cache="kilocode-cli-7.7.9",
    packages=("@kilocode/cli-linux-x64@7.7.9",),
    binary="node_modules/@kilocode/cli-linux-x64/bin/kilo",
    api="chat",
    argv=("run", "--print-logs", "--format", "json", "{prompt}"),
    env={
        **_OPENCODE_ENV,
        "KILO_DISABLE_AUTOUPDATE": "1",
        "KILO_DISABLE_MODELS_FETCH": "1",
        "KILO_DISABLE_DEFAULT_PLUGINS": "1",
    },
    # Kilo 7.7.9 has no matching @kilocode/plugin; it compares package names only, so 7.3.1 does
    extras={
        "deps": (
            "kilocode-plugin-deps-7.3.1",
            ("@kilocode/plugin@7.3.1",),
            "node_modules/@kilocode/plugin/package.json",
        )
    },
    configure=_opencode_configure("kilo", "kilo.json", "https://app.kilo.ai/config.json"),
    reply=_opencode_reply,
    native_config=lambda box: box.home / ".config" / "kilo" / "plugins" / "paxm.js",
)

# -- Pi ----------------------------------------------------------------------------------------


def _pi_configure(box: HarnessBox, url: str) -> None:
    """Point Pi at the fake server (a custom ``openai-completions`` provider in ``models.json``)."""
    agent_dir = box.home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    model = {
        "id": "fake-model",
        "name": "Fake",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 128000,
        "maxTokens": 4096,
    }
    provider = {
        "baseUrl": url,
        "api": "openai-completions",
        "apiKey": "sk-fake",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [model],
    }
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": provider}}, indent=2))


PI = Harness(
    name="pi",
    cache="earendil-works-pi-coding-agent-0.74.2",  # the last 0.7x on Node 20
    packages=("@earendil-works/pi-coding-agent@0.74.2",),
    api="chat",
    argv=("--offline", "--provider", "fake", "--model", "fake-model", "-p", "{prompt}"),
    env={"PI_OFFLINE": "1"},
    configure=_pi_configure,
    native_config=lambda box: box.home / ".pi" / "agent" / "extensions" / "paxm-hook" / "index.ts",
)

#: the old npm scope (its last release) and the current 1.x, which needs Node >= 22.19
PI_OLD = replace(PI, cache="mariozechner-pi-coding-agent-0.73.1", packages=("@mariozechner/pi-coding-agent@0.73.1",))
PI_CURRENT = replace(
    PI, cache="earendil-works-pi-coding-agent-1.6.0", packages=("@earendil-works/pi-coding-agent@1.6.0",), node24=True
)
#: every Pi build the Pi suite runs, by the key its fixture scripts take
PI_BUILDS = {"mariozechner-0.73": PI_OLD, "earendil-0.74": PI, "earendil-1.x": PI_CURRENT}

#: every harness by its short name (the benchmark's ``--harness`` names)
HARNESSES: dict[str, Harness] = {
    h.name: h for h in (CLAUDE, CODEX, OPENCODE, PI, QWEN, KIMI, CLINE, KILO, GEMINI, COPILOT)
}
