"""One JSON call to the OpenViking API under a paxm deadline, with its envelope checked.

OpenViking wraps every answer as ``{"status": "ok" | "error", "result", "error": {code,
message}}`` and reports some failures as HTTP 200 with ``status: "error"``, so the envelope is
judged whatever the HTTP status.  Every timeout comes from the deadline; error messages name
the operation and never carry the key.
"""

from __future__ import annotations

import json
from typing import Any

from paxm_core import Deadline, DeadlineExceeded, ProviderError
from paxm_core.http_client import httpx, new_client

__all__ = ["OpenVikingTransport", "error_code", "redact"]

_MAX_DETAIL = 300


def redact(text: str, secret: str) -> str:
    """``text`` with ``secret`` (and its header forms) replaced; whitespace collapsed and shortened."""
    text = " ".join(str(text).split())
    if secret:
        text = text.replace(secret, "<redacted>")
    return text[:_MAX_DETAIL]


class OpenVikingTransport:
    """A small httpx client for one OpenViking base URL."""

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

    def call(
        self,
        op: str,
        method: str,
        path: str,
        deadline: Deadline,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        allow_not_found: bool = False,
    ) -> Any:
        """Send one request; return the envelope's ``result`` (``None`` for an allowed NOT_FOUND)."""
        if self._closed:
            raise ProviderError(self._provider, op, "provider is closed")
        deadline.check(f"openviking {op}")
        timeout = deadline.timeout(cap=None)
        if timeout is None:
            timeout = self._default_timeout
        try:
            resp = self._client.request(
                method, self._base + path, json=body, params=params, timeout=httpx.Timeout(max(timeout, 0.001))
            )
        except httpx.TimeoutException as exc:
            if deadline.expired():
                raise DeadlineExceeded(f"openviking {op}: deadline exceeded") from exc
            raise self._fail(op, f"timed out waiting for OpenViking at {self._base}", retryable=True) from exc
        except httpx.TransportError as exc:
            raise self._fail(
                op, f"cannot reach OpenViking at {self._base}: {type(exc).__name__}", retryable=True
            ) from exc
        try:
            payload = resp.json() if resp.content else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if resp.status_code >= 400:
            if resp.status_code == 404 and allow_not_found and error_code(payload) == "NOT_FOUND":
                return None
            detail = _detail(payload) or resp.text
            if resp.status_code in (401, 403):
                raise self._fail(op, f"authentication failed (HTTP {resp.status_code}); check api_key: {detail}")
            retryable = resp.status_code == 429 or resp.status_code >= 500
            raise self._fail(op, f"HTTP {resp.status_code}: {detail}", retryable=retryable)
        if payload is None and resp.content:
            raise self._fail(op, f"OpenViking returned a body that is not JSON: {resp.text}")
        _check_envelope(payload, lambda message: self._fail(op, message))
        return payload.get("result") if isinstance(payload, dict) else None


def _detail(payload: Any) -> str:
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            code = error.get("code") or ""
            message = error.get("message") or ""
            return f"{code}: {message}".strip(": ") if (code or message) else ""
        for key in ("detail", "message", "error"):
            value = payload.get(key)
            if value:
                return value if isinstance(value, str) else json.dumps(value)
    return ""


def error_code(payload: Any) -> str:
    """The envelope's ``error.code`` (``""`` when none)."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return str(payload["error"].get("code") or "")
    return ""


def _check_envelope(payload: Any, fail: Any) -> None:
    """Raise unless the envelope says ``status: "ok"`` (HTTP 200 with ``status: "error"`` is an error)."""
    if not isinstance(payload, dict):
        raise fail("OpenViking returned no JSON envelope")
    status = str(payload.get("status", "")).lower()
    if status != "ok":
        raise fail(f"OpenViking error: {_detail(payload) or 'status ' + repr(status)}")
