"""What the self-hosted and the Cloud MemOS providers share: the transport, text checks and batching."""

from __future__ import annotations

from collections.abc import Sequence

from paxm_core import (
    ConfigError,
    Deadline,
    MemoryItem,
    MemoryRef,
    ProviderError,
    SearchQuery,
    sync_attribution,
)
from paxm_provider_memos.transport import MemOSTransport

__all__ = ["MemOSBase", "checked_base_url"]


def checked_base_url(name: str, configured: str, default: str) -> str:
    """``configured`` (else ``default``), refused unless it is an http(s) URL."""
    base_url = (configured or default).strip()
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}", path=f"providers.{name}.base_url")
    return base_url


class MemOSBase:
    """A MemOS provider's name, transport and the checks every search and write starts with.

    Subclasses set ``_label`` (what messages say: ``memos``, ``memos-cloud``), call
    ``super().__init__(name)``, build ``_http`` and define ``put``.
    """

    _label = "memos"
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
