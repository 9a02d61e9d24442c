"""``IntegrationContract``: the checks every paxm harness integration must pass, as a test class to subclass.

A subclass provides the integration, decode fixtures (native event + payload -> the normalized
event) and a pre-existing native config file; the suite checks that the object implements
:class:`~paxm_core.integration.Integration`, decodes every fixture to the right event (and
never raises on garbage), prints valid native output, installs idempotently, uninstalls back
to the user's original config, and that the command it installed stays silent and exits 0
when paxm is gone.  See ``docs/writing-integrations.md``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from paxm_contracttest.sandbox import PAXM
from paxm_core.integration import (
    EVENT_SESSION_START,
    STANDARD_EVENTS,
    HookResult,
    InstallContext,
    Integration,
    client_path,
)

if TYPE_CHECKING:
    from paxm_core.config import Config

__all__ = [
    "PAXM",
    "DecodeFixture",
    "IntegrationContract",
    "NativeConfig",
    "assert_detects",
    "cli_reinstall_doctor_uninstall",
    "cli_setup",
    "cli_setup_under_home",
    "embedded_argv_commands",
    "enabled_config",
    "paxm_cli",
    "settings_hook_commands",
]


def paxm_cli(tmp_path: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``paxm --config <tmp_path>/paxm/config.yaml ARGS`` as a user would, with no stdin.

    :param env: variables added to (or overriding) the test's environment.
    """
    return subprocess.run(
        [PAXM, "--config", str(tmp_path / "paxm" / "config.yaml"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def enabled_config(tmp_path: Path, agent: str) -> Config:
    """A saved default config at ``<tmp_path>/paxm/config.yaml`` with ``agents.<agent>`` enabled, read back."""
    from paxm_core.config import load_config, save_config  # as the fixtures below: config loads on use

    path = tmp_path / "paxm" / "config.yaml"
    config = load_config(path)
    config.agents[agent].enabled = True
    save_config(config, path)
    return load_config(path)


def cli_setup(tmp_path: Path, agent: str, hooks: Path, *, user: Any = None) -> Any:
    """``paxm setup --yes --agent AGENT --provider sqlite`` installs paxm hooks in the JSON file
    ``hooks`` (mode 0600, reported); returns the file's parsed content.

    :param user: settings the user had in ``hooks`` before setup (written first); setup keeps a
        byte-for-byte backup of them beside it (``<name>.paxm.bak``).
    """
    if user is not None:
        original = json.dumps(user, indent=2) + "\n"
        hooks.parent.mkdir(parents=True)
        hooks.write_text(original)
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", agent, "--provider", "sqlite")
    assert done.returncode == 0, done.stderr
    assert f"installed paxm hooks in {hooks}" in done.stdout
    assert stat.S_IMODE(hooks.stat().st_mode) == 0o600
    if user is not None:
        assert hooks.with_name(f"{hooks.name}.paxm.bak").read_text() == original
    return json.loads(hooks.read_text())


def cli_setup_under_home(tmp_path: Path, agent: str, home: Mapping[str, str], hooks: Path, event: str) -> None:
    """``paxm setup`` with the harness's home variable set (``home``, e.g. ``{"COPILOT_HOME": ...}``)
    writes paxm's ``event`` hook into ``hooks`` there, in a 0700 directory, and creates nothing in
    the default home (``~/.<agent>``; ``~`` is the test's isolated home)."""
    done = paxm_cli(tmp_path, "setup", "--yes", "--agent", agent, "--provider", "sqlite", env=home)
    assert done.returncode == 0, done.stderr
    assert event in json.loads(hooks.read_text())["hooks"]
    assert stat.S_IMODE(hooks.parent.stat().st_mode) == 0o700
    assert not (Path.home() / f".{agent}").exists()


def cli_reinstall_doctor_uninstall(
    tmp_path: Path, hooks: Path, installed: Any, *, agent: str, alias: str, display_name: str
) -> None:
    """After :func:`cli_setup`: setup again (by ``alias``) changes nothing, ``config doctor`` reports
    the hooks installed, and ``paxm uninstall --agent AGENT`` says it removed them."""
    again = paxm_cli(tmp_path, "setup", "--yes", "--agent", alias, "--provider", "sqlite", "--force")
    assert f"paxm hooks in {hooks} are up to date" in again.stdout
    assert json.loads(hooks.read_text()) == installed
    doctor = paxm_cli(tmp_path, "config", "doctor")
    assert f"{display_name}: paxm hooks installed in {hooks}" in doctor.stdout, doctor.stdout + doctor.stderr
    done = paxm_cli(tmp_path, "uninstall", "--agent", agent, "--yes")
    assert done.returncode == 0, done.stderr
    assert f"removed paxm hooks from {hooks}" in done.stdout


def assert_detects(integration: Integration, home: Path, executable: str, tmp_path: Path) -> None:
    """``detect()`` finds nothing, then the harness's home directory, then its executable on PATH.

    The caller points ``PATH`` at ``<tmp_path>/bin`` (``monkeypatch.setenv``) before calling.
    """
    assert integration.detect() is None
    home.mkdir(parents=True)
    assert integration.detect() == str(home)
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / executable
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert integration.detect() == str(exe)


@dataclass(frozen=True)
class DecodeFixture:
    """One captured native payload and what it must decode to.

    :param native_event: what the installed hook passes as ``--event`` (``UserPromptSubmit``).
    :param payload: the raw payload, or a file holding it.
    :param event: the normalized event it must become (``user_input``).
    :param fields: ``HookEvent`` attributes that must equal the given values
        (``prompt``, ``assistant``, ``workspace``; ``metadata.session_id`` for a metadata key).
    """

    native_event: str
    payload: bytes | Path
    event: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def raw(self) -> bytes:
        return self.payload.read_bytes() if isinstance(self.payload, Path) else self.payload


@dataclass(frozen=True)
class NativeConfig:
    """The harness's own config file as the user had it before paxm.

    :param path: where the integration (as configured by the subclass's fixtures) edits it.
    :param content: what is in it before install; ``None`` when the file does not exist before (an
        integration that owns a file of its own: uninstall must then remove it).
    :param parse: turns file text into a value compared for semantic equality (JSON by default).
    :param commands: returns the hook commands paxm installed, from the file's current text.
    """

    path: Path
    content: str | None
    parse: Callable[[str], Any] = json.loads
    commands: Callable[[str], list[str]] = field(default=lambda text: [])

    def written(self) -> NativeConfig:
        """Itself, once the file is as the user had it (its directory made)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.content is not None:
            self.path.write_text(self.content)
        return self


def settings_hook_commands(data: Mapping[str, Any]) -> list[str]:
    """paxm's hook commands in Claude-shaped settings data (``hooks.<Event>[].hooks[].command``,
    JSON or TOML parsed), for :attr:`NativeConfig.commands`; other keys under ``hooks`` are skipped."""
    hooks = data.get("hooks")
    found = [
        str(handler.get("command", ""))
        for groups in (hooks.values() if isinstance(hooks, Mapping) else ())
        if isinstance(groups, list)
        for group in groups
        for handler in group.get("hooks", [])
    ]
    return [command for command in found if "client.py" in command]


#: a JSON array of strings, as a generated plugin file embeds each hook's argv
_ARGV = re.compile(r'\[\s*"(?:[^"\\]|\\.)*"(?:\s*,\s*"(?:[^"\\]|\\.)*")*\s*\]')


def embedded_argv_commands(text: str) -> list[str]:
    """The hook commands a generated plugin file embeds as JSON argv arrays, as shell lines."""
    argvs = [json.loads(match.group(0)) for match in _ARGV.finditer(text)]
    return [shlex.join(argv) for argv in argvs if any(arg.endswith("client.py") for arg in argv)]


def _quiet(line: str) -> None:
    """Install/uninstall report lines are not the contract's business."""


class IntegrationContract:
    """Subclass in your integration's tests and override the three ``paxm_*`` fixtures
    (or set :attr:`agent` instead of overriding ``paxm_integration``)."""

    #: the agent name to look the integration up by through the ``paxm`` entry points, as paxm
    #: finds it (the default ``paxm_integration``)
    agent: str = ""
    #: names (the agent name, aliases, any spelling) that must each find this integration through
    #: the entry points; spelled out in the test so that losing one fails
    lookup_names: tuple[str, ...] = ()
    #: the display name the integration must have (unchecked when empty)
    display_name: str = ""
    #: the class every name must find (unchecked when ``None``)
    integration_type: type[Any] | None = None

    #: output modes whose output must be valid JSON (or empty)
    json_modes: tuple[str, ...] = ("json",)
    #: every output mode the integration answers in (``text`` and ``json`` are always asked)
    output_modes: tuple[str, ...] = ("text", "json")

    # -- what a subclass provides --------------------------------------------------------------

    @pytest.fixture
    def paxm_integration(self) -> Integration:
        if not self.agent:
            raise NotImplementedError("set agent, or override the paxm_integration fixture to return your integration")
        from paxm_core.plugins import get_plugin_manager

        found = get_plugin_manager().integration(self.agent)
        assert found is not None, f"no integration registered for {self.agent!r}: is the distribution installed?"
        return found

    @pytest.fixture
    def paxm_decode_fixtures(self) -> list[DecodeFixture]:
        raise NotImplementedError("override paxm_decode_fixtures: captured native payloads and their events")

    @pytest.fixture
    def paxm_native_config(self, tmp_path: Path) -> NativeConfig:
        raise NotImplementedError("override paxm_native_config: the harness's pre-existing config file")

    # -- shared set-up -------------------------------------------------------------------------

    @pytest.fixture
    def paxm_install_context(self, tmp_path: Path, paxm_integration: Integration) -> Iterator[InstallContext]:
        """A saved paxm config (under ``tmp_path``) with the integration's agent enabled."""
        from paxm_core.config import save_config
        from paxm_core.config.codec import decode
        from paxm_core.config.defaults import default_config
        from paxm_core.config.model import AgentConfig

        path = tmp_path / "paxm" / "config.yaml"
        config = default_config(path)
        name = paxm_integration.name
        if name not in config.agents:
            config.agents[name] = decode(AgentConfig, dict(paxm_integration.default_agent_config()), f"agents.{name}")
        config.agents[name].enabled = True
        save_config(config, path)
        config.path = path
        yield InstallContext(config=config, echo=_quiet)

    # -- the checks ----------------------------------------------------------------------------

    def test_contract_implements_integration(self, paxm_integration: Integration) -> None:
        assert isinstance(paxm_integration, Integration), "implement paxm_core.integration.Integration"
        assert paxm_integration.name.strip(), "name must be the agents.<name> key"
        assert paxm_integration.name == paxm_integration.name.strip().lower()
        for attr in ("display_name", "label"):
            assert isinstance(getattr(paxm_integration, attr), str)
        assert all(isinstance(a, str) and a for a in paxm_integration.aliases)
        assert all(isinstance(o, str) and o and o != "paxm" for o in paxm_integration.owners)
        assert isinstance(dict(paxm_integration.default_agent_config()), dict)

    def test_contract_registered_under_its_names(self, paxm_integration: Integration) -> None:
        from paxm_core.plugins import get_plugin_manager

        for name in self.lookup_names:
            found = get_plugin_manager().integration(name)
            assert found is not None, f"no integration registered under {name!r}"
            assert type(found) is type(paxm_integration) and found.name == paxm_integration.name, name
            assert self.integration_type is None or isinstance(found, self.integration_type), name
        if self.display_name:
            assert paxm_integration.display_name == self.display_name

    def test_contract_decode_fixtures(
        self, paxm_integration: Integration, paxm_decode_fixtures: list[DecodeFixture]
    ) -> None:
        assert paxm_decode_fixtures, "give at least one decode fixture per native event you install"
        for fixture in paxm_decode_fixtures:
            event = paxm_integration.decode(fixture.native_event, fixture.raw())
            where = f"decode({fixture.native_event!r}, ...)"
            assert event.event == fixture.event, f"{where}: event {event.event!r}, expected {fixture.event!r}"
            assert event.target == paxm_integration.name, f"{where}: target must be the integration's name"
            for key, want in fixture.fields.items():
                if key.startswith("metadata."):
                    got = event.metadata.get(key.split(".", 1)[1], "")
                else:
                    got = getattr(event, key)
                assert got == want, f"{where}: {key} is {got!r}, expected {want!r}"

    def test_contract_decode_never_raises(
        self, paxm_integration: Integration, paxm_decode_fixtures: list[DecodeFixture]
    ) -> None:
        natives = {f.native_event for f in paxm_decode_fixtures} | {""}
        for native in sorted(natives):
            for raw in (b"", b"{", b"[1]", b"\xff\xfe", b'{"prompt": 5}', b"{" * 3000):
                event = paxm_integration.decode(native, raw)
                assert event.target == paxm_integration.name

    def test_contract_hook_output_is_valid(self, paxm_integration: Integration) -> None:
        modes = dict.fromkeys(("text", "json", *self.output_modes))
        for event in STANDARD_EVENTS:
            full = HookResult(
                target=paxm_integration.name,
                event=event,
                session_context="<paxm-session-identity/>" if event == EVENT_SESSION_START else "",
                recall_context='<paxm-recall version="1" mode="passive">m</paxm-recall>',
                bootstrap_context="<b/>",
            )
            ignored = HookResult(target=paxm_integration.name, event=event, ignored=True, recall_context="<x/>")
            for mode in modes:
                out = paxm_integration.hook_output(full, mode)
                assert isinstance(out, str), f"hook_output({event}, {mode!r}) must return str"
                if mode in self.json_modes and out:
                    json.loads(out)  # raises with the position of the problem
                assert paxm_integration.hook_output(ignored, mode) == "", f"an ignored {event} prints nothing"

    def test_contract_install_is_idempotent_and_uninstall_restores(
        self, paxm_integration: Integration, paxm_native_config: NativeConfig, paxm_install_context: InstallContext
    ) -> None:
        native = paxm_native_config.written()
        original = None if native.content is None else native.parse(native.content)
        paxm_integration.preflight(paxm_install_context)
        paxm_integration.install(paxm_install_context)
        assert native.path.exists(), f"install wrote nothing at {native.path}"
        first = native.path.read_text()
        assert native.parse(first) != original, "install changed nothing in the native config"
        paxm_integration.install(paxm_install_context)
        assert native.path.read_text() == first, "installing twice must leave the file as the first install did"
        for _ in range(2):  # uninstalling twice is harmless
            paxm_integration.uninstall(paxm_install_context)
            if native.content is None:
                assert not native.path.exists(), f"uninstall must remove the file paxm created: {native.path}"
            else:
                assert native.parse(native.path.read_text()) == original, "uninstall must restore the user's config"

    def test_contract_installed_command_fails_open(
        self,
        paxm_integration: Integration,
        paxm_native_config: NativeConfig,
        paxm_install_context: InstallContext,
        tmp_path: Path,
    ) -> None:
        """Each installed command, with paxm's hook client gone, exits 0 and prints nothing."""
        native = paxm_native_config.written()
        paxm_integration.install(paxm_install_context)
        commands = native.commands(native.path.read_text())
        assert commands, "paxm_native_config.commands found no installed hook command"
        gone = str(tmp_path / "uninstalled" / "paxm_core" / "client.py")
        for command in commands:
            assert str(client_path()) in command, f"installed command does not run paxm's hook client: {command}"
            broken = command.replace(shlex.quote(str(client_path())), shlex.quote(gone))
            broken = broken.replace(str(client_path()), gone)
            done = subprocess.run(
                broken,
                shell=True,
                input=b'{"prompt": "hello"}',
                capture_output=True,
                timeout=30,
                env={**os.environ, "HOME": str(tmp_path)},
            )
            assert done.returncode == 0, f"exit {done.returncode} with paxm gone: {broken}\n{done.stderr!r}"
            assert done.stdout == b"", f"printed {done.stdout!r} with paxm gone: {broken}"
