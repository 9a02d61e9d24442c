"""Helpers the command modules share: JSON output, the ``--json`` flag, durations, hooks, the daemon."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from paxm_core.api.errors import PaxmError

if TYPE_CHECKING:
    from paxm_core.api.integration import InstallContext
    from paxm_core.config.model import Config

__all__ = ["echo_json", "install_context", "json_flag", "parse_seconds", "tell_daemon"]


def json_flag(help: str = "Print the result as JSON.") -> Callable[[Any], Any]:
    """The ``--json`` flag, passed as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def echo_json(value: object, *, ascii: bool = False) -> None:
    """Print ``value`` as indented JSON."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=ascii))


def parse_seconds(value: str, flag: str, *, positive: bool = False) -> float:
    """A duration flag's value in seconds; a bad (or, with ``positive``, non-positive) one is a usage error."""
    from paxm_core.api.errors import UsageError
    from paxm_core.duration import parse_duration

    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None
    if positive and seconds <= 0:
        raise UsageError(f"{flag} must be positive")
    return seconds


def install_context(config: Config, name: str, echo: Callable[[str], None] | None = None) -> InstallContext:
    """The context an integration's hooks for agent ``name`` are installed, removed or checked with."""
    from paxm_core.api.integration import InstallContext
    from paxm_core.config.model import OWNER_PAXM

    agent = config.agents.get(name)
    owner = (agent.integration.owner if agent is not None else "") or OWNER_PAXM
    return InstallContext(config=config, owner=owner, echo=echo or (lambda line: None))


def tell_daemon(config_path: Path, action: str) -> str:
    """Send the running hook daemon ``flush`` or ``shutdown``; the error as a warning, ``""`` when done."""
    from paxm_core.passive.control import send_control

    try:
        send_control(config_path, action)
    except PaxmError as exc:
        return str(exc)
    return ""
