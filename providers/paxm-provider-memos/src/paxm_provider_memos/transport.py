"""MemOS's JSON calls: failures may come as HTTP 200 with an error in the envelope, so it is always judged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from paxm_core.http_client import JsonTransport

__all__ = ["MemOSTransport"]


class MemOSTransport(JsonTransport):
    """A small httpx client for one MemOS base URL."""

    detail_keys = ("message", "detail", "error", "msg")

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str], secret: str, timeout: float):
        super().__init__(provider, base_url, headers, secret, timeout, service="MemOS", label="memos")

    def unwrap(self, op: str, payload: Any) -> Any:
        """The body, unless its ``{code, message, data}`` envelope reports an error."""
        if not isinstance(payload, dict):
            return payload
        code = payload.get("code")
        if code is not None and code not in (0, 200, "0", "200"):
            raise self.fail(op, f"MemOS error code {code}: {self.detail(payload) or 'no message'}")
        data = payload.get("data")
        if isinstance(data, dict) and str(data.get("status", "")).lower() == "failure":
            raise self.fail(op, f"MemOS reported failure: {self.detail(payload) or self.detail(data) or 'no message'}")
        return payload
