"""The ``pi`` integration object: agent-dir resolution, install, doctor, decode, output."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from paxm_core.generated_file import GeneratedFile, GeneratedFileIntegration
from paxm_core.integration import (
    EVENT_SESSION_START,
    EVENT_TURN_END,
    EVENT_USER_INPUT,
    NativeEvents,
    PastTurn,
)
from paxm_integration_pi import extension, transcripts

__all__ = ["PiIntegration"]


class PiIntegration(GeneratedFileIntegration):
    """Pi coding agent: a generated extension ``<agent dir>/extensions/paxm-hook/index.ts``."""

    name = "pi"
    aliases: tuple[str, ...] = ("pi-coding-agent", "pi-agent")
    display_name = "Pi"
    label = "Pi"
    setup_priority = 30
    artifact = "extension"
    #: ``message_end`` and ``tool_execution_*`` only fill the extension's buffer: the run reaches
    #: paxm at ``agent_end`` (or ``session_shutdown``), tool calls and results as part of the turn
    native_events = NativeEvents(
        (
            (EVENT_SESSION_START, "session_start"),
            (EVENT_USER_INPUT, "before_agent_start"),
            (EVENT_TURN_END, "agent_end"),
        )
    )
    executable = "pi"
    #: ``extensions/paxm-hook/`` is paxm's: uninstall removes it when it is left empty
    remove_empty_parent = True

    def agent_dir(self) -> Path:
        """Pi's agent dir (``$PAXM_PI_AGENT_DIR`` > ``$PI_CODING_AGENT_DIR`` > ``~/.pi/agent``)."""
        return transcripts.agent_dir()

    def transcript_files(self) -> list[Path]:
        """Every stored Pi session file (``<agent dir>/sessions/**/*.jsonl``)."""
        return transcripts.transcript_files()

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one session file (see :mod:`.transcripts`)."""
        return transcripts.read_turns(path)

    def generated_file(self) -> GeneratedFile:
        """The extension's format (``extension_template.ts``, its markers)."""
        return extension.extension_file()

    def generated_path(self) -> Path:
        """``<agent dir>/extensions/paxm-hook/index.ts`` (upstream's path: replaced in place)."""
        return self.agent_dir() / "extensions" / extension.EXTENSION_DIR_NAME / extension.EXTENSION_FILE_NAME

    extension_path = generated_path

    def home_dir(self) -> Path | None:
        """The agent dir (``detect`` reports it when the executable is not on PATH)."""
        return self.agent_dir()

    def normalized_event(self, native_event: str) -> str:
        """Pi's event name -> paxm's (``before_agent_start`` -> ``user_input`` ...); ``session_shutdown``
        (sent for a run that never reached ``agent_end``) is a turn end too."""
        if native_event.strip() == "session_shutdown":
            return EVENT_TURN_END
        return super().normalized_event(native_event)
