"""The Mem0 Cloud provider (``type: mem0-cloud``) over the managed API (``https://api.mem0.ai``).

Cloud writes are asynchronous: ``POST /v3/memories/add/`` answers with an ``event_id``, the
event is polled at ``GET /v1/event/{id}/`` until it succeeds or fails, and the memory ids are
then looked up with ``POST /v3/memories/`` filtered by the random ``paxm_write_id`` the write
carried in its metadata (listing can lag the event, so the lookup retries with backoff).
Every poll and retry stays inside the caller's deadline.  Auth is ``Authorization: Token <key>``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from paxm_core import (
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderConfig,
    ProviderError,
    SearchQuery,
)
from paxm_provider_mem0.mapping import hit_from_result, item_metadata, result_objects, search_metadata_filters
from paxm_provider_mem0.selfhosted import EVAL_RUN_PREFIX
from paxm_provider_mem0.settings import read_settings
from paxm_provider_mem0.transport import Transport

__all__ = ["Mem0CloudProvider"]

EVENT_POLL_INTERVAL = 0.25
LOOKUP_TRIES = 6
LIST_PATH = "/v3/memories/"


def _lookup_delay(attempt: int) -> float:
    return min(2.0, 0.1 * float(2**attempt))


class Mem0CloudProvider:
    """One Mem0 Cloud entity (user, agent and/or run) as a paxm memory provider."""

    service = "Mem0 Cloud"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        settings = read_settings(name, config, cloud=True)
        self._name = name
        self._settings = settings
        self._target = dict(settings.target)
        self._http = Transport(
            name,
            self.service,
            settings.base_url,
            {"Authorization": f"Token {settings.api_key}"},
            secret=settings.api_key,
            timeout=settings.timeout,
            auth_hint="check the mem0-cloud api_key",
        )

    @property
    def name(self) -> str:
        return self._name

    def capabilities(self) -> frozenset[str]:
        """Batch, delete and attribution always; eval-scope cleanup only for a ``paxm-eval-*`` run."""
        caps = {"put_batch", "delete", "attribution"}
        if self._target.get("run_id", "").startswith(EVAL_RUN_PREFIX):
            caps.add("eval_scope_cleanup")
        return frozenset(caps)

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
        return ", ".join(f"{k}={v}" for k, v in self._target.items()), "exists"

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        deadline.check(f"{self._name} search")
        text = query.text.strip()
        if not text:
            raise ProviderError(self._name, "search", "query text is required")
        body: dict[str, Any] = {"query": text, "filters": self._filters(search_metadata_filters(query))}
        if query.limit > 0:
            body["top_k"] = min(100, max(1, query.limit))
        response = self._http.call("search", "POST", "/v3/memories/search/", deadline, body=body)
        hits: list[MemoryHit] = []
        for obj in result_objects(response):
            hit = hit_from_result(
                self._name,
                obj,
                semantics=self._settings.score_semantics,
                kind_prefix="mem0_cloud",
                source="mem0-cloud",
            )
            if hit is not None:
                hits.append(hit)
        return hits[: query.limit] if query.limit > 0 else hits

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return self._put_one(item, deadline)

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Items are added one by one (each write is its own event); one ref per item, in order."""
        deadline.check(f"{self._name} put")
        for item in items:
            if not item.text.strip():
                raise ProviderError(self._name, "put", "memory text is required")
        return [self._put_one(item, deadline) for item in items]

    def _put_one(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        deadline.check(f"{self._name} put")
        text = item.text.strip()
        if not text:
            raise ProviderError(self._name, "put", "memory text is required")
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
                self._sleep(_lookup_delay(attempt), deadline, "looking up the memory just written")
        raise ProviderError(
            self._name, "put", "Mem0 Cloud reported the write as done but the memory was not found", retryable=True
        )

    def _sleep(self, seconds: float, deadline: Deadline, doing: str) -> None:
        if deadline.remaining() <= seconds:
            raise ProviderError(self._name, "put", f"deadline exceeded while {doing}", retryable=True)
        time.sleep(seconds)

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        if ref.provider and ref.provider != self._name:
            raise ProviderError(self._name, "delete", f"ref belongs to provider {ref.provider!r}")
        if not ref.id.strip():
            raise ProviderError(self._name, "delete", "a memory id is required")
        self._http.call("delete", "DELETE", f"/v1/memories/{quote(ref.id.strip(), safe='')}/", deadline)

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete every memory of this eval run (only a ``paxm-eval-*`` run_id)."""
        run_id = self._target.get("run_id", "")
        if not run_id.startswith(EVAL_RUN_PREFIX):
            raise ProviderError(self._name, "cleanup", f"eval cleanup needs a dedicated {EVAL_RUN_PREFIX}* run_id")
        self._http.call("cleanup", "DELETE", "/v1/memories/", deadline, params=self._target)

    def close(self) -> None:
        self._http.close()
