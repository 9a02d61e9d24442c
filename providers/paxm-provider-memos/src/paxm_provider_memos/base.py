"""What the self-hosted and the Cloud MemOS providers share: the transport, text checks and batching."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from paxm_core import (
    ConfigError,
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderError,
    SearchQuery,
    sync_attribution,
)
from paxm_provider_memos.response import hits_from_response
from paxm_provider_memos.transport import MemOSTransport

__all__ = ["MemOSBase", "checked_base_url"]

#: the most results one MemOS search returns
_MAX_LIMIT = 100


def checked_base_url(name: str, configured: str, default: str) -> str:
    """``configured`` (else ``default``), refused unless it is an http(s) URL."""
    base_url = (configured or default).strip()
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}", path=f"providers.{name}.base_url")
    return base_url


class MemOSBase:
    """A MemOS provider's name, transport and the checks every search and write starts with.

    Subclasses set ``_label`` (what messages say: ``memos``, ``memos-cloud``), ``_source`` (the
    hits' source) and ``_search_path``, call ``super().__init__(name)``, build ``_http`` and
    define ``_search_body`` and ``put``.
    """

    _label = "memos"
    _source = "memos"
    _search_path = "/product/search"
    _http: MemOSTransport

    def __init__(self, name: str) -> None:
        if not name.strip():
            raise ConfigError(f"{self._label} provider name is required")
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    def _query_text(self, query: SearchQuery, deadline: Deadline) -> str:
        deadline.check(f"{self._label} search")
        text = query.text.strip()
        if not text:
            raise ProviderError(self._name, "search", "query text is required")
        return text

    def _search_body(self, text: str, limit: int) -> dict[str, Any]:
        raise NotImplementedError

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        """At most ``query.limit`` hits (10 when unset, never more than MemOS's cap of 100)."""
        text = self._query_text(query, deadline)
        limit = min(_MAX_LIMIT, query.limit) if query.limit > 0 else 10
        payload = self._http.call("search", "POST", self._search_path, deadline, self._search_body(text, limit))
        return hits_from_response(self._name, self._source, payload, limit)

    def _write(self, item: MemoryItem, deadline: Deadline) -> tuple[MemoryItem, str, str]:
        """The item with its attribution synced, its stripped text and a fresh write id."""
        deadline.check(f"{self._label} put")
        text = item.text.strip()
        if not text:
            raise ProviderError(self._name, "put", "memory text is required")
        item = sync_attribution(item)
        import uuid  # here, not at import: uuid imports platform, a cost of the daemon's start

        return item, text, uuid.uuid4().hex

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        raise NotImplementedError

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """One add per item (MemOS may merge messages of one add into a single memory)."""
        deadline.check(f"{self._label} put")
        for item in items:
            if not item.text.strip():
                raise ProviderError(self._name, "put", "memory text is required")
        return [self.put(item, deadline) for item in items]

    def close(self) -> None:
        """Close the HTTP client; later calls fail with "provider is closed"."""
        self._http.close()
