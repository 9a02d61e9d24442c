"""Run one SDK call under a paxm deadline and map its failures to clear ``ProviderError``s.

The Fern-generated client retries 408/409/429/5xx with sleeps of its own; we turn that off
(``max_retries=0``) and retry here only while the deadline leaves room, so a call never runs
past the time the router gave it.  Error messages name the operation and never include the
API key.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from paxm_core import Deadline, DeadlineExceeded, ProviderError

T = TypeVar("T")

__all__ = ["call_zep", "status_of"]

_RETRYABLE = {408, 429, 500, 502, 503, 504}
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
    text = " ".join(text.split())[:240]
    if secret:
        text = text.replace(secret, "<redacted>")
    return text


def _explain(provider: str, op: str, exc: BaseException, secret: str) -> ProviderError:
    import httpx

    status = status_of(exc)
    detail = _detail(exc, secret)
    suffix = f": {detail}" if detail else ""
    if status in (401, 403):
        return ProviderError(provider, op, f"authentication failed (HTTP {status}); check the Zep api_key{suffix}")
    if status == 404:
        return ProviderError(provider, op, f"not found (HTTP 404){suffix}")
    if status == 409:
        return ProviderError(provider, op, f"conflict (HTTP 409){suffix}")
    if status == 429:
        return ProviderError(provider, op, f"rate limited by Zep (HTTP 429){suffix}", retryable=True)
    if status is not None and status >= 500:
        return ProviderError(provider, op, f"Zep server error (HTTP {status}){suffix}", retryable=True)
    if status is not None:
        return ProviderError(provider, op, f"HTTP {status}{suffix}")
    if isinstance(exc, httpx.TimeoutException):
        return ProviderError(provider, op, "timed out waiting for Zep", retryable=True)
    if isinstance(exc, httpx.TransportError):
        return ProviderError(provider, op, f"cannot reach Zep: {type(exc).__name__}", retryable=True)
    message = str(exc).replace(secret, "<redacted>") if secret else str(exc)
    return ProviderError(provider, op, f"{type(exc).__name__}: {message[:240]}")


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
