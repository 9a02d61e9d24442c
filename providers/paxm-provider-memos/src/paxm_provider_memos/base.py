"""What the self-hosted and the Cloud MemOS providers share: the transport, search and the write's start."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from paxm_core import Deadline, MemoryHit, MemoryItem, SearchQuery
from paxm_core.http_client import JsonTransport, RemoteProvider
from paxm_provider_memos.response import hits_from_response

__all__ = ["MemOSBase", "MemOSTransport"]

#: the most results one MemOS search returns
_MAX_LIMIT = 100


class MemOSTransport(JsonTransport):
    """A small httpx client for one MemOS base URL; failures may come as HTTP 200 with an error
    in the envelope, so it is always judged."""

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


class MemOSBase(RemoteProvider):
    """What both MemOS providers share; a subclass sets ``label``, ``_source`` and ``_search_path``,
    builds ``_http`` and defines ``_search_body`` and ``put``."""

    label = "memos"
    _source = "memos"
    _search_path = "/product/search"
    _http: MemOSTransport

    def _search_body(self, text: str, limit: int) -> dict[str, Any]:
        raise NotImplementedError

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """At most ``query.limit`` hits (10 when unset, never more than MemOS's cap of 100)."""
        text = self.required_text("search", query.text, deadline)
        limit = min(_MAX_LIMIT, query.limit) if query.limit > 0 else 10
        payload = self._http.call("search", "POST", self._search_path, deadline, self._search_body(text, limit))
        return hits_from_response(self._name, self._source, payload, limit)

    def _write(self, item: MemoryItem, deadline: Deadline) -> tuple[str, str]:
        """The item's stripped text and a fresh write id."""
        return self.required_text("put", item.text, deadline), os.urandom(16).hex()
