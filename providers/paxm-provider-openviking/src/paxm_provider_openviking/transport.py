"""One JSON call to the OpenViking API under a paxm deadline, with its envelope checked.

OpenViking wraps every answer as ``{"status": "ok" | "error", "result", "error": {code,
message}}`` and reports some failures as HTTP 200 with ``status: "error"``, so the envelope is
judged whatever the HTTP status.  The request, its deadline, the HTTP status and the redaction
of the key are :class:`paxm_core.http_client.JsonTransport`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paxm_core.http_client import JsonTransport, redact

if TYPE_CHECKING:
    from paxm_core import Deadline

__all__ = ["OpenVikingTransport", "error_code", "redact"]


class OpenVikingTransport(JsonTransport):
    """A small httpx client for one OpenViking base URL."""

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str], secret: str, default_timeout: float):
        super().__init__(provider, base_url, headers, secret, default_timeout, service="OpenViking", label="openviking")

    def detail(self, payload: Any) -> str:
        return _detail(payload)

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
        resp, payload = self.send(op, method, path, deadline, body, params=params)
        if resp.status_code == 404 and allow_not_found and error_code(payload) == "NOT_FOUND":
            return None
        self.check_status(op, resp, payload)
        _check_envelope(payload, lambda message: self.fail(op, message))
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
