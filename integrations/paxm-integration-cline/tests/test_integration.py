"""The ``cline`` integration: the contract, the generated plugin (run by Node), decode and output."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from paxm_contracttest import DecodeFixture, IntegrationContract, NativeConfig, assert_detects
from paxm_core.config import save_config
from paxm_core.config.codec import decode
from paxm_core.config.defaults import default_config
from paxm_core.config.model import AgentConfig
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookResult,
    InstallContext,
    Integration,
    IntegrationError,
)
from paxm_integration_cline import ClineIntegration
from paxm_integration_cline.plugin import plugin_file, render_plugin

FIXTURES = Path(__file__).parent / "fixtures" / "cline-3.0.65"
USER_PLUGIN = 'export default { name: "mine", manifest: { capabilities: ["hooks"] }, hooks: {} };\n'
_ARGV = re.compile(r'\[\s*"(?:[^"\\]|\\.)*"(?:\s*,\s*"(?:[^"\\]|\\.)*")*\s*\]')


def _commands(text: str) -> list[str]:
    settings: dict[str, Any] = plugin_file().embedded_settings(text) or {}
    return [shlex.join(argv) for argv in (settings.get("commands") or {}).values()]


def _payload(event: str, **fields: object) -> bytes:
    """What the generated plugin sends (see ``plugin_template.js``: ``base()`` plus the event's fields)."""
    base = {
        "schema_version": f"paxm.cline.{event}.v1",
        "hook_event_name": event,
        "target": "cline",
        "session_id": "conv_1796127545350_gtzq8uf",
        "cwd": "/work/app",
        "metadata": {"cline_run_id": "run_sxjjXxFV"},
    }
    return json.dumps({**base, **fields}).encode()


class TestClineContract(IntegrationContract):
    output_modes = ("text",)

    @pytest.fixture
    def paxm_integration(self) -> Integration:
        return ClineIntegration()

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        return [
            DecodeFixture(
                "session_start",
                _payload("session_start"),
                EVENT_SESSION_START,
                {"metadata.session_id": "conv_1796127545350_gtzq8uf"},
            ),
            DecodeFixture(
                "user_input",
                _payload("user_input", prompt="RUN_TOOL: note the decision"),
                EVENT_USER_INPUT,
                {"prompt": "RUN_TOOL: note the decision", "workspace": "/work/app"},
            ),
            DecodeFixture(
                "tool_use",
                _payload(
                    "tool_use",
                    tool_name="run_commands",
                    tool_input={"commands": ["ls"]},
                    tool_response=[{"result": "a\n"}],
                ),
                EVENT_TOOL_USE,
            ),
            DecodeFixture(
                "turn_end",
                _payload("turn_end", last_assistant_message="Noted."),
                EVENT_TURN_END,
                {"assistant": "Noted."},
            ),
            # upstream's hook files passed Cline's own names
            DecodeFixture("TaskComplete", b'{"taskId": "t1"}', EVENT_TURN_END, {"metadata.session_id": "t1"}),
        ]

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NativeConfig:
        plugins = tmp_path / "cline" / "plugins"
        monkeypatch.setenv("PAXM_CLINE_PLUGINS_DIR", str(plugins))
        plugins.mkdir(parents=True)
        (plugins / "mine.js").write_text(USER_PLUGIN)
        return NativeConfig(path=plugins / "paxm.js", content=None, parse=lambda t: t, commands=_commands)


def _context(tmp_path: Path) -> InstallContext:
    path = tmp_path / "paxm" / "config.yaml"
    config = default_config(path)
    config.agents["cline"] = decode(AgentConfig, dict(ClineIntegration().default_agent_config()), "agents.cline")
    config.agents["cline"].enabled = True
    save_config(config, path)
    config.path = path
    return InstallContext(config=config)


def test_install_writes_a_private_plugin_beside_the_users_and_removes_upstreams_hook_files(
    tmp_path: Path, isolated_home: Path
) -> None:
    cline = ClineIntegration()
    plugins, hooks = isolated_home / ".cline" / "plugins", isolated_home / ".cline" / "hooks"
    plugins.mkdir(parents=True)
    hooks.mkdir()
    (plugins / "mine.js").write_text(USER_PLUGIN)
    (hooks / "TaskStart").write_text("#!/bin/sh\n# managed by paxm\nexec paxm __hook --cline\n")
    (hooks / "PreToolUse").write_text("#!/bin/sh\n~/bin/guard\n")  # the user's own
    ctx = _context(tmp_path)
    lines = cline.install(ctx)
    assert any("removed upstream paxm hook" in line for line in lines)
    plugin = plugins / "paxm.js"
    assert stat.S_IMODE(plugin.stat().st_mode) == 0o600
    settings: dict[str, Any] | None = plugin_file().embedded_settings(plugin.read_text())
    assert settings is not None and list(settings["commands"]) == [
        "session_start",
        "user_input",
        "tool_use",
        "turn_end",
    ]
    assert "--timeout" in " ".join(settings["commands"]["user_input"])  # inside Cline's 3 s hook budget
    assert sorted(p.name for p in hooks.iterdir()) == ["PreToolUse"]
    assert [f.level for f in cline.check(ctx)] == ["ok"]
    assert cline.install(ctx)[-1].endswith("is up to date")
    cline.uninstall(ctx)
    assert sorted(p.name for p in plugins.iterdir()) == ["mine.js"]
    assert (plugins / "mine.js").read_text() == USER_PLUGIN
    assert [f.level for f in cline.check(ctx)] == ["error"]


def test_a_foreign_paxm_js_is_never_overwritten(tmp_path: Path, isolated_home: Path) -> None:
    foreign = isolated_home / ".cline" / "plugins" / "paxm.js"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("export default {};\n")
    with pytest.raises(IntegrationError, match="not written by paxm"):
        ClineIntegration().install(_context(tmp_path))
    assert foreign.read_text() == "export default {};\n"


def test_output_is_plain_text_for_session_start_and_prompts_only() -> None:
    cline = ClineIntegration()
    result = HookResult(target="cline", event=EVENT_USER_INPUT, recall_context="<paxm-recall>m</paxm-recall>")
    assert cline.hook_output(result, "text") == "<paxm-recall>m</paxm-recall>"
    assert cline.hook_output(HookResult(target="cline", event=EVENT_TURN_END, recall_context="x"), "text") == ""
    assert (
        cline.hook_output(HookResult(target="cline", event=EVENT_USER_INPUT, ignored=True, recall_context="x"), "")
        == ""
    )


# -- the generated plugin, run by Node with the contexts captured from Cline 3.0.65 -------------------

RECORDER = """\
import sys, json, os
payload = sys.stdin.read()
with open(os.environ["REC"], "a") as fh:
    fh.write(json.dumps({"event": sys.argv[1], "payload": json.loads(payload)}) + "\\n")
if sys.argv[1] in ("session_start", "user_input"):
    print("CTX-" + sys.argv[1])
"""

DRIVER = """\
import plugin from %s;
import fs from "node:fs";
const fx = (n) => JSON.parse(fs.readFileSync(%s + "/" + n + ".json", "utf8"));
const out = {};
const call = async (name, fixture) => (plugin.hooks[name] ? (await plugin.hooks[name](fx(fixture))) ?? null : "absent");
out.before = await call("beforeRun", "beforeRun");
out.beforeAgain = await call("beforeRun", "beforeRun");
out.tool = await call("afterTool", "afterTool");
out.after = await call("afterRun", "afterRun");
await new Promise((r) => setTimeout(r, 1500));
console.log(JSON.stringify(out));
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        from paxm_contracttest.harness import require

        require("node is not installed: the generated Cline plugin is run by Node")
    assert node is not None
    return node


def _drive(tmp_path: Path, commands: dict[str, list[str]]) -> tuple[dict[str, object], list[dict[str, object]]]:
    plugin = tmp_path / "paxm.mjs"
    plugin.write_text(render_plugin(commands))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER % (json.dumps(str(plugin)), json.dumps(str(FIXTURES))))
    rec = tmp_path / "rec.jsonl"
    done = subprocess.run(
        [_node(), str(driver)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "REC": str(rec)},
    )
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in rec.read_text().splitlines()] if rec.exists() else []
    return json.loads(done.stdout.strip().splitlines()[-1]), calls


def test_the_plugin_injects_on_before_run_and_hands_the_visible_turn_to_paxm(tmp_path: Path) -> None:
    recorder = tmp_path / "rec.py"
    recorder.write_text(RECORDER)
    python = shutil.which("python3") or "python3"
    commands = {e: [python, str(recorder), e] for e in ("session_start", "user_input", "tool_use", "turn_end")}
    out, calls = _drive(tmp_path, commands)
    assert out["before"] == {"appendContext": "CTX-session_start\n\nCTX-user_input"}
    assert out["beforeAgain"] == {"appendContext": "CTX-user_input"}  # session_start once per conversation
    by_event = {c["event"]: c["payload"] for c in calls}
    assert by_event["user_input"]["prompt"] == "RUN_TOOL: note the decision"  # <user_input> wrapper gone
    assert by_event["user_input"]["session_id"] == "conv_1796128404906_xjpjeja"
    assert by_event["tool_use"]["tool_name"] == "run_commands"
    assert by_event["tool_use"]["tool_input"] == {"commands": ["echo TOOL_RAN_OK"]}
    turn = by_event["turn_end"]
    assert turn["last_assistant_message"] == "Noted, I will remember that. [marker-seen]"
    assert turn["prompt"] == "RUN_TOOL: note the decision"
    assert [m["role"] for m in turn["messages"]] == ["user", "assistant"]  # hook context is not the user's
    assert "hook_context" not in json.dumps(turn)


def test_the_plugin_fails_open_when_paxm_is_gone_or_hangs(tmp_path: Path) -> None:
    gone = {e: [str(tmp_path / "missing" / "python"), "client.py"] for e in ("session_start", "user_input", "turn_end")}
    out, _ = _drive(tmp_path, gone)
    assert out["before"] is None and out["after"] is None and out["tool"] == "absent"
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(30)\n")
    python = shutil.which("python3") or "python3"
    out, _ = _drive(tmp_path, {"user_input": [python, str(hang)]})
    assert out["before"] is None  # gave up inside Cline's 3 s hook budget, nothing injected


def test_detect_finds_cline_on_path_else_its_home(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cline = ClineIntegration()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert_detects(cline, isolated_home / ".cline", "cline", tmp_path)


def test_write_plugin_never_chmods_or_writes_through_a_link(tmp_path: Path) -> None:
    write_plugin = plugin_file().write
    victim = tmp_path / "victim.js"
    source = "// paxm plugin\n"
    victim.write_text(source)
    victim.chmod(0o644)
    link = tmp_path / "plugins" / "paxm.js"
    link.parent.mkdir()
    link.symlink_to(victim)
    assert write_plugin(link, source) is False  # current: left as it is, its target's mode too
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644 and victim.read_text() == source
    assert write_plugin(link, "// a newer plugin\n") is True  # replaces the link, never writes through it
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644 and victim.read_text() == source
    assert not link.is_symlink() and stat.S_IMODE(link.stat().st_mode) == 0o600
