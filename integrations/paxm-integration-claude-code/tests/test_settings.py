"""settings.json merge/unmerge: golden files, file safety, path resolution and fuzzing.

Golden cases live in ``golden/<case>/``: ``before.json`` (absent = no settings file yet),
``installed.json`` (exact text paxm writes) and, when uninstalling does not give ``before``
back (a previous paxm install is cleaned up too), ``uninstalled.json``.  Machine-specific
paths are written as ``{PYTHON}``, ``{CLIENT}``, ``{CONFIG}``, ``{CONFIGDIR}``.  Regenerate
with ``PAXM_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.api.errors import IntegrationError
from paxm_core.config.defaults import default_config
from paxm_core.integration import InstallContext, client_path, interpreter_path
from paxm_core.json_settings import merge_hook_groups
from paxm_core.passive.client_command import FAIL_OPEN_GUARD
from paxm_integration_claude_code import ClaudeCodeIntegration
from paxm_integration_claude_code.integration import SPEC, is_paxm_command

GOLDEN = Path(__file__).with_name("golden")
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def _config(tmp_path: Path) -> Any:
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents["claude"].enabled = True
    return config


def _placeholders(config: Any) -> list[tuple[str, str]]:
    return [
        ("{CLIENT}", str(client_path())),
        ("{PYTHON}", interpreter_path()),
        ("{CONFIG}", str(Path(config.path).absolute())),
        ("{CONFIGDIR}", str(Path(config.path).absolute().parent)),
    ]


def _fill(text: str, config: Any) -> str:
    for key, value in _placeholders(config):
        text = text.replace(key, value)
    return text


def _unfill(text: str, config: Any) -> str:
    for key, value in _placeholders(config):
        text = text.replace(value, key)
    return text


def _quiet(_line: str) -> None:
    pass


@pytest.fixture
def settings_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "claude" / "settings.json"
    monkeypatch.setenv("PAXM_CLAUDE_SETTINGS", str(path))
    return path


@pytest.mark.parametrize("case", CASES)
def test_golden_install_uninstall(case: str, tmp_path: Path, settings_file: Path) -> None:
    config = _config(tmp_path)
    integration = ClaudeCodeIntegration()
    folder = GOLDEN / case
    before_text = _fill((folder / "before.json").read_text(), config) if (folder / "before.json").exists() else None
    if before_text is not None:
        settings_file.parent.mkdir(parents=True)
        settings_file.write_text(before_text)

    hooks_dir = Path(config.path).parent / "hooks"
    hooks_dir.mkdir(parents=True)
    shim = hooks_dir / "claude-turn_end"  # what the Go paxm left behind
    shim.write_text(
        f"#!/bin/sh\n'/usr/local/bin/paxm' --config '{config.path}' __hook --target 'claude'"
        " --event 'turn_end' || exit 0\n"
    )
    unrelated = hooks_dir / "claude-notes.txt"
    unrelated.write_text("mine")
    integration.install(InstallContext(config, owner="paxm", echo=_quiet))
    assert not shim.exists() and unrelated.exists()
    installed = settings_file.read_text()
    if os.environ.get("PAXM_UPDATE_GOLDEN"):
        (folder / "installed.json").write_text(_unfill(installed, config))
    assert _unfill(installed, config) == (folder / "installed.json").read_text()
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600
    backup = settings_file.with_name("settings.json.paxm.bak")
    if before_text is None:
        assert not backup.exists()
    else:
        assert backup.read_text() == before_text  # byte-for-byte original
        assert stat.S_IMODE(backup.stat().st_mode) == 0o600

    integration.install(InstallContext(config, owner="paxm", echo=_quiet))  # idempotent: nothing rewritten
    assert settings_file.read_text() == installed

    integration.uninstall(InstallContext(config, echo=_quiet))
    after = json.loads(settings_file.read_text())
    expected_file = folder / "uninstalled.json"
    if os.environ.get("PAXM_UPDATE_GOLDEN") and case == "previous-paxm":
        expected_file.write_text(_unfill(settings_file.read_text(), config))
    if expected_file.exists():
        assert after == json.loads(_fill(expected_file.read_text(), config))
    elif before_text is None:
        assert after == {}
    else:
        assert after == json.loads(before_text)  # semantically unchanged
    text = settings_file.read_text()
    integration.uninstall(InstallContext(config, echo=_quiet))
    assert settings_file.read_text() == text
    if before_text is not None:
        assert backup.read_text() == before_text  # the backup is never replaced


def test_installed_commands_call_the_client_by_absolute_interpreter(tmp_path: Path, settings_file: Path) -> None:
    config = _config(tmp_path)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    hooks = json.loads(settings_file.read_text())["hooks"]
    assert list(hooks) == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
    ]
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    for event, groups in hooks.items():
        (handler,) = groups[0]["hooks"]
        # the fail-open guard first (exit 0, no output when paxm is gone), then the client argv
        argv = shlex.split(handler["command"])
        guard, words = argv[:4], argv[4:]
        assert guard == ["/bin/sh", "-c", FAIL_OPEN_GUARD, "paxm-hook"]
        assert words[:4] == [interpreter_path(), "-I", "-S", str(client_path())]
        assert Path(words[0]).is_absolute() and Path(words[3]).is_absolute()
        assert words[4:] == ["--config", str(config.path), "--target", "claude", "--event", event]
        assert handler["timeout"] == 10


def test_disabled_hooks_are_not_installed_and_stale_ones_go(tmp_path: Path, settings_file: Path) -> None:
    config = _config(tmp_path)
    integration = ClaudeCodeIntegration()
    integration.install(InstallContext(config, owner="paxm", echo=_quiet))
    config.agents["claude"].hooks["tool_use"].write.enabled = False
    config.agents["claude"].hooks["tool_failure"].write.enabled = False
    config.agents["claude"].hooks["pre_tool"].recall.enabled = False
    config.capture_queue.path = str(tmp_path / "elsewhere" / "queue.sqlite")
    integration.install(InstallContext(config, owner="paxm", echo=_quiet))
    hooks = json.loads(settings_file.read_text())["hooks"]
    assert list(hooks) == ["SessionStart", "UserPromptSubmit", "Stop"]
    for groups in hooks.values():
        assert len(groups) == 1 and len(groups[0]["hooks"]) == 1  # replaced, not duplicated
        assert groups[0]["hooks"][0]["command"].endswith(f"--queue {tmp_path / 'elsewhere' / 'queue.sqlite'}")


def test_session_start_is_installed_even_with_nothing_enabled(tmp_path: Path, settings_file: Path) -> None:
    config = _config(tmp_path)
    for hook in config.agents["claude"].hooks.values():
        hook.write.enabled = False
        hook.recall.enabled = False
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    assert list(json.loads(settings_file.read_text())["hooks"]) == ["SessionStart"]


@pytest.mark.parametrize(
    "content",
    ['{"hooks": {"Stop": [}', "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {"hooks": []}}}'],
)
def test_unusable_settings_are_never_rewritten(content: str, tmp_path: Path, settings_file: Path) -> None:
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text(content)
    with pytest.raises(IntegrationError, match="paxm changed nothing"):
        ClaudeCodeIntegration().preflight(InstallContext(_config(tmp_path)))
    with pytest.raises(IntegrationError, match="paxm changed nothing"):
        ClaudeCodeIntegration().install(InstallContext(_config(tmp_path), owner="paxm", echo=_quiet))
    assert settings_file.read_text() == content
    assert not settings_file.with_name("settings.json.paxm.bak").exists()


def test_empty_settings_file_is_treated_as_empty(tmp_path: Path, settings_file: Path) -> None:
    settings_file.parent.mkdir(parents=True)
    settings_file.write_text("  \n")
    ClaudeCodeIntegration().install(InstallContext(_config(tmp_path), owner="paxm", echo=_quiet))
    assert len(json.loads(settings_file.read_text())["hooks"]) == 6
    assert not settings_file.with_name("settings.json.paxm.bak").exists()  # nothing worth keeping


def test_settings_with_a_byte_order_mark(tmp_path: Path, settings_file: Path) -> None:
    settings_file.parent.mkdir(parents=True)
    settings_file.write_bytes(b'\xef\xbb\xbf{"model": "opus"}')
    config = _config(tmp_path)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    assert json.loads(settings_file.read_text())["model"] == "opus"
    ClaudeCodeIntegration().uninstall(InstallContext(config, echo=_quiet))
    assert json.loads(settings_file.read_text()) == {"model": "opus"}


def test_symlinked_settings_are_updated_at_their_target(tmp_path: Path, settings_file: Path) -> None:
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}')
    settings_file.parent.mkdir(parents=True)
    settings_file.symlink_to(real)
    config = _config(tmp_path)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    assert settings_file.is_symlink()
    assert "hooks" in json.loads(real.read_text())
    ClaudeCodeIntegration().uninstall(InstallContext(config, echo=_quiet))
    assert json.loads(real.read_text()) == {"model": "opus"} and settings_file.is_symlink()


def test_uninstall_without_a_settings_file_creates_none(tmp_path: Path, settings_file: Path) -> None:
    ClaudeCodeIntegration().uninstall(InstallContext(_config(tmp_path), echo=_quiet))
    assert not settings_file.exists()


def test_settings_path_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAXM_CLAUDE_SETTINGS", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    assert ClaudeCodeIntegration().hooks_path() == Path.home() / ".claude" / "settings.json"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert ClaudeCodeIntegration().hooks_path() == tmp_path / "cc" / "settings.json"
    monkeypatch.setenv("PAXM_CLAUDE_SETTINGS", str(tmp_path / "s.json"))
    assert ClaudeCodeIntegration().hooks_path() == tmp_path / "s.json"


def test_is_paxm_command(tmp_path: Path) -> None:
    config = tmp_path / "paxm" / "config.yaml"
    client = "/venv/lib/python3.11/site-packages/paxm_core/passive/client.py"
    assert is_paxm_command(f"/venv/bin/python -I -S {client} --config {config} --target claude --event Stop", config)
    assert is_paxm_command(f"'/my venv/python' -I -S '{client}' --config='{config}' --target claude", config)
    assert is_paxm_command(f"'{config.parent}/hooks/claude-turn_end'", config)  # upstream's shim
    assert not is_paxm_command(f"python {client} --config {tmp_path / 'other.yaml'} --target claude", config)
    assert not is_paxm_command(f"python {client} --config {config} --target codex --event Stop", config)
    assert not is_paxm_command(f"python /x/client.py --config {config} --target claude", config)
    assert not is_paxm_command("echo 'unbalanced", config)
    assert not is_paxm_command(f"echo {config}", config)


# --------------------------------------------------------------------------- fuzzing

_CONFIG = "/cfg/paxm/config.yaml"
_CLIENT = "/p/paxm_core/passive/client.py"
_OURS = partial(is_paxm_command, config_path=_CONFIG)
_EVENTS = st.sampled_from(["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreToolUse", "Notification"])
_FOREIGN = st.text(min_size=1, max_size=30).filter(lambda c: not _OURS(c))
_HANDLER = st.fixed_dictionaries(
    {"type": st.just("command"), "command": _FOREIGN},
    optional={"timeout": st.integers(1, 600)},
)
_GROUP = st.fixed_dictionaries(
    {"hooks": st.lists(_HANDLER, max_size=3)}, optional={"matcher": st.sampled_from(["", "Bash", "Edit|Write", "*"])}
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "hooks": st.dictionaries(_EVENTS, st.lists(_GROUP, max_size=3), max_size=4),
        "model": st.text(max_size=10),
        "extra": _JSON,
    },
)
_WANTED: dict[str, Any] = {
    native: {
        **({"matcher": "startup"} if native == "SessionStart" else {}),
        "hooks": [
            {
                "type": "command",
                "command": f"/py -I -S {_CLIENT} --config {_CONFIG} --target claude --event {native}",
                "timeout": 10,
            }
        ],
    }
    for native in ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop")
}


def merge_hooks(settings: dict[str, Any], wanted: dict[str, Any], is_ours: Any) -> dict[str, Any]:
    """The merge Claude's spec asks of the engine (a handler with the wanted command keeps its place)."""
    return merge_hook_groups(settings, wanted, is_ours, refresh=SPEC.refresh)


def remove_hooks(settings: dict[str, Any], is_ours: Any) -> dict[str, Any]:
    return merge_hook_groups(settings, {}, is_ours, refresh=SPEC.refresh)


def _paxm_handlers(settings: dict[str, Any]) -> list[str]:
    return [
        h["command"]
        for groups in (settings.get("hooks") or {}).values()
        for g in groups
        for h in g.get("hooks", [])
        if _OURS(h.get("command", ""))
    ]


def _semantic(settings: dict[str, Any]) -> dict[str, Any]:
    # an event with no groups and an empty hooks object mean the same as their absence
    out = dict(settings)
    hooks = out.get("hooks")
    if isinstance(hooks, dict):
        hooks = {event: groups for event, groups in hooks.items() if groups}
        if hooks:
            out["hooks"] = hooks
        else:
            out.pop("hooks")
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SETTINGS)
def test_merge_then_remove_gives_the_original_back(original: dict[str, Any]) -> None:
    snapshot = json.loads(json.dumps(original))
    merged = merge_hooks(original, _WANTED, _OURS)
    assert original == snapshot  # inputs are never modified
    assert sorted(_paxm_handlers(merged)) == sorted(w["hooks"][0]["command"] for w in _WANTED.values())
    assert merge_hooks(merged, _WANTED, _OURS) == merged  # idempotent
    assert _semantic(remove_hooks(merged, _OURS)) == _semantic(original)
    assert remove_hooks(original, _OURS) == original


#: the ``-c`` script of the shell form earlier versions installed (it sourced ``client.sh``)
RETIRED_SHELL_GUARD = '[ -f "$1" ] || exit 0; . "$1"; exit 0'


def _retired_shell_form(command: str) -> str:
    """``command`` as an earlier version's shell form: ``<bash> -c <guard> paxm-hook <client.sh> <python argv>``."""
    words = shlex.split(command)[4:]
    retired_client = str(Path(words[3]).with_name("client.sh"))  # where it lived; it no longer ships
    return shlex.join(["/bin/bash", "-c", RETIRED_SHELL_GUARD, "paxm-hook", retired_client, *words])


def _retire_all(settings_file: Path) -> None:
    data = json.loads(settings_file.read_text())
    for groups in data["hooks"].values():
        for group in groups:
            for handler in group["hooks"]:
                handler["command"] = _retired_shell_form(handler["command"])
    settings_file.write_text(json.dumps(data))


def test_setup_rewrites_hooks_installed_in_the_retired_shell_form(tmp_path: Path, settings_file: Path) -> None:
    config = _config(tmp_path)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    expected = json.loads(settings_file.read_text())
    _retire_all(settings_file)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    # each retired handler was recognised as paxm's and replaced (not duplicated) by the /bin/sh form
    assert json.loads(settings_file.read_text()) == expected
    ClaudeCodeIntegration().uninstall(InstallContext(config, echo=_quiet))
    assert "hooks" not in json.loads(settings_file.read_text() or "{}")


def test_doctor_names_a_hook_left_in_the_retired_shell_form(tmp_path: Path, settings_file: Path) -> None:
    """After an upgrade a shell-form hook exits 0 doing nothing (``client.sh`` is gone): doctor says so."""
    config = _config(tmp_path)
    ClaudeCodeIntegration().install(InstallContext(config, owner="paxm", echo=_quiet))
    assert [f.level for f in ClaudeCodeIntegration().check(InstallContext(config, owner="paxm"))] == ["ok"]
    _retire_all(settings_file)
    findings = ClaudeCodeIntegration().check(InstallContext(config, owner="paxm"))
    assert [f.level for f in findings] == ["error"], findings
    assert "does not exist" in findings[0].message and "/client.sh" in findings[0].message
    assert " setup " in findings[0].fix
