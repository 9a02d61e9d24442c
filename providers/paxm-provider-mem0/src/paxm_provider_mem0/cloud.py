"""The Mem0 Cloud provider (``type: mem0-cloud``): an add is an event, polled until done, then the
memory is looked up by the ``paxm_write_id`` it carried, all within the caller's deadline
(``docs/providers/mem0.md``, Wire).
"""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import quote

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_provider_mem0.base import Mem0Base
from paxm_provider_mem0.mapping import item_metadata, result_objects, search_metadata_filters

__all__ = ["Mem0CloudProvider"]

EVENT_POLL_INTERVAL = 0.25
LOOKUP_TRIES = 6
LIST_PATH = "/v3/memories/"


class Mem0CloudProvider(Mem0Base):
    """One Mem0 Cloud entity (user, agent and/or run) as a paxm memory provider."""

    service = "Mem0 Cloud"
    label = "mem0-cloud"
    _memory_path = "/v1/memories/{}/"
    _memories_path = "/v1/memories/"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name, config, cloud=True)
        key = self._settings.api_key
        self._http = self._transport({"Authorization": f"Token {key}"}, "check the mem0-cloud api_key")

    def _filters(self, metadata: dict[str, str] | None = None) -> dict[str, Any]:
        filters: dict[str, Any] = dict(self._target)
        if metadata:
            filters["metadata"] = dict(metadata)
        return filters

    def _list(self, op: str, filters: dict[str, Any], page_size: int, deadline: Deadline) -> Any:
        return self._http.call(
            op,
            "POST",
            LIST_PATH,
            deadline,
            body={"filters": filters},
            params={"page": "1", "page_size": str(page_size)},
        )

    # -- Provider -------------------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """One cheap authenticated call: list at most one memory of the target."""
        self._list("health", self._filters(), 1, deadline)

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Prove the key works before setup saves (Mem0 creates entities on first write)."""
        self._list("setup check", self._filters(), 1, deadline)
        return self._target_label(), "exists"

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        text = self.required_text("search", query.text, deadline)
        body: dict[str, Any] = {"query": text, "filters": self._filters(search_metadata_filters(query))}
        if query.limit > 0:
            body["top_k"] = min(100, max(1, query.limit))
        response = self._http.call("search", "POST", "/v3/memories/search/", deadline, body=body)
        return self._hits(response, query, kind_prefix="mem0_cloud", source="mem0-cloud")

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """One write is one event (a batch adds its items one by one)."""
        text = self.required_text("put", item.text, deadline)
        write_id = secrets.token_hex(16)
        metadata = item_metadata(item)
        metadata["paxm_write_id"] = write_id
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": text}],
            **self._target,
            "metadata": metadata,
            "infer": self._settings.infer,
        }
        answer = self._http.call("put", "POST", "/v3/memories/add/", deadline, body=body)
        event_id = str(answer.get("event_id") or "").strip() if isinstance(answer, dict) else ""
        if not event_id:
            raise ProviderError(self._name, "put", "Mem0 Cloud accepted the write but returned no event_id")
        self._wait_event(event_id, deadline)
        return self._lookup(write_id, deadline)

    def _wait_event(self, event_id: str, deadline: Deadline) -> None:
        path = f"/v1/event/{quote(event_id, safe='')}/"
        started = time.monotonic()
        while True:
            event = self._http.call("put", "GET", path, deadline)
            status = str(event.get("status") or "").strip().upper() if isinstance(event, dict) else ""
            if status == "SUCCEEDED":
                return
            if status == "FAILED":
                message = str(event.get("message") or "").strip() if isinstance(event, dict) else ""
                raise ProviderError(self._name, "put", f"Mem0 Cloud could not store the memory: {message or 'FAILED'}")
            if time.monotonic() - started >= self._settings.timeout:
                raise ProviderError(
                    self._name, "put", f"Mem0 Cloud event {event_id} still {status or 'pending'}", retryable=True
                )
            self._sleep(EVENT_POLL_INTERVAL, deadline, f"waiting for Mem0 Cloud event {event_id}")

    def _lookup(self, write_id: str, deadline: Deadline) -> MemoryRef:
        filters = self._filters({"paxm_write_id": write_id})
        for attempt in range(LOOKUP_TRIES):
            listed = self._list("put", filters, 100, deadline)
            for obj in result_objects(listed):
                meta = obj.get("metadata")
                memory_id = str(obj.get("id") or "").strip()
                if memory_id and isinstance(meta, dict) and str(meta.get("paxm_write_id", "")) == write_id:
                    return MemoryRef(self._name, memory_id)
            if attempt + 1 < LOOKUP_TRIES:
                self._sleep(min(2.0, 0.1 * float(2**attempt)), deadline, "looking up the memory just written")
        raise ProviderError(
            self._name, "put", "Mem0 Cloud reported the write as done but the memory was not found", retryable=True
        )

    def _sleep(self, seconds: float, deadline: Deadline, doing: str) -> None:
        if deadline.remaining() <= seconds:
            raise ProviderError(self._name, "put", f"deadline exceeded while {doing}", retryable=True)
        time.sleep(seconds)
