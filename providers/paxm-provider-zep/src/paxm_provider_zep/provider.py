"""The Zep provider (``type: zep``) over the zep-cloud 4.x SDK (``docs/providers/zep.md``)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from paxm_core import Deadline, DeadlineExceeded, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, SearchQuery
from paxm_core.api.errors import ConfigError, ProviderError
from paxm_core.api.provider_config import resolve_secret
from paxm_core.api.timefmt import format_time
from paxm_core.http_client import RemoteProvider, network_error, redact, status_error
from paxm_provider_zep import validate
from paxm_provider_zep.mapping import SCOPES, episode_metadata, hit_from_result

__all__ = ["ZepProvider", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.getzep.com/api/v4"
DEFAULT_TIMEOUT = 30.0
_BACKOFF = (0.2, 0.5)


def _import_sdk() -> Any:
    try:
        from zep_cloud.client import Zep
    except ImportError as exc:  # pragma: no cover - exercised by the packaging test
        raise ConfigError(
            "the Zep provider needs the zep-cloud SDK; install it with: pip install paxm-provider-zep"
        ) from exc
    return Zep


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an SDK ``ApiError`` (``None`` for anything else)."""
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _explain(provider: str, op: str, exc: BaseException, secret: str) -> ProviderError:
    """An SDK failure as a :class:`ProviderError` that never carries the API key."""
    status = status_of(exc)
    if status is not None:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            body = str(body.get("message") or body.get("error") or body.get("detail") or "")
        detail = redact(body if isinstance(body, str) else "", secret, 240)
        return status_error(provider, op, status, detail, service="Zep", auth_hint="check the Zep api_key")
    error = network_error(provider, op, exc, service="Zep")
    if error is not None:
        return error
    return ProviderError(provider, op, f"{type(exc).__name__}: {redact(str(exc), secret, 240)}")


class ZepProvider(RemoteProvider):
    """A Zep user graph or named graph as a paxm memory provider."""

    label = "zep"

    def __init__(self, name: str, config: ProviderConfig) -> None:
        super().__init__(name)
        self._api_key = resolve_secret(config.api_key) or os.environ.get("ZEP_API_KEY", "")
        if not self._api_key:
            raise ConfigError(
                "needs an API key: set api_key (or api_key: env:ZEP_API_KEY, or the ZEP_API_KEY variable)",
                path=f"providers.{name}.api_key",
            )
        self._user_id = config.user_id.strip()
        self._graph_id = config.text("graph_id")
        if bool(self._user_id) == bool(self._graph_id):
            raise ConfigError("set exactly one of user_id or graph_id", path=f"providers.{name}")
        problems = validate(config)
        if problems:
            raise ConfigError("; ".join(problems), path=f"providers.{name}")
        self._scope = config.text("search_scope", "episodes")
        self._max_characters = int(str(config.option("max_characters", 0)))  # a whole number: validated
        self._source_description = config.text("source_description")
        self._timeout = config.timeout or DEFAULT_TIMEOUT
        base_url = (config.base_url or "").strip().rstrip("/") or DEFAULT_BASE_URL
        zep = _import_sdk()
        self._client = zep(api_key=self._api_key, base_url=base_url, timeout=self._timeout, max_retries=0)
        self._graph_uuid: str | None = None
        self._target_kind = ""
        self._lock = threading.Lock()
        self._closed = False

    # -- target resolution --------------------------------------------------------------

    def _call(self, op: str, deadline: Deadline, func: Any, *, ok_statuses: tuple[int, ...] = ()) -> Any:
        """Call ``func(request_options)`` with the remaining time as its timeout (the SDK's own retries are off).

        Retryable failures (429, 5xx, timeouts, connection errors) are retried twice while the
        deadline leaves room for the backoff.  A status in ``ok_statuses`` is re-raised as is, for
        callers that treat it as success (e.g. 409 "already exists").
        """
        if self._closed:
            raise ProviderError(self._name, op, "provider is closed")
        attempt = 0
        while True:
            deadline.check(f"zep {op}")
            timeout = deadline.timeout(cap=self._timeout) or self._timeout
            try:
                return func({"timeout": max(0.05, timeout), "max_retries": 0})
            except DeadlineExceeded:
                raise
            except Exception as exc:
                if status_of(exc) in ok_statuses:
                    raise
                error = _explain(self._name, op, exc, self._api_key)
                if not error.retryable or attempt >= len(_BACKOFF):
                    if deadline.expired():
                        raise ProviderError(self._name, op, "deadline exceeded") from exc
                    raise error from exc
                pause = _BACKOFF[attempt]
                if deadline.remaining() <= pause + 0.05:
                    raise error from exc
                attempt += 1
                time.sleep(pause)

    def _graph(self, deadline: Deadline) -> str:
        """The target's graph UUID, ensuring the user/graph exists on first use (cached)."""
        if self._graph_uuid is not None:
            return self._graph_uuid
        with self._lock:
            if self._graph_uuid is None:
                self._graph_uuid = self._ensure_target(deadline)
            return self._graph_uuid

    def _ensure_target(self, deadline: Deadline) -> str:
        """The graph UUID of the configured user (a user's memories live in its graph) or named graph."""
        what = "user" if self._user_id else "graph"
        api = self._client.user if self._user_id else self._client.graph
        ident = {"user_id": self._user_id} if self._user_id else {"graph_id": self._graph_id}
        create = ident if self._user_id else {"name": self._graph_id}
        found = self._ensure(
            f"ensure {what}",
            deadline,
            lambda o: api.lookup(**ident, request_options=o),
            lambda o: api.create(**create, request_options=o),
        )
        preferred = getattr(found, "graph_uuid", None) if self._user_id else None
        uuid = str(preferred or getattr(found, "uuid_", None) or "")
        if not uuid:
            raise ProviderError(self._name, f"ensure {what}", f"Zep returned a {what} without a uuid")
        return uuid

    def _ensure(self, op: str, deadline: Deadline, lookup: Any, create: Any) -> Any:
        """Look the target up; create it on 404; a 409 from create (made concurrently) is success."""
        try:
            found = self._call(op, deadline, lookup, ok_statuses=(404,))
        except Exception as exc:
            if status_of(exc) != 404:
                raise
            found = None
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

    def ensure_target(self, deadline: Deadline | None = None) -> tuple[str, str]:
        """Resolve the configured user/graph now (setup's set-up step, ``SupportsEnsureTarget``).

        Returns ``("user <id>" | "graph <id>", "created" | "exists")``: what setup shows the user.
        """
        self._graph(deadline or Deadline.after(self._timeout))
        target = f"graph {self._graph_id}" if self._graph_id else f"user {self._user_id}"
        return target, self._target_kind or "exists"

    def eval_target(self) -> str:
        return self._graph_id

    # -- Provider -----------------------------------------------------------------------

    def health(self, deadline: Deadline) -> None:
        """One cheap authenticated call: resolve the target, then read it back."""
        uuid = self._graph(deadline)
        self._call("health", deadline, lambda o: self._client.graph.get(uuid, request_options=o))

    def search(self, query: SearchQuery, deadline: Deadline) -> list[MemoryHit]:
        text = self.required_text("search", query.text, deadline)
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
        """Add the item as a text episode, its id the idempotency key (a retried delivery is stored once)."""
        text = self.required_text("put", item.text, deadline)
        uuid = self._graph(deadline)
        kwargs: dict[str, Any] = {
            "data": text,
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
        return MemoryRef(self._name, episode_uuid)

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        episode = self.own_ref(ref)
        uuid = self._graph(deadline)
        self._call("delete", deadline, lambda o: self._client.graph.episode.delete(uuid, episode, request_options=o))

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete the whole graph, only when it is a dedicated ``paxm-eval-*`` graph."""
        self.eval_only("graph_id")
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
