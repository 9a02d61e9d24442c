"""``paxm_core.settings_hooks``: a harness declared as data gets install, uninstall, doctor, decode and output."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest

from paxm_core.config.codec import decode
from paxm_core.config.defaults import default_config
from paxm_core.config.model import AgentConfig, Config
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    HookResult,
    InstallContext,
    Integration,
    hook_command_line,
)
from paxm_core.json_settings import merge_hook_groups
from paxm_core.settings_hooks import (
    Location,
    SettingsHooksIntegration,
    SettingsHooksSpec,
    is_paxm_or_upstream_hook,
)

EVENTS = (
    (EVENT_SESSION_START, "Begin"),
    (EVENT_USER_INPUT, "Prompt"),
    (EVENT_TOOL_USE, "AfterTool"),
    (EVENT_TURN_END, "Done"),
)
#: a whole new JSON-settings harness, as a distribution would declare it
TOY = SettingsHooksSpec(
    name="toy",
    aliases=("toy-cli",),
    display_name="Toy CLI",
    executable="toy-cli-not-installed",
    location=Location("PAXM_TOY_SETTINGS", home_var="TOY_HOME", home=".toy"),
    events=EVENTS,
    matchers={"AfterTool": ".*"},
    handler={"type": "command", "name": "paxm-{native}", "command": "{command}", "timeout": 7},
    reply_field="reply",
    html_escaped=True,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("PAXM_TOY_SETTINGS", "TOY_HOME"):
        monkeypatch.delenv(var, raising=False)
    return home


def _config(tmp_path: Path, integration: Integration) -> Config:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents[integration.name] = decode(AgentConfig, dict(integration.default_agent_config()), "agent")
    config.agents[integration.name].enabled = True
    return config


def test_a_spec_alone_is_a_complete_integration(tmp_path: Path, home: Path) -> None:
    toy = SettingsHooksIntegration(TOY)
    assert isinstance(toy, Integration)
    assert (toy.name, toy.aliases, toy.label) == ("toy", ("toy-cli",), "Toy CLI")
    settings = home / ".toy" / "settings.json"
    settings.parent.mkdir()
    user = {"theme": "dark", "hooks": {"Prompt": [{"hooks": [{"type": "command", "command": "mine"}]}], "Other": []}}
    settings.write_text(json.dumps(user))
    config = _config(tmp_path, toy)
    assert toy.detect() == str(settings.parent)
    lines = toy.install(InstallContext(config))
    assert lines == [f"installed paxm hooks in {settings}"]
    data = json.loads(settings.read_text())
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert json.loads(settings.with_name("settings.json.paxm.bak").read_text()) == user
    command = hook_command_line(config.path, "toy", "Prompt")
    assert data["hooks"]["Prompt"][1] == {
        "hooks": [{"type": "command", "name": "paxm-Prompt", "command": command, "timeout": 7}]
    }
    assert list(data["hooks"]) == ["Prompt", "Other", "Begin", "Done"]  # tool use is off by default
    assert [f.level for f in toy.check(InstallContext(config))] == ["ok"]
    assert toy.install(InstallContext(config)) == [f"paxm hooks in {settings} are up to date"]
    assert toy.uninstall(InstallContext(config)) == [f"removed paxm hooks from {settings}"]
    assert json.loads(settings.read_text()) == user  # the user's empty "Other" list included
    assert toy.check(InstallContext(config))[0].level == "warn"


def test_update_writes_only_on_a_change_and_never_creates_an_empty_file(tmp_path: Path, home: Path) -> None:
    toy = SettingsHooksIntegration(TOY)
    config = _config(tmp_path, toy)
    settings = home / ".toy" / "settings.json"
    assert toy.update_hooks(config, None) is False and not settings.exists()  # uninstall, no file
    wanted = toy.wanted_hooks(config)
    assert toy.update_hooks(config, wanted) is True
    written = settings.stat().st_mtime_ns
    assert toy.update_hooks(config, wanted) is False and settings.stat().st_mtime_ns == written  # in place
    assert toy.update_hooks(config, None) is True and json.loads(settings.read_text()) == {}


def test_decode_and_output_follow_the_spec() -> None:
    toy = SettingsHooksIntegration(TOY)
    raw = json.dumps({"hook_event_name": "Done", "reply": " bye ", "session_id": "s"}).encode()
    event = toy.decode("", raw)
    assert (event.event, event.native_event, event.assistant) == (EVENT_TURN_END, "Done", "bye")
    assert toy.decode("prompt", b'{"prompt": "hi"}').event == EVENT_USER_INPUT
    result = HookResult(target="toy", event=EVENT_USER_INPUT, recall_context="a &lt;/paxm-recall&gt; b")
    shown = json.loads(toy.hook_output(result, "text"))["hookSpecificOutput"]
    assert shown == {"hookEventName": "Prompt", "additionalContext": "a &amp;lt;/paxm-recall&gt; b"}
    assert toy.hook_output(HookResult(target="toy", event=EVENT_TURN_END, recall_context="x"), "text") == ""
    plain = SettingsHooksIntegration(SettingsHooksSpec(**{**TOY.__dict__, "output": "text", "html_escaped": False}))
    assert plain.hook_output(result, "text") == "a &lt;/paxm-recall&gt; b"
    assert json.loads(plain.hook_output(result, "json"))["hookSpecificOutput"]["hookEventName"] == "Prompt"


def test_an_own_hooks_file_of_flat_handlers_goes_when_empty(tmp_path: Path, home: Path) -> None:
    spec = SettingsHooksSpec(
        **{
            **TOY.__dict__,
            "layout": "json-handlers",
            "version": 1,
            "handler": {"type": "command", "bash": "{command}", "timeoutSec": 3},
            "location": Location("PAXM_TOY_SETTINGS", home_var="TOY_HOME", home=".toy", file="hooks/paxm.json"),
        }
    )
    toy = SettingsHooksIntegration(spec)
    config = _config(tmp_path, toy)
    toy.install(InstallContext(config))
    path = home / ".toy" / "hooks" / "paxm.json"
    data = json.loads(path.read_text())
    assert list(data) == ["version", "hooks"] and data["version"] == 1
    assert data["hooks"]["Begin"] == [
        {"type": "command", "bash": hook_command_line(config.path, "toy", "Begin"), "timeoutSec": 3}
    ]
    assert not path.with_name("paxm.json.paxm.bak").exists()  # paxm's own file: no backup
    assert toy.uninstall(InstallContext(config)) and not path.exists()


def test_toml_tables_keep_the_users_text_and_drop_an_older_block(tmp_path: Path, home: Path) -> None:
    pytest.importorskip("tomlkit")
    spec = SettingsHooksSpec(
        **{
            **TOY.__dict__,
            "layout": "toml-tables",
            "handler": {"event": "{native}", "command": "{command}", "timeout": 5},
            "location": Location("PAXM_TOY_SETTINGS", home_var="TOY_HOME", home=".toy", file="config.toml"),
            "legacy_block": ("# >>> old >>>", "# <<< old <<<"),
        }
    )
    toy = SettingsHooksIntegration(spec)
    config = _config(tmp_path, toy)
    path = home / ".toy" / "config.toml"
    path.parent.mkdir()
    user = 'model = "m"  # mine\n'
    path.write_text(user + '# >>> old >>>\n[[hooks]]\nevent = "Done"\ncommand = "old"\n# <<< old <<<\n')
    toy.install(InstallContext(config))
    text = path.read_text()
    assert text.startswith(user) and "old" not in text.replace("# mine", "")
    tables = tomllib.loads(text)["hooks"]
    assert [t["event"] for t in tables] == ["Begin", "Prompt", "Done"]
    assert tables[1] == {"event": "Prompt", "command": hook_command_line(config.path, "toy", "Prompt"), "timeout": 5}
    assert [f.level for f in toy.check(InstallContext(config))] == ["ok"]
    toy.uninstall(InstallContext(config))
    assert path.read_text() == user


OURS = "/py -I -S /p/paxm_core/passive/client.py --config /c/config.yaml --target toy --event Prompt"


def _ours(command: str) -> bool:
    return is_paxm_or_upstream_hook(command, "/c/config.yaml", "toy")


def test_refresh_updates_a_current_handler_in_place() -> None:
    old = {"type": "command", "command": OURS, "timeout": 60}
    settings: dict[str, Any] = {"hooks": {"Prompt": [{"hooks": [old]}, {"hooks": [{"command": "mine"}]}]}}
    want = {"hooks": [{"type": "command", "command": OURS, "timeout": 10}]}
    refreshed = merge_hook_groups(settings, {"Prompt": want}, _ours, refresh=("timeout",))
    assert refreshed["hooks"]["Prompt"] == [want, {"hooks": [{"command": "mine"}]}]  # first place kept
    replaced = merge_hook_groups(settings, {"Prompt": want}, _ours)
    assert replaced["hooks"]["Prompt"] == [{"hooks": [{"command": "mine"}]}, want]  # without: a new group
    assert merge_hook_groups(refreshed, {"Prompt": want}, _ours, refresh=("timeout",)) == refreshed


def test_upstream_shims_are_paxms_and_other_configs_are_not() -> None:
    assert _ours(OURS)
    assert _ours("'/c/hooks/toy-turn_end'")
    assert not _ours(OURS.replace("--target toy", "--target other"))
    assert not _ours(OURS.replace("/c/config.yaml", "/d/config.yaml"))
    assert not _ours("/c/hooks/other-turn_end")
