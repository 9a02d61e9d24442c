"""Byte-for-byte oracle for the settings-file integrations: what install, doctor and uninstall do.

For every harness whose hooks live in a JSON or TOML settings file (Claude Code, Codex, Gemini
CLI, Qwen Code, Copilot CLI, Kimi Code and the IDEs), each scenario runs the integration on a
sample home and records every file under it (path, mode, exact bytes), the lines install and
uninstall report and doctor's findings; a second part records ``decode`` and ``hook_output`` for
a fixed set of payloads and results.  The recordings in ``oracle/`` were made with the code the
shared settings-hooks engine replaced; any change in bytes written, backups kept, reports, doctor
findings, decoded events or hook output fails here.

Regenerate (only for an intended behaviour change) with ``PAXM_ORACLE_WRITE=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import paxm_core
from paxm_core.config.codec import decode
from paxm_core.config.defaults import default_config
from paxm_core.config.model import AgentConfig, Config
from paxm_core.integration import HookResult, InstallContext, Integration, client_path, interpreter_path
from paxm_core.plugins import get_plugin_manager

ORACLE = Path(__file__).parent / "oracle"
WRITE = os.environ.get("PAXM_ORACLE_WRITE") == "1"

#: agent name -> files (relative to HOME) holding the user's own settings before install
STALE = "/opt/old-venv/bin/python3 -I -S /opt/old/lib/paxm_core/hooks/client.py --config {CONFIG} --target {NAME}"
USER_JSON_GROUPS = {
    "model": "x",
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "~/bin/lint", "timeout": 3}]}],
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "~/bin/notify"},
                    {"type": "command", "command": STALE + " --event Stop"},
                ]
            }
        ],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard"}]}],
        "SessionStart": [],
    },
}
USER_FILES: dict[str, dict[str, str]] = {
    "claude": {".claude/settings.json": json.dumps(USER_JSON_GROUPS, indent=4)},
    "qwen": {".qwen/settings.json": json.dumps(USER_JSON_GROUPS)},
    "gemini-cli": {
        ".gemini/settings.json": json.dumps(
            {
                **USER_JSON_GROUPS,
                "hooks": {
                    "enabled": True,
                    "disabled": ["paxm-AfterTool"],
                    "BeforeAgent": [{"hooks": [{"type": "command", "command": STALE + " --event BeforeAgent"}]}],
                    "AfterModel": [{"hooks": [{"type": "command", "command": "~/bin/x"}]}],
                },
            },
            indent=2,
        )
    },
    "copilot-cli": {
        ".copilot/hooks/paxm.json": json.dumps(
            {
                "hooks": {
                    "agentStop": [{"type": "command", "bash": "~/bin/mine"}, {"type": "command", "bash": STALE}],
                    "preToolUse": [{"type": "command", "bash": "~/bin/guard"}],
                }
            }
        ),
        ".copilot/hooks/user.json": '{"version": 1, "hooks": {}}',
    },
    "kimi-code": {
        ".kimi-code/config.toml": (
            'default_model = "k2"  # mine\n\n[[hooks]]\nevent = "Stop"\ncommand = "~/bin/notify"\n\n'
            '[[hooks]]\nevent = "UserPromptSubmit"\ncommand = "' + STALE + ' --event UserPromptSubmit"\ntimeout = 3\n\n'
            "[ui]\ntheme = 'dark'\n"
        )
    },
    "codex": {
        ".codex/config.toml": (
            'model = "o3"\n\n[hooks]\nStop = [{ hooks = [{ type = "command", command = "~/bin/notify" }] }]\n\n'
            '[[hooks.UserPromptSubmit]]\nhooks = [{ type = "command", command = "' + STALE + '" }]\n'
        )
    },
    "cursor": {
        ".cursor/hooks.json": json.dumps(
            {"hooks": {"beforeSubmitPrompt": [{"command": "~/bin/x"}, {"command": STALE}], "stop": None}}
        ),
        ".cursor/mcp.json": json.dumps({"mcpServers": {"docs": {"command": "npx"}}}, indent=2),
    },
    "trae": {".trae/hooks.json": json.dumps(USER_JSON_GROUPS, indent=2)},
    "trae-cn": {".config/Trae CN/User/mcp.json": "{}"},
    "kiro": {".kiro/agents/reviewer.json": '{"name": "reviewer"}', ".kiro/settings/mcp.json": '{"mcpServers": {}}'},
    "zcode": {
        ".zcode/cli/config.json": json.dumps(
            {"theme": 1, "hooks": {"enabled": True, "events": {"Stop": [{"hooks": [{"command": "~/bin/n"}]}]}}}
        )
    },
}
AGENTS = sorted(USER_FILES)
HOME_VARS = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "QWEN_HOME",
    "COPILOT_HOME",
    "KIMI_CODE_HOME",
    "APPDATA",
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh HOME with every harness override unset (so each integration uses its default paths)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for var in [*HOME_VARS, *(v for v in os.environ if v.startswith("PAXM_") and v != "PAXM_ORACLE_WRITE")]:
        monkeypatch.delenv(var, raising=False)
    yield home


def _integration(name: str) -> Integration:
    found = get_plugin_manager().integration(name)
    assert found is not None, name
    return found


def _config(root: Path, integration: Integration, *, queue: bool = False, narrow: bool = False) -> Config:
    config = default_config(root / "paxm" / "config.yaml")
    config.agents[integration.name] = decode(AgentConfig, dict(integration.default_agent_config()), "agent")
    agent = config.agents[integration.name]
    agent.enabled = True
    if queue:
        config.capture_queue.path = str(root / "queue" / "capture.sqlite")
    if narrow:  # only session start and turn end get a hook
        for event, hook in agent.hooks.items():
            if event not in ("session_start", "turn_end"):
                hook.recall.enabled = False
                hook.write.enabled = False
    return config


def _replacements(root: Path) -> list[tuple[str, str]]:
    from paxm_integration_ide.mcp import paxm_executable

    pairs = [
        (str(root), "{ROOT}"),
        (interpreter_path(), "{PY}"),
        (str(client_path()), "{CLIENT}"),
        (paxm_executable(), "{PAXM}"),
        (sys.executable, "{PY}"),
        (str(Path(paxm_core.__file__).parent), "{CORE}"),
    ]
    return sorted(pairs, key=lambda pair: -len(pair[0]))


def _norm(value: Any, pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_norm(v, pairs) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v, pairs) for k, v in value.items()}
    return value


def _tree(root: Path, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Every file under ``root/home`` and paxm's integration state: path -> mode and exact text."""
    out: dict[str, str] = {}
    for base in (root / "home", root / "paxm" / "integrations"):
        for path in sorted(base.rglob("*")) if base.exists() else []:
            if path.is_file():
                mode = oct(path.stat().st_mode & 0o777)
                out[str(path.relative_to(root))] = _norm(f"{mode}\n{path.read_text(encoding='utf-8')}", pairs)
    return out


def _findings(integration: Integration, ctx: InstallContext) -> list[str]:
    return [f"{f.level}: {f.message} | {f.fix}" for f in integration.check(ctx)]


def _scenario(root: Path, name: str, user: bool) -> dict[str, Any]:
    integration = _integration(name)
    pairs = _replacements(root)
    home = root / "home"
    if user:
        for rel, text in USER_FILES[name].items():
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text.replace("{CONFIG}", str(root / "paxm" / "config.yaml")).replace("{NAME}", name))
    steps: dict[str, Any] = {"before": _tree(root, pairs)}
    narrow = _config(root, integration, queue=True, narrow=True)
    config = _config(root, integration)
    lines = integration.install(InstallContext(config=narrow))
    steps["install narrow"] = {"lines": lines, "files": _tree(root, pairs)}
    steps["doctor narrow, default config"] = _findings(integration, InstallContext(config=config))
    for step in ("install", "install again"):
        lines = integration.install(InstallContext(config=config))
        steps[step] = {
            "lines": lines,
            "files": _tree(root, pairs),
            "doctor": _findings(integration, InstallContext(config=config)),
        }
    lines = integration.uninstall(InstallContext(config=config))
    steps["uninstall"] = {
        "lines": lines,
        "files": _tree(root, pairs),
        "doctor": _findings(integration, InstallContext(config=config)),
    }
    steps["uninstall again"] = integration.uninstall(InstallContext(config=config))
    normalized: dict[str, Any] = _norm(steps, pairs)
    return normalized


def _compare(name: str, actual: Any) -> None:
    path = ORACLE / f"{name}.json"
    text = json.dumps(actual, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if WRITE:
        ORACLE.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == actual


@pytest.mark.parametrize("user", [False, True], ids=["fresh", "user"])
@pytest.mark.parametrize("name", AGENTS)
def test_install_doctor_uninstall_match_the_oracle(home: Path, name: str, user: bool) -> None:
    """Install (narrow, default, again), doctor and uninstall leave exactly the recorded files and lines."""
    assert not any(shutil.which(exe) for exe in ("claude", "codex", "gemini", "qwen", "copilot", "kimi"))
    _compare(f"install-{name}-{'user' if user else 'fresh'}", _scenario(home.parent, name, user))


#: payloads covering every field name the integrations read (Claude, Gemini, Copilot, Kimi, Cursor)
PAYLOADS: dict[str, Any] = {
    "claude-shaped": {
        "session_id": "s-1",
        "turn_id": "t-1",
        "cwd": "/w",
        "prompt": "how do we deploy",
        "last_assistant_message": "with blue-green",
        "prompt_response": "gemini reply",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": "a b",
        "tool_output": "kimi out",
        "text": "cursor reply",
        "source": "startup",
    },
    "camel": {
        "sessionId": "s-2",
        "cwd": "/w",
        "prompt": "hi",
        "toolName": "bash",
        "toolArgs": {"c": 1},
        "toolResult": {"resultType": "failure", "textResultForLlm": "boom"},
        "source": "new",
    },
    "kimi-parts": {
        "session_id": "s-3",
        "prompt": [{"type": "text", "text": "part one"}],
        "hook_event_name": "UserPromptSubmit",
    },
    "named": {"hook_event_name": "Stop", "session_id": "s-4", "last_assistant_message": "bye"},
    "empty": {},
}
NATIVE_NAMES = (
    "",
    "session_start",
    "user_input",
    "turn_end",
    "tool_use",
    "SessionStart",
    "UserPromptSubmit",
    "userpromptsubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "BeforeAgent",
    "AfterAgent",
    "AfterTool",
    "sessionStart",
    "userPromptSubmitted",
    "postToolUse",
    "beforeSubmitPrompt",
    "afterAgentResponse",
    "agentSpawn",
    "userPromptSubmit",
    "stop",
    "user_prompt_submit",
    "Custom",
)


def _event_json(event: Any) -> dict[str, Any]:
    out = {}
    for field in (
        "target",
        "event",
        "native_event",
        "query",
        "prompt",
        "assistant",
        "workspace",
        "metadata",
        "limit",
        "raw",
    ):
        out[field] = getattr(event, field)
    out["messages"] = [m.to_json() for m in event.messages]
    return out


def _results() -> Iterator[tuple[str, HookResult]]:
    for event in ("session_start", "user_input", "tool_use", "turn_end", "custom"):
        yield (
            f"{event}/context",
            HookResult(
                target="t",
                event=event,
                session_context="<paxm-recall>session &lt;/paxm-recall&gt;</paxm-recall>",
                recall_context="<paxm-recall>memory ✓</paxm-recall>",
                bootstrap_context="<paxm-session>boot</paxm-session>",
            ),
        )
        yield f"{event}/none", HookResult(target="t", event=event)
    yield "user_input/ignored", HookResult(target="t", event="user_input", ignored=True, recall_context="x")


@pytest.mark.parametrize("name", AGENTS)
def test_decode_and_hook_output_match_the_oracle(home: Path, name: str) -> None:
    """``decode`` of every payload under every event name, and ``hook_output`` in every mode."""
    integration = _integration(name)
    decoded = {}
    for label, payload in PAYLOADS.items():
        raw = json.dumps(payload).encode()
        for native in NATIVE_NAMES:
            decoded[f"{label} @ {native}"] = _event_json(integration.decode(native, raw))
    decoded["not json @ Stop"] = _event_json(integration.decode("Stop", b"{nope"))
    outputs = {}
    for label, result in _results():
        for mode in ("text", "json", "cursor", "zcode"):
            outputs[f"{label} [{mode}]"] = integration.hook_output(result, mode)
    actual = {
        "identity": [integration.name, list(integration.aliases), integration.display_name, integration.label],
        "owners": [list(integration.owners), integration.setup_priority],
        "defaults": json.loads(json.dumps(integration.default_agent_config())),
        "decode": decoded,
        "hook_output": outputs,
    }
    _compare(f"runtime-{name}", actual)
