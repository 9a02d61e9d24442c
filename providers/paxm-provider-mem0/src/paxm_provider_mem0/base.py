"""What the self-hosted and the Cloud Mem0 providers share: reading and checking the config,
the target, hits, delete and cleanup."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from paxm_core import Deadline, MemoryHit, MemoryRef, ProviderConfig, ProviderError, SearchQuery
from paxm_core.api.errors import ConfigError
from paxm_core.api.provider_config import resolve_secret
from paxm_core.http_client import JsonTransport, RemoteProvider
from paxm_provider_mem0 import CLOUD_URL, SELF_HOSTED_URL
from paxm_provider_mem0.mapping import SCOPE_KEYS, SCORE_SEMANTICS, hit_from_result, result_objects

__all__ = ["Mem0Base", "Settings", "problems", "read_settings"]

SELF_HOSTED_TIMEOUT = 30.0
#: Cloud writes are asynchronous (add, then poll the event); upstream allows two minutes.
CLOUD_TIMEOUT = 120.0
SCOPE_PAYLOADS = ("auto", "filters", "top_level")


@dataclass(frozen=True)
class Settings:
    """A validated Mem0 provider config."""

    base_url: str
    api_key: str = field(repr=False)  # never printed, even in a traceback's locals
    target: dict[str, str]
    score_semantics: str
    search_scope_payload: str
    infer: bool
    timeout: float


def _base_url(config: ProviderConfig, default: str) -> str:
    return (config.base_url or "").strip().rstrip("/") or default


def problems(config: ProviderConfig, *, cloud: bool) -> list[str]:
    """Every problem with ``config`` as one clear sentence each (empty when usable)."""
    found: list[str] = []
    base = _base_url(config, CLOUD_URL if cloud else SELF_HOSTED_URL)
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        found.append(f"base_url {base!r} must be an absolute http(s) URL, e.g. {SELF_HOSTED_URL}")
    if not any(getattr(config, key).strip() for key in SCOPE_KEYS):
        found.append("set the memory target: one or more of user_id, agent_id, run_id")
    if config.text("score_semantics", "similarity").lower() not in SCORE_SEMANTICS:
        found.append(f"score_semantics {config.option('score_semantics')!r} is invalid; use similarity or distance")
    if not cloud and config.text("search_scope_payload", "auto").lower() not in SCOPE_PAYLOADS:
        payload = config.option("search_scope_payload")
        found.append(f"search_scope_payload {payload!r} is invalid; use auto, filters or top_level")
    if not isinstance(config.option("infer", False), bool):
        found.append(f"infer {config.option('infer')!r} is invalid; use true or false")
    if cloud and not _api_key(config, cloud=True):
        found.append(
            "Mem0 Cloud needs an API key: set api_key (or api_key: env:MEM0_API_KEY, or the MEM0_API_KEY variable)"
        )
    if config.timeout is not None and config.timeout <= 0:
        found.append("timeout must be positive, e.g. 30s")
    return found


def _api_key(config: ProviderConfig, *, cloud: bool) -> str:
    key = resolve_secret(config.api_key or "")
    # only Cloud falls back on MEM0_API_KEY: a Cloud key must never be sent to a self-hosted server
    if cloud and not key and not (config.api_key or "").strip():
        key = os.environ.get("MEM0_API_KEY", "").strip()  # as the official client does
    return key.strip()


def read_settings(name: str, config: ProviderConfig, *, cloud: bool) -> Settings:
    """Validate ``config`` and return its settings, or raise ``ConfigError`` naming the first problem."""
    if not name.strip():
        raise ConfigError("a mem0 provider needs an instance name")
    found = problems(config, cloud=cloud)
    if found:
        raise ConfigError("; ".join(found), path=f"providers.{name}")
    target = {key: getattr(config, key).strip() for key in SCOPE_KEYS if getattr(config, key).strip()}
    return Settings(
        base_url=_base_url(config, CLOUD_URL if cloud else SELF_HOSTED_URL),
        api_key=_api_key(config, cloud=cloud),
        target=target,
        score_semantics=config.text("score_semantics", "similarity").lower(),
        search_scope_payload=config.text("search_scope_payload", "auto").lower(),
        # paxm stores what was said; Mem0's LLM rewriting is opt-in (costs an LLM call per write)
        infer=bool(config.option("infer")),
        timeout=config.timeout or (CLOUD_TIMEOUT if cloud else SELF_HOSTED_TIMEOUT),
    )


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
