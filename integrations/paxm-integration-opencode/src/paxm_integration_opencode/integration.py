"""The ``opencode`` integration object: config-dir resolution, install, doctor, decode, output.

A harness that is a fork of OpenCode (same plugin API, its own config dir: Kilo Code ...) is a
small subclass of :class:`OpenCodeIntegration` that sets ``name``/``display_name``/``label``,
:attr:`~OpenCodeIntegration.config_dir_env`, :attr:`~OpenCodeIntegration.xdg_dir_name` and
:attr:`~OpenCodeIntegration.executable`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from paxm_core.generated_file import GeneratedFile, GeneratedFileIntegration
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TOOL_USE,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    Finding,
    NativeEvents,
    PastTurn,
    env_path,
    standard_agent_config,
)
from paxm_integration_opencode import plugin, transcripts

__all__ = ["KiloIntegration", "OpenCodeIntegration"]


class OpenCodeIntegration(GeneratedFileIntegration):
    """OpenCode: a generated plugin in ``<config dir>/plugins/``, plain-text hook output."""

    name = "opencode"
    aliases: tuple[str, ...] = ("open-code", "open_code")
    display_name = "OpenCode"
    label = "OpenCode"
    setup_priority = 40
    artifact = "plugin"
    #: OpenCode has no session-start hook: the plugin runs ``session_start`` before the first
    #: ``chat.message`` of each session, so its native name is paxm's
    native_events = NativeEvents(
        (
            (EVENT_SESSION_START, EVENT_SESSION_START),
            (EVENT_USER_INPUT, "chat.message"),
            (EVENT_TOOL_USE, "tool.execute.after"),
            (EVENT_TURN_END, "session.idle"),
        )
    )
    executable = "opencode"

    #: environment variables naming the config dir, first set wins
    config_dir_env: tuple[str, ...] = ("PAXM_OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_DIR")
    #: the config dir's name under ``$XDG_CONFIG_HOME`` (default ``~/.config``)
    xdg_dir_name = "opencode"
    #: the npm package the harness installs into its config dir when a plugin is there
    dependency_package = "@opencode-ai/plugin"
    #: environment variables naming the data dir (stored sessions), first set wins; then
    #: ``$XDG_DATA_HOME/<xdg_dir_name>``
    data_dir_env: tuple[str, ...] = transcripts.DATA_DIR_ENV

    def config_dir(self) -> Path:
        """The harness's global config dir (env override, then ``$XDG_CONFIG_HOME/<name>``)."""
        xdg = env_path("XDG_CONFIG_HOME") or Path.home() / ".config"
        return next(filter(None, map(env_path, self.config_dir_env)), None) or (xdg / self.xdg_dir_name).absolute()

    def dependency_missing(self) -> bool:
        """Whether the config dir lacks the ``@opencode-ai/plugin`` package OpenCode installs there."""
        return not (self.config_dir() / "node_modules" / self.dependency_package / "package.json").is_file()

    def dependency_fix(self) -> str:
        """The command that installs the harness's config-dir dependency once (while online)."""
        return f"cd {self.config_dir()} && npm install {self.dependency_package}@$({self.executable} --version)"

    def data_dir(self) -> Path:
        """Where the harness stores its sessions (``$XDG_DATA_HOME/<xdg_dir_name>``)."""
        return transcripts.data_dir(None, self.data_dir_env, self.xdg_dir_name)

    def transcript_files(self) -> list[Path]:
        """The session database(s) and any legacy ``storage/`` session files."""
        return transcripts.transcript_files(self.data_dir())

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one database or session file (see :mod:`.transcripts`)."""
        return transcripts.read_turns(path, self.name)

    def generated_file(self) -> GeneratedFile:
        """The plugin's format (``plugin_template.js``, its markers)."""
        return plugin.plugin_file()

    def generated_path(self) -> Path:
        """``<config dir>/plugins/paxm.js``."""
        return self.config_dir() / "plugins" / plugin.PLUGIN_FILE_NAME

    plugin_path = generated_path

    def home_dir(self) -> Path | None:
        """The config dir (``detect`` reports it when the executable is not on PATH)."""
        return self.config_dir()

    def legacy_paths(self) -> list[Path]:
        """Upstream's ``paxm.ts`` beside the plugin: setup replaces it so nothing fires twice."""
        return [self.plugin_path().with_name(plugin.LEGACY_FILE_NAME)]

    def template_replacements(self) -> Mapping[str, str]:
        """The header names this agent (a fork's uninstall command)."""
        return {"--agent opencode": f"--agent {self.name}"}

    def install_notes(self) -> list[str]:
        """Offline advice when OpenCode has not installed its config-dir package yet."""
        if not self.dependency_missing():
            return []
        return [
            f"  note: {self.display_name} installs {self.dependency_package} into {self.config_dir()} "
            "when it starts with a plugin there; offline that wait is about 70 s. On an offline machine "
            f"run once while online (or from an npm cache): {self.dependency_fix()}"
        ]

    def extra_findings(self) -> list[Finding]:
        """A warning while the config-dir package is missing (each offline start waits for it)."""
        if not self.dependency_missing():
            return []
        return [
            Finding(
                "warn",
                f"{self.display_name} has not installed {self.dependency_package} in {self.config_dir()} yet: "
                "offline, each start waits about 70 s for it",
                self.dependency_fix(),
            )
        ]


class KiloIntegration(OpenCodeIntegration):
    """Kilo Code (the ``kilo`` CLI): OpenCode's plugin API unchanged, its own config dir ``~/.config/kilo``.

    Kilo checks only the *name* of ``@kilocode/plugin`` and publishes CLI releases without a
    matching package release, so the dependency fix installs the latest.
    """

    name = "kilo"
    aliases: tuple[str, ...] = ("kilo-code", "kilocode", "kilo_code", "kilo-cli")
    display_name = "Kilo Code"
    label = "Kilo Code"
    setup_priority = 41
    config_dir_env: tuple[str, ...] = ("PAXM_KILO_CONFIG_DIR", "KILO_CONFIG_DIR")
    data_dir_env: tuple[str, ...] = ("PAXM_KILO_DATA_DIR",)
    xdg_dir_name = "kilo"
    executable = "kilo"
    dependency_package = "@kilocode/plugin"

    def default_agent_config(self) -> Mapping[str, Any]:
        """OpenCode's defaults (upstream's, which the core keeps as data): recall on prompts, capture turns."""
        return standard_agent_config(write_events=("turn_end",))

    def dependency_fix(self) -> str:
        """``npm install @kilocode/plugin`` in the config dir (any version satisfies Kilo's check)."""
        return f"cd {self.config_dir()} && npm install {self.dependency_package}"
