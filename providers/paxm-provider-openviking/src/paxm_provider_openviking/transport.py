"""OpenViking's JSON calls: its ``{status, result, error}`` envelope is judged whatever the HTTP status."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paxm_core.http_client import JsonTransport, httpx

__all__ = ["OpenVikingTransport", "error_code"]


class OpenVikingTransport(JsonTransport):
    """A small httpx client for one OpenViking base URL."""

    detail_keys = ("detail", "message", "error")

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str], secret: str, timeout: float):
        super().__init__(provider, base_url, headers, secret, timeout, service="OpenViking", label="openviking")

    def detail(self, payload: object) -> str:
        """``CODE: message`` of the envelope's ``error`` object, else the usual keys."""
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            code = error.get("code") or ""
            message = error.get("message") or ""
            return f"{code}: {message}".strip(": ") if (code or message) else ""
        return super().detail(payload)

    def missing(self, resp: httpx.Response, payload: object) -> bool:
        """A 404 whose envelope says ``NOT_FOUND`` (not a route the server lacks)."""
        return resp.status_code == 404 and error_code(payload) == "NOT_FOUND"

    def unwrap(self, op: str, payload: Any) -> Any:
        """The envelope's ``result``, unless it says ``status: "error"`` (some failures come as HTTP 200)."""
        if not isinstance(payload, dict):
            raise self.fail(op, "OpenViking returned no JSON envelope")
        status = str(payload.get("status", "")).lower()
        if status != "ok":
            raise self.fail(op, f"OpenViking error: {self.detail(payload) or 'status ' + repr(status)}")
        return payload.get("result")


def error_code(payload: Any) -> str:
    """The envelope's ``error.code`` (``""`` when none)."""
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return str(payload["error"].get("code") or "")
    return ""
