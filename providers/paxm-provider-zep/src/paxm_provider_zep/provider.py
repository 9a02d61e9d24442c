"""The Zep provider (``type: zep``) over the zep-cloud 4.x SDK.

v4 addresses users and graphs by UUID, searches one scope per call and has no single batch
call.  The configured target (``user_id`` or ``graph_id``) is resolved to a graph UUID on first
use — created when missing, an existing one is success — and cached for the provider's life.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from paxm_core import (
    ConfigError,
    Deadline,
    MemoryHit,
    MemoryItem,
    MemoryRef,
    ProviderConfig,
    ProviderError,
    SearchQuery,
    format_time,
    resolve_secret,
)
from paxm_provider_zep.calls import call_zep, status_of
from paxm_provider_zep.mapping import SCOPES, episode_metadata, hit_from_result

__all__ = ["ZepProvider", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.getzep.com/api/v4"
DEFAULT_TIMEOUT = 30.0
EVAL_GRAPH_PREFIX = "paxm-eval-"


def _import_sdk() -> Any:
    try:
        from zep_cloud.client import Zep
    except ImportError as exc:  # pragma: no cover - exercised by the packaging test
        raise ConfigError(
            "the Zep provider needs the zep-cloud SDK; install it with: pip install paxm-provider-zep"
        ) from exc
    return Zep


class ZepProvider:
    """A Zep user graph or named graph as a paxm memory provider."""

    def __init__(self, name: str, config: ProviderConfig) -> None:
        if not name.strip():
            raise ConfigError("zep provider name is required")
        self._name = name
        self._api_key = resolve_secret(config.api_key) or os.environ.get("ZEP_API_KEY", "")
        if not self._api_key:
            raise ConfigError(
                "needs an API key: set api_key (or api_key: env:ZEP_API_KEY, or the ZEP_API_KEY variable)",
                path=f"providers.{name}.api_key",
            )
        self._user_id = config.user_id.strip()
        self._graph_id = config.graph_id.strip()
        if bool(self._user_id) == bool(self._graph_id):
            raise ConfigError("set exactly one of user_id or graph_id", path=f"providers.{name}")
        self._scope = (config.search_scope or "episodes").strip()
        if self._scope not in SCOPES:
            raise ConfigError(
                f"unknown search_scope {self._scope!r}; use one of {', '.join(SCOPES)}",
                path=f"providers.{name}.search_scope",
            )
        if config.max_characters < 0:
            raise ConfigError("must not be negative", path=f"providers.{name}.max_characters")
        self._max_characters = config.max_characters
        self._source_description = config.source_description.strip()
        self._timeout = config.timeout or DEFAULT_TIMEOUT
        base_url = (config.base_url or "").strip().rstrip("/") or DEFAULT_BASE_URL
        zep = _import_sdk()
        self._client = zep(api_key=self._api_key, base_url=base_url, timeout=self._timeout, max_retries=0)
        self._graph_uuid: str | None = None
        self._target_kind = ""
        self._lock = threading.Lock()
        self._closed = False

    @property
    def name(self) -> str:
        return self._name

    # -- target resolution --------------------------------------------------------------

    def _call(self, op: str, deadline: Deadline, func: Any, **kw: Any) -> Any:
        if self._closed:
            raise ProviderError(self._name, op, "provider is closed")
        return call_zep(self._name, op, deadline, func, secret=self._api_key, default_timeout=self._timeout, **kw)

    def _graph(self, deadline: Deadline) -> str:
        """The target's graph UUID, ensuring the user/graph exists on first use (cached)."""
        if self._graph_uuid is not None:
            return self._graph_uuid
        with self._lock:
            if self._graph_uuid is None:
                self._graph_uuid = self._ensure_user(deadline) if self._user_id else self._ensure_graph(deadline)
            return self._graph_uuid

    def _lookup(self, op: str, deadline: Deadline, lookup: Any) -> Any | None:
        try:
            return self._call(op, deadline, lookup, ok_statuses=(404,))
        except Exception as exc:
            if status_of(exc) == 404:
                return None
            raise

    def _ensure_user(self, deadline: Deadline) -> str:
        user_id = self._user_id
        user = self._ensure(
            "ensure user",
            deadline,
            lambda o: self._client.user.lookup(user_id=user_id, request_options=o),
            lambda o: self._client.user.create(user_id=user_id, request_options=o),
        )
        # a user's memories live in the user's graph
        return self._uuid_of(user, "ensure user", "user", getattr(user, "graph_uuid", None))

    def _ensure_graph(self, deadline: Deadline) -> str:
        graph_id = self._graph_id
        graph = self._ensure(
            "ensure graph",
            deadline,
            lambda o: self._client.graph.lookup(graph_id=graph_id, request_options=o),
            lambda o: self._client.graph.create(name=graph_id, request_options=o),
        )
        return self._uuid_of(graph, "ensure graph", "graph")

    def _ensure(self, op: str, deadline: Deadline, lookup: Any, create: Any) -> Any:
        """Look the target up; create it on 404; a 409 from create (made concurrently) is success."""
        found = self._lookup(op, deadline, lookup)
        if found is not None:
            self._target_kind = "exists"
            return found
        try:
            created = self._call(op, deadline, create, ok_statuses=(409,))
        except Exception as exc:
            if status_of(exc) != 409:
                raise
            self._target_kind = "exists"
            return self._call(op, deadline, lookup)
        self._target_kind = "created"
        return created

    def _uuid_of(self, obj: Any, op: str, what: str, preferred: Any = None) -> str:
        uuid = str(preferred or getattr(obj, "uuid_", None) or "")
        if not uuid:
            raise ProviderError(self._name, op, f"Zep returned a {what} without a uuid")
        return uuid

    def ensure_target(self, deadline: Deadline | None = None) -> tuple[str, str]:
        """Resolve the configured user/graph now (setup's set-up step, ``SupportsEnsureTarget``).

        Returns ``("user <id>" | "graph <id>", "created" | "exists")``: what setup shows the user.
        """
        self._graph(deadline or Deadline.after(self._timeout))
        target = f"graph {self._graph_id}" if self._graph_id else f"user {self._user_id}"
        return target, self._target_kind or "exists"

    def capabilities(self) -> frozenset[str]:
        """Batch, delete and attribution always; eval-scope cleanup only on a ``paxm-eval-*`` graph."""
        caps = {"put_batch", "delete", "attribution"}
        if self._graph_id.startswith(EVAL_GRAPH_PREFIX):
            caps.add("eval_scope_cleanup")
        return frozenset(caps)

    # -- Provider -----------------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """One cheap authenticated call: resolve the target, then read it back."""
        uuid = self._graph(deadline)
        self._call("health", deadline, lambda o: self._client.graph.get(uuid, request_options=o))

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        deadline.check("zep search")
        text = query.text.strip()
        if not text:
            raise ProviderError(self._name, "search", "query text is required")
        uuid = self._graph(deadline)
        method_name, kind = SCOPES[self._scope]
        if kind == "context":
            return self._search_context(uuid, text, deadline)
        limit = min(50, max(1, query.limit)) if query.limit > 0 else None
        method = getattr(self._client.graph, method_name)

        def run(options: dict[str, Any]) -> Any:
            pager = method(uuid, query=text, page_size=limit, request_options=options)
            # the first page only: iterating the pager would fetch more pages past our limit
            return list(getattr(pager, "items", None) or [])

        items = self._call("search", deadline, run)
        hits = [hit_from_result(self._name, kind, obj, self._max_characters) for obj in items]
        found = [h for h in hits if h is not None]
        return found[:limit] if limit else found

    def _search_context(self, uuid: str, text: str, deadline: Deadline) -> list[MemoryHit]:
        max_chars = self._max_characters or None
        response = self._call(
            "search",
            deadline,
            lambda o: self._client.graph.get_context(uuid, query=text, max_characters=max_chars, request_options=o),
        )
        context = str(getattr(response, "context", None) or "").strip()
        if not context:
            return []
        return [
            MemoryHit(
                provider=self._name,
                id="context",
                text=context,
                relevance=1.0,
                score=1.0,
                raw_score_kind="zep_unscored",
                source="zep:context",
                metadata={"zep_type": "context"},
            )
        ]

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        return self.put_batch([item], deadline)[0]

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """Add each item as a text episode.

        v4 has no one-call batch add (its batch API is a multi-step job), so episodes are added
        one by one; each carries the item id as its idempotency key, so a retried delivery of
        the same episode is not stored twice.
        """
        deadline.check("zep put")
        for item in items:
            if not item.text.strip():
                raise ProviderError(self._name, "put", "memory text is required")
        if not items:
            return []
        uuid = self._graph(deadline)
        refs: list[MemoryRef] = []
        for item in items:
            refs.append(MemoryRef(self._name, self._add_episode(uuid, item, deadline)))
        return refs

    def _add_episode(self, uuid: str, item: MemoryItem, deadline: Deadline) -> str:
        kwargs: dict[str, Any] = {
            "data": item.text.strip(),
            "type": "text",
            "source_description": self._source_description or item.source or "paxm",
        }
        metadata = episode_metadata(item)
        if metadata:
            kwargs["metadata"] = metadata
        if item.created_at is not None:
            kwargs["reference_time"] = format_time(item.created_at)
        if item.id:
            kwargs["idempotency_key"] = f"paxm-{self._name}-{item.id}"[:255]
        result = self._call(
            "put", deadline, lambda o: self._client.graph.episode.add(uuid, request_options=o, **kwargs)
        )
        episode = getattr(result, "episode", None)
        episode_uuid = str(getattr(episode, "uuid_", None) or "")
        if not episode_uuid:
            raise ProviderError(self._name, "put", "Zep did not return an episode uuid")
        return episode_uuid

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        if ref.provider and ref.provider != self._name:
            raise ProviderError(self._name, "delete", f"ref belongs to provider {ref.provider!r}")
        uuid = self._graph(deadline)
        self._call("delete", deadline, lambda o: self._client.graph.episode.delete(uuid, ref.id, request_options=o))

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete the whole graph, only when it is a dedicated ``paxm-eval-*`` graph."""
        if not self._graph_id.startswith(EVAL_GRAPH_PREFIX):
            raise ProviderError(self._name, "cleanup", f"eval cleanup needs a dedicated {EVAL_GRAPH_PREFIX}* graph_id")
        uuid = self._graph(deadline)
        self._call("cleanup", deadline, lambda o: self._client.graph.delete(uuid, request_options=o))
        self._graph_uuid = None

    def close(self) -> None:
        """Close the HTTP client; later calls fail with "provider is closed"."""
        self._closed = True
        client = getattr(getattr(self._client, "_client_wrapper", None), "httpx_client", None)
        inner = getattr(client, "httpx_client", None)
        if inner is not None and hasattr(inner, "close"):
            inner.close()
