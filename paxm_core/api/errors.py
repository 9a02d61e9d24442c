"""The one error hierarchy of paxm.

The CLI turns any :class:`PaxmError` into ``Error: <message>`` on stderr and exit code 1
(``PAXM_RAISE_ERRORS=1`` shows the traceback instead).  Anything else is a bug.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DeadlineExceeded",
    "IntegrationError",
    "PaxmError",
    "PluginError",
    "ProviderError",
    "ProviderNotInstalled",
    "QueueError",
    "RecallError",
    "UsageError",
    "WriteError",
]


class PaxmError(Exception):
    """Base of every error paxm raises on purpose; its message is shown to the user as is."""


class UsageError(PaxmError):
    """Bad command-line input (empty query, unknown profile...); raised by the CLI and tools."""


class ConfigError(PaxmError):
    """Invalid or missing configuration.

    Raised by config loading/validation; the message names the key path and the fix, e.g.
    ``recall_profiles.passive.providers[0].timeout: must be a positive duration like "250ms"``.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class PluginError(PaxmError):
    """A plugin failed to load or registered something invalid; shown by ``paxm plugins``."""


class ProviderNotInstalled(ConfigError):
    """Config names a provider type no installed plugin registers; the message names the package."""


class DeadlineExceeded(PaxmError):
    """A call ran past its deadline or was cancelled; raised by :class:`~paxm_core.Deadline`."""

    def __init__(self, message: str = "deadline exceeded", *, cancelled: bool = False) -> None:
        self.cancelled = cancelled
        super().__init__(message)


class ProviderError(PaxmError):
    """A memory provider failed an operation.

    Raised by providers (wrapping SDK/HTTP/SQLite errors) and by the router.  ``provider`` is
    the instance name, ``op`` the operation (``search``, ``put``, ``health`` ...).  The message
    never contains credentials.
    """

    def __init__(self, provider: str, op: str, message: str, *, retryable: bool = False) -> None:
        self.provider = provider
        self.op = op
        self.detail = message
        self.retryable = retryable
        super().__init__(f"{provider} {op}: {message}" if provider else f"{op}: {message}")


class _PartialResult(PaxmError):
    def __init__(self, message: str, result: Any = None) -> None:
        self.result = result
        super().__init__(message)


class RecallError(_PartialResult):
    """A required provider failed during recall; ``result`` carries the partial RecallResult."""


class WriteError(_PartialResult):
    """A required provider failed during a write; ``result`` carries the partial RememberResult."""


class QueueError(PaxmError):
    """The capture queue rejected an event or found corrupt data (checksum mismatch...)."""


class IntegrationError(PaxmError):
    """Installing or removing a harness integration failed; nothing was half-written."""
