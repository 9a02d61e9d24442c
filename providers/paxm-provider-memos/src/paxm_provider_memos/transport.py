"""One JSON call to a MemOS API under a paxm deadline, with MemOS's envelope checked.

MemOS answers many failures with HTTP 200 and an error inside the envelope (``code`` not 0/200,
or ``data.status == "failure"``), so the envelope is judged whatever the HTTP status.  Every
timeout comes from the deadline; error messages name the operation and never carry the key.
"""

from __future__ import annotations

import json
from typing import Any

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.http_client import httpx, new_client

__all__ = ["MemOSTransport", "redact"]

_MAX_DETAIL = 300


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` (and its header forms) replaced; whitespace collapsed and shortened."""
    text = " ".join(str(text).split())
    if secret:
        text = text.replace(secret, "<redacted>")
    return text[:_MAX_DETAIL]


class MemOSTransport:
    """A small httpx client for one MemOS base URL."""

    def __init__(self, provider: str, base_url: str, headers: dict[str, str], secret: str, default_timeout: float):
        self._provider = provider
        self._base = base_url.rstrip("/")
        self._secret = secret
        self._default_timeout = default_timeout
        # trust_env=False: a proxy from the environment must not see (or swallow) memory traffic
        self._client = new_client(self._base, headers={"Accept": "application/json", **headers}, trust_env=False)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client.close()

    def _fail(self, op: str, message: str, *, retryable: bool = False) -> ProviderError:
        return ProviderError(self._provider, op, redact(message, self._secret), retryable=retryable)

    def call(self, op: str, method: str, path: str, deadline: Deadline, body: Any = None) -> Any:
        """Send one request; return the decoded JSON body after checking HTTP status and envelope."""
        if self._closed:
            raise ProviderError(self._provider, op, "provider is closed")
        deadline.check(f"memos {op}")
        timeout = deadline.timeout(cap=None)
        if timeout is None:
            timeout = self._default_timeout
        try:
            resp = self._client.request(
                method, self._base + path, json=body, timeout=httpx.Timeout(max(timeout, 0.001))
            )
        except httpx.TimeoutException as exc:
            if deadline.expired():
                raise DeadlineExceeded(f"memos {op}: deadline exceeded") from exc
            raise self._fail(op, f"timed out waiting for MemOS at {self._base}", retryable=True) from exc
        except httpx.TransportError as exc:
            raise self._fail(op, f"cannot reach MemOS at {self._base}: {type(exc).__name__}", retryable=True) from exc
        try:
            payload = resp.json() if resp.content else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if resp.status_code >= 400:
            detail = _detail(payload) or resp.text
            if resp.status_code in (401, 403):
                raise self._fail(op, f"authentication failed (HTTP {resp.status_code}); check api_key: {detail}")
            retryable = resp.status_code == 429 or resp.status_code >= 500
            raise self._fail(op, f"HTTP {resp.status_code}: {detail}", retryable=retryable)
        if payload is None and resp.content:
            raise self._fail(op, f"MemOS returned a body that is not JSON: {resp.text}")
        _check_envelope(payload, lambda message: self._fail(op, message))
        return payload


def _detail(payload: Any) -> str:
    if isinstance(payload, dict):
        for key in ("message", "detail", "error", "msg"):
            value = payload.get(key)
            if value:
                return value if isinstance(value, str) else json.dumps(value)
    return ""


def _check_envelope(payload: Any, fail: Any) -> None:
    """Raise when the ``{code, message, data}`` envelope reports an error (even on HTTP 200)."""
    if not isinstance(payload, dict):
        return
    code = payload.get("code")
    if code is not None and code not in (0, 200, "0", "200"):
        raise fail(f"MemOS error code {code}: {_detail(payload) or 'no message'}")
    data = payload.get("data")
    if isinstance(data, dict) and str(data.get("status", "")).lower() == "failure":
        raise fail(f"MemOS reported failure: {_detail(payload) or _detail(data) or 'no message'}")
