"""What the self-hosted and the Cloud Mem0 providers share: target, text checks, hits, batching, delete."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from paxm_core import Deadline, MemoryHit, MemoryItem, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_provider_mem0.mapping import hit_from_result, result_objects
from paxm_provider_mem0.settings import read_settings
from paxm_provider_mem0.transport import Transport

__all__ = ["EVAL_RUN_PREFIX", "Mem0Base"]

EVAL_RUN_PREFIX = "paxm-eval-"


class Mem0Base:
    """One Mem0 entity (user, agent and/or run): what both Mem0 APIs do alike.

    Subclasses set ``service`` (the API's name in messages) and where a memory is deleted
    (``_memory_path``, formatted with the quoted id) and where all of a run's memories are
    (``_memories_path``), build ``_http`` with :meth:`_transport` and define ``put``.
    """

    service = "Mem0"
    _memory_path = "/memories/{}"
    _memories_path = "/memories"
    _http: Transport

    def __init__(self, name: str, config: ProviderConfig, *, cloud: bool) -> None:
        self._settings = read_settings(name, config, cloud=cloud)
        self._name = name
        self._target = dict(self._settings.target)

    def _transport(self, headers: dict[str, str], auth_hint: str) -> Transport:
        settings = self._settings
        return Transport(
            self._name,
            self.service,
            settings.base_url,
            headers,
            secret=settings.api_key,
            timeout=settings.timeout,
            auth_hint=auth_hint,
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

    def _target_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._target.items())

    def _query_text(self, query: SearchQuery, deadline: Deadline) -> str:
        deadline.check(f"{self._name} search")
        text = query.text.strip()
        if not text:
            raise ProviderError(self._name, "search", "query text is required")
        return text

    def _hits(self, response: Any, query: SearchQuery, *, kind_prefix: str, source: str) -> list[MemoryHit]:
        hits: list[MemoryHit] = []
        for obj in result_objects(response):
            hit = hit_from_result(
                self._name, obj, semantics=self._settings.score_semantics, kind_prefix=kind_prefix, source=source
            )
            if hit is not None:
                hits.append(hit)
        return hits[: query.limit] if query.limit > 0 else hits

    def _write_text(self, item: MemoryItem, deadline: Deadline) -> str:
        deadline.check(f"{self._name} put")
        text = item.text.strip()
        if not text:
            raise ProviderError(self._name, "put", "memory text is required")
        return text

    def put(self, item: MemoryItem, deadline: Deadline) -> MemoryRef:
        raise NotImplementedError

    def put_batch(self, items: Sequence[MemoryItem], deadline: Deadline) -> list[MemoryRef]:
        """One add per item (neither API adds a batch); one ref per item, in order."""
        deadline.check(f"{self._name} put")
        for item in items:
            if not item.text.strip():
                raise ProviderError(self._name, "put", "memory text is required")
        return [self.put(item, deadline) for item in items]

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        if ref.provider and ref.provider != self._name:
            raise ProviderError(self._name, "delete", f"ref belongs to provider {ref.provider!r}")
        if not ref.id.strip():
            raise ProviderError(self._name, "delete", "a memory id is required")
        self._http.call("delete", "DELETE", self._memory_path.format(quote(ref.id.strip(), safe="")), deadline)

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete every memory of this eval run (only a ``paxm-eval-*`` run_id, so real memories are safe)."""
        run_id = self._target.get("run_id", "")
        if not run_id.startswith(EVAL_RUN_PREFIX):
            raise ProviderError(self._name, "cleanup", f"eval cleanup needs a dedicated {EVAL_RUN_PREFIX}* run_id")
        self._http.call("cleanup", "DELETE", self._memories_path, deadline, params=self._target)

    def close(self) -> None:
        self._http.close()
