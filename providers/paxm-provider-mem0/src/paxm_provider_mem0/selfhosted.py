"""The self-hosted Mem0 provider (``type: mem0``) over Mem0's REST server (``docs/providers/mem0.md``, Wire)."""

from __future__ import annotations

import threading

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_core.http_client import HttpStatusError
from paxm_provider_mem0.base import Mem0Base
from paxm_provider_mem0.mapping import item_metadata, result_objects, search_metadata_filters

__all__ = ["Mem0Provider", "is_missing_scope_error"]

#: How Mem0 servers say "no entity id was found in filters": 0.1.x and 2.x phrase it differently.
_MISSING_SCOPE_PHRASES = (
    ("at least one of 'user_id', 'agent_id', or 'run_id'", ("must be provided", "must be specified")),
    ("filters must contain at least one of", ("user_id",)),
)


def is_missing_scope_error(error: HttpStatusError) -> bool:
    """Whether a failed ``POST /search`` says the scope ids were not where the server looks for them."""
    if error.status not in (400, 422, 500):
        return False
    detail = error.server_detail.lower()
    return any(lead in detail and any(tail in detail for tail in tails) for lead, tails in _MISSING_SCOPE_PHRASES)


class Mem0Provider(Mem0Base):
    """One Mem0 entity (user, agent and/or run) on a self-hosted Mem0 server."""

    service = "Mem0"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name, config, cloud=False)
        headers: dict[str, str] = {}
        key = self._settings.api_key
        if key.lower().startswith("bearer "):
            headers["Authorization"] = key
        elif key:
            headers["X-API-Key"] = key
        hint = "check the mem0 api_key (sent as X-API-Key)" if key else "the server wants an api_key"
        self._http = self._transport(headers, hint)
        # ``auto`` learns once whether this server wants scope ids inside ``filters`` or top level
        self._payload_lock = threading.Lock()
        self._detected_payload = ""

    # -- Provider -------------------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """List this entity's memories: proves the server, the key and the target (``/openapi.json`` needs no key)."""
        self._http.call("health", "GET", "/memories", deadline, params=self._target)

    def ensure_target(self, deadline: Deadline) -> tuple[str, str]:
        """Prove the key and target before setup saves (Mem0 creates entities on first write: "exists")."""
        self._http.call("setup check", "GET", "/memories", deadline, params=self._target)
        return self._target_label(), "exists"

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        text = self.required_text("search", query.text, deadline)
        configured = self._settings.search_scope_payload
        payload = configured if configured != "auto" else (self._detected_payload or "filters")
        try:
            response = self._search(query, text, payload, deadline)
        except HttpStatusError as exc:
            if configured != "auto" or payload != "filters" or not is_missing_scope_error(exc):
                raise
            response = self._search(query, text, "top_level", deadline)
            payload = "top_level"
        if configured == "auto" and self._detected_payload != payload:
            with self._payload_lock:
                self._detected_payload = payload
        return self._hits(response, query, kind_prefix="mem0", source="mem0")

    def _search(self, query: SearchQuery, text: str, payload: str, deadline: Deadline) -> object:
        body: dict[str, object] = {"query": text}
        if query.limit > 0:
            body["top_k"] = min(100, max(1, query.limit))
        filters: dict[str, str] = search_metadata_filters(query)
        if payload == "top_level":
            body.update(self._target)
        else:
            filters = {**filters, **self._target}
        if filters:
            body["filters"] = filters
        return self._http.call("search", "POST", "/search", deadline, body=body)

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        """One ``POST /memories`` (the REST server has no batch add; a batch adds item by item).

        With ``infer: true`` Mem0 may split a message into several memories; the first id is the
        item's ref, as the router needs exactly one ref per item.
        """
        text = self.required_text("put", item.text, deadline)
        body: dict[str, object] = {
            "messages": [{"role": "user", "content": text}],
            **self._target,
            "metadata": item_metadata(item),
            "infer": self._settings.infer,
        }
        response = self._http.call("put", "POST", "/memories", deadline, body=body)
        refs = [
            MemoryRef(self._name, ref_id)
            for obj in result_objects(response)
            if (ref_id := str(obj.get("id") or obj.get("memory_id") or obj.get("uuid") or "").strip())
        ]
        if not refs:
            hint = " (with infer: true Mem0 may decide there is nothing to remember)" if self._settings.infer else ""
            raise ProviderError(self._name, "put", f"Mem0 stored nothing and returned no memory id{hint}")
        return refs[0]
