"""One SDK call under a paxm deadline: the SDK's own retries are off, and retryable failures are
retried here only while the deadline leaves room; errors never carry the API key.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.http_client import network_error, redact, status_error

T = TypeVar("T")

__all__ = ["call_zep", "status_of"]

_BACKOFF = (0.2, 0.5)


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an SDK ``ApiError`` (``None`` for anything else)."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _detail(exc: BaseException, secret: str) -> str:
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        text = str(body.get("message") or body.get("error") or body.get("detail") or "")
    elif isinstance(body, str):
        text = body
    return redact(text, secret, 240)


def _explain(provider: str, op: str, exc: BaseException, secret: str) -> ProviderError:
    status = status_of(exc)
    if status is not None:
        detail = _detail(exc, secret)
        return status_error(provider, op, status, detail, service="Zep", auth_hint="check the Zep api_key")
    error = network_error(provider, op, exc, service="Zep")
    if error is not None:
        return error
    return ProviderError(provider, op, f"{type(exc).__name__}: {redact(str(exc), secret, 240)}")


def call_zep(
    provider: str,
    op: str,
    deadline: Deadline,
    func: Callable[[dict[str, Any]], T],
    *,
    secret: str = "",
    default_timeout: float = 30.0,
    ok_statuses: tuple[int, ...] = (),
) -> T:
    """Call ``func(request_options)`` with the remaining time as its timeout.

    Retryable failures (429, 5xx, timeouts, connection errors) are retried twice while the
    deadline leaves room for the backoff.  A status in ``ok_statuses`` is re-raised as is, for
    callers that treat it as success (e.g. 409 "already exists").
    """
    attempt = 0
    while True:
        deadline.check(f"zep {op}")
        timeout = deadline.timeout(cap=default_timeout) or default_timeout
        options: dict[str, Any] = {"timeout": max(0.05, timeout), "max_retries": 0}
        try:
            return func(options)
        except DeadlineExceeded:
            raise
        except Exception as exc:
            if status_of(exc) in ok_statuses:
                raise
            error = _explain(provider, op, exc, secret)
            if not error.retryable or attempt >= len(_BACKOFF):
                if deadline.expired():
                    raise ProviderError(provider, op, "deadline exceeded") from exc
                raise error from exc
            pause = _BACKOFF[attempt]
            if deadline.remaining() <= pause + 0.05:
                raise error from exc
            attempt += 1
            time.sleep(pause)
