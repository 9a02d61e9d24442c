"""One JSON call to a MemOS API under a paxm deadline, with MemOS's envelope checked.

MemOS answers many failures with HTTP 200 and an error inside the envelope (``code`` not 0/200,
or ``data.status == "failure"``), so the envelope is judged whatever the HTTP status.  The
request, its deadline, the HTTP status and the redaction of the key are
:class:`paxm_core.http_client.JsonTransport`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from paxm_core.http_client import JsonTransport, redact

if TYPE_CHECKING:
    from paxm_core import Deadline

__all__ = ["MemOSTransport", "redact"]


class MemOSTransport(JsonTransport):
    """A small httpx client for one MemOS base URL."""

    def __init__(self, provider: str, base_url: str, headers: Mapping[str, str], secret: str, default_timeout: float):
        super().__init__(provider, base_url, headers, secret, default_timeout, service="MemOS", label="memos")

    def detail(self, payload: Any) -> str:
        return _detail(payload)

    def call(self, op: str, method: str, path: str, deadline: Deadline, body: Any = None) -> Any:
        """Send one request; return the decoded JSON body after checking HTTP status and envelope."""
        resp, payload = self.send(op, method, path, deadline, body)
        self.check_status(op, resp, payload)
        _check_envelope(payload, lambda message: self.fail(op, message))
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
