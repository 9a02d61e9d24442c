"""The integration contract: what the core asks of a harness integration, and what it hands it.

Everything here is data or a protocol; nothing imports the rest of paxm.  Integration authors
build on :mod:`paxm_core.integration` (the kit), which re-exports these names with the helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from paxm_core.api.events import HookEvent, HookResult
from paxm_core.api.values import value_dataclass

__all__ = ["OWNER_PAXM", "Finding", "InstallContext", "Integration", "PastTurn", "SupportsTranscripts"]


#: The owner name meaning "paxm installs and owns the hooks itself" (the default owner).
OWNER_PAXM = "paxm"


Echo = Callable[[str], None]


@value_dataclass(frozen=True, slots=True)
class InstallContext:
    """What ``preflight`` / ``install`` / ``uninstall`` get: one signature for every integration.

    :param config: the loaded (or about-to-be-saved) paxm config; ``config.path`` is absolute.
    :param owner: who owns the harness's hooks: :data:`OWNER_PAXM` or one of the integration's
        :attr:`Integration.owners` (``claude-plugin``, ``codex-plugin``...).
    :param echo: report one human-readable line (setup prints it; never pass secrets).
    """

    config: Any  # paxm_core.config.Config: the contract does not depend on the config schema
    owner: str = OWNER_PAXM
    echo: Echo = field(default=lambda line: None)


@value_dataclass(frozen=True, slots=True)
class Finding:
    """One line of ``paxm config doctor`` about an integration.

    :param level: ``ok``, ``warn`` or ``error`` (an ``error`` makes doctor exit non-zero).
    :param message: what was found, e.g. ``hooks installed in ~/.claude/settings.json``.
    :param fix: the exact command (or step) that fixes a ``warn``/``error``; empty for ``ok``.
    """

    level: Literal["ok", "warn", "error"]
    message: str
    fix: str = ""


@runtime_checkable
class Integration(Protocol):
    """Everything the core asks of a harness integration.

    Hook payload flow: the installed hook command runs paxm's hook client with ``--target
    <name> --event <native event>``; the passive runtime calls :meth:`decode` on the raw
    payload, does recall/capture, and prints :meth:`hook_output` of the result.
    """

    @property
    def name(self) -> str:
        """Canonical agent name, also the ``agents.<name>`` config key (``claude``, ``codex``)."""
        ...

    @property
    def aliases(self) -> tuple[str, ...]:
        """Other names ``--agent`` accepts (``claude-code``...)."""
        ...

    @property
    def display_name(self) -> str:
        """Human name shown by setup and doctor (``Claude Code``)."""
        ...

    @property
    def label(self) -> str:
        """How the harness is named inside stored memory text (``Claude Code``)."""
        ...

    @property
    def owners(self) -> tuple[str, ...]:
        """Plugin owner names this integration accepts besides :data:`OWNER_PAXM` (``claude-plugin``)."""
        ...

    @property
    def setup_priority(self) -> int:
        """Order in setup's agent list (lower first)."""
        ...

    def detect(self) -> str | None:
        """Whether the harness is installed on this machine: a short description (a path) or ``None``."""
        ...

    def default_agent_config(self) -> Mapping[str, object]:
        """This agent's default ``agents.<name>`` settings as raw config data (YAML shape)."""
        ...

    def preflight(self, ctx: InstallContext) -> None:
        """Check the harness's native files can be changed; raise ``IntegrationError`` if not.

        Runs before setup saves anything, so a failure leaves every file untouched.
        """
        ...

    def install(self, ctx: InstallContext) -> list[str]:
        """Install paxm's hooks for ``ctx.owner``; idempotent. Returns the lines it reported."""
        ...

    def uninstall(self, ctx: InstallContext) -> list[str]:
        """Remove exactly what :meth:`install` added. Returns the lines it reported."""
        ...

    def check(self, ctx: InstallContext) -> list[Finding]:
        """Doctor's view: hooks installed, pointing at paths that exist, trusted where that applies."""
        ...

    def decode(self, native_event: str, raw: bytes) -> HookEvent:
        """Normalize the harness's payload ``raw`` sent for ``native_event``; never raises."""
        ...

    def hook_output(self, result: HookResult, mode: str) -> str:
        """The exact stdout the harness reads for ``result`` (``""`` prints nothing)."""
        ...


@value_dataclass(frozen=True, slots=True, compiled_init=True)
class PastTurn:
    """One finished turn read from a harness's stored transcript (for ``paxm backfill``).

    :param turn_id: stable id of the turn (same input -> same id, across runs).
    :param session_id: the harness session it belongs to.
    :param started_at: epoch seconds of the turn's prompt (0 when unknown).
    :param event: the turn as the live hook would have produced it (``turn_end`` with messages).
    """

    turn_id: str
    session_id: str
    started_at: float
    event: HookEvent


@runtime_checkable
class SupportsTranscripts(Protocol):
    """An integration that can read the harness's stored sessions (backfill)."""

    def transcript_files(self) -> list[Path]:
        """Every stored session file of this harness on this machine."""
        ...

    def read_turns(self, path: Path) -> Iterator[PastTurn]:
        """The finished turns of one session file; tolerant of partial or corrupt files."""
        ...
