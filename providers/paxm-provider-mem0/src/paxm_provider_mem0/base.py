"""What the self-hosted and the Cloud Mem0 providers share: settings, target, hits, delete, cleanup."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from paxm_core import Deadline, MemoryHit, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_core.http_client import JsonTransport, RemoteProvider
from paxm_provider_mem0.mapping import hit_from_result, result_objects
from paxm_provider_mem0.settings import read_settings

__all__ = ["Mem0Base"]


class Mem0Base(RemoteProvider):
    """One Mem0 entity (user, agent and/or run): what both Mem0 APIs do alike; a subclass sets
    ``service``, ``label`` and the memory paths, builds ``_http`` and defines ``put``."""

    service = "Mem0"
    label = "mem0"
    _memory_path = "/memories/{}"
    _memories_path = "/memories"

    def __init__(self, name: str, config: ProviderConfig, *, cloud: bool) -> None:
        self._settings = read_settings(name, config, cloud=cloud)
        super().__init__(name)
        self._target = dict(self._settings.target)

    def _transport(self, headers: dict[str, str], auth_hint: str) -> JsonTransport:
        settings = self._settings
        return JsonTransport(
            self._name,
            settings.base_url,
            headers,
            settings.api_key,
            settings.timeout,
            service=self.service,
            label=self.label,
            auth_hint=auth_hint,
        )

    def eval_target(self) -> str:
        return self._target.get("run_id", "")

    def _target_label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._target.items())

    def _hits(self, response: Any, query: SearchQuery, *, kind_prefix: str, source: str) -> list[MemoryHit]:
        hits: list[MemoryHit] = []
        for obj in result_objects(response):
            hit = hit_from_result(
                self._name, obj, semantics=self._settings.score_semantics, kind_prefix=kind_prefix, source=source
            )
            if hit is not None:
                hits.append(hit)
        return hits[: query.limit] if query.limit > 0 else hits

    def delete(self, ref: MemoryRef, deadline: Deadline) -> None:
        memory_id = self.own_ref(ref).strip()
        if not memory_id:
            raise ProviderError(self._name, "delete", "a memory id is required")
        self._http.call("delete", "DELETE", self._memory_path.format(quote(memory_id, safe="")), deadline)

    def cleanup_eval_scope(self, deadline: Deadline) -> None:
        """Delete every memory of this eval run (only a ``paxm-eval-*`` run_id, so real memories are safe)."""
        self.eval_only("run_id")
        self._http.call("cleanup", "DELETE", self._memories_path, deadline, params=self._target)
