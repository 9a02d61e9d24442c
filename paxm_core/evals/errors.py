"""Errors of ``paxm eval``: the CLI prints ``Error: <message>`` and exits 1."""

from __future__ import annotations

from paxm_core.api.errors import PaxmError, UsageError

__all__ = ["EvalFileError", "GateFailed"]


class EvalFileError(UsageError):
    """A suite, budget or saved result is unreadable or invalid; the message names the file and JSON path."""


class GateFailed(PaxmError):
    """The ``--gate`` failed; raised after the report is printed."""
