"""Property: install then uninstall gives back any valid pre-existing IDE config, key order included.

Generated files hold arbitrary extra keys and values, the user's own hooks on paxm's events and
others (including empty and null arrays), and other MCP servers; a file may also not exist.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paxm_core.config.defaults import default_config
from paxm_core.integration import InstallContext
from paxm_integration_ide import CursorIntegration, KiroIntegration, TraeIntegration, ZCodeIntegration
from paxm_integration_ide.base import IdeIntegration

MISSING = object()

names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8)
leaf = st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=12)
json_values = st.recursive(
    leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3), max_leaves=6
)
commands = st.sampled_from(["./audit.sh", "~/bin/guard", "say done", "", "python3 -c 'print(1)'"]) | st.text(
    max_size=20
)


def _extras(exclude: set[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(names.filter(lambda k: k not in exclude), json_values, max_size=3)


def _events(natives: list[str], entry: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from(natives) | names
    return st.dictionaries(keys, st.none() | st.lists(entry, max_size=3), max_size=4)


flat_entry = st.fixed_dictionaries({"command": commands}, optional={"timeout": st.integers(1, 600), "x": json_values})
handler = st.fixed_dictionaries(
    {"type": st.just("command"), "command": commands}, optional={"timeout": st.integers(1, 60)}
)
group = st.fixed_dictionaries({"hooks": st.lists(handler, max_size=2)}, optional={"matcher": st.text(max_size=10)})
server = st.fixed_dictionaries(
    {"command": st.text(max_size=10)},
    optional={
        "args": st.lists(st.text(max_size=6), max_size=3),
        "env": st.dictionaries(names, st.text(max_size=5), max_size=2),
    },
)
servers = st.dictionaries(names.filter(lambda n: n != "paxm"), server, max_size=3)


@st.composite
def _with(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]], extras: set[str]) -> Any:
    """A file's object (base keys plus extras, in any order), or MISSING (no file) one time in six."""
    if draw(st.integers(0, 5)) == 0:
        return MISSING
    data = {**draw(_extras(extras)), **draw(base)}
    return dict(draw(st.permutations(list(data.items()))))


def _optional(**parts: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=parts)


CURSOR_EVENTS = ["sessionStart", "beforeSubmitPrompt", "afterAgentResponse", "stop"]
CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreToolUse"]
cursor_hooks = _with(
    _optional(version=st.sampled_from([1, 2]), hooks=st.none() | _events(CURSOR_EVENTS, flat_entry)),
    {"version", "hooks"},
)
claude_hooks = _with(
    _optional(version=st.just(1), hooks=st.none() | _events(CLAUDE_EVENTS, group)),
    {"version", "hooks"},
)
mcp_file = _with(_optional(mcpServers=st.none() | servers), {"mcpServers"})
zcode_hooks = _optional(enabled=st.just(True), events=st.none() | _events(CLAUDE_EVENTS[:3], group))
zcode_file = _with(
    _optional(hooks=st.none() | zcode_hooks, mcp=st.none() | _optional(servers=st.none() | servers)),
    {"hooks", "mcp"},
)


@contextmanager
def _sandbox(variables: dict[str, str]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        saved = {k: os.environ.get(k) for k in variables}
        os.environ.update({k: str(root / v) for k, v in variables.items()})
        try:
            yield root
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _roundtrip(integration: IdeIntegration, files: dict[str, Any], variables: dict[str, str]) -> None:
    with _sandbox(variables) as root:
        config = default_config(root / "paxm" / "config.yaml")
        config.agents[integration.name].enabled = True
        ctx = InstallContext(config=config)
        for variable, data in files.items():
            if data is not MISSING:
                path = Path(os.environ[variable])
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(data, ensure_ascii=False, indent=2))
        integration.install(ctx)
        integration.install(ctx)
        integration.uninstall(ctx)
        for variable, data in files.items():
            path = Path(os.environ[variable])
            if data is MISSING:
                assert not path.exists(), f"uninstall left {path.name}: {path.read_text()}"
            else:
                got = json.loads(path.read_text())
                assert json.dumps(got, ensure_ascii=False) == json.dumps(data, ensure_ascii=False)


SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(hooks=cursor_hooks, mcp=mcp_file)
def test_cursor_roundtrip(hooks: Any, mcp: Any) -> None:
    files = {"PAXM_CURSOR_HOOKS": hooks, "PAXM_CURSOR_MCP": mcp}
    _roundtrip(CursorIntegration(), files, {"PAXM_CURSOR_HOOKS": "c/hooks.json", "PAXM_CURSOR_MCP": "c/mcp.json"})


@SETTINGS
@given(hooks=claude_hooks, mcp=mcp_file)
def test_trae_roundtrip(hooks: Any, mcp: Any) -> None:
    files = {"PAXM_TRAE_HOOKS": hooks, "PAXM_TRAE_MCP": mcp}
    _roundtrip(TraeIntegration(), files, {"PAXM_TRAE_HOOKS": "t/hooks.json", "PAXM_TRAE_MCP": "Trae/User/mcp.json"})


@SETTINGS
@given(mcp=mcp_file)
def test_kiro_roundtrip(mcp: Any) -> None:
    variables = {"PAXM_KIRO_AGENT": "k/agents/paxm.json", "PAXM_KIRO_MCP": "k/settings/mcp.json"}
    _roundtrip(KiroIntegration(), {"PAXM_KIRO_AGENT": MISSING, "PAXM_KIRO_MCP": mcp}, variables)


@SETTINGS
@given(config=zcode_file)
def test_zcode_roundtrip(config: Any) -> None:
    _roundtrip(ZCodeIntegration(), {"PAXM_ZCODE_CONFIG": config}, {"PAXM_ZCODE_CONFIG": "z/cli/config.json"})


@pytest.mark.parametrize("integration", [CursorIntegration(), TraeIntegration(), ZCodeIntegration()])
def test_an_empty_file_stays_a_file(
    integration: IdeIntegration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's empty (0-byte) file: install fills it, uninstall leaves ``{}``, never deletes it."""
    config = default_config(tmp_path / "paxm" / "config.yaml")
    config.agents[integration.name].enabled = True
    files = integration.native_files(config)
    files[0].path.parent.mkdir(parents=True, exist_ok=True)
    files[0].path.write_text("")
    integration.install(InstallContext(config=config))
    integration.uninstall(InstallContext(config=config))
    assert json.loads(files[0].path.read_text()) == {}
